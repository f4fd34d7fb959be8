"""Prompts (lexical RAG design, section 6): a Vietnamese system instruction, and a user turn with the
sections NGỮ CẢNH (context), SƯỜN TRÍCH XUẤT (extracted outline) and YÊU CẦU (requirements).
The chat template (ChatML for Qwen and SmolLM2) is applied by the model layer."""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from ..text import normalize

CHUNK_SEPARATOR = "\n\n---\n\n"

SYSTEM_VI = (
    "Bạn là trợ lý kỹ thuật. CHỈ dùng thông tin trong NGỮ CẢNH, không thêm kiến thức ngoài. "
    "Không nêu suy nghĩ trung gian. Luôn trả lời bằng tiếng Việt, ngắn gọn, đúng trọng tâm. "
    "Nếu hỏi 'các bước', liệt kê đầy đủ 1), 2), 3)... "
    "Nếu NGỮ CẢNH không đủ để trả lời, hãy nói rõ: 'Không đủ thông tin trong tài liệu.'"
)

USER_TEMPLATE_VI = (
    "NGỮ CẢNH:\n{context}\n\n"
    "SƯỜN TRÍCH XUẤT:\n{outline}\n\n"
    "YÊU CẦU:\n"
    "- Câu hỏi: {question}\n"
    "- Chỉ dùng thông tin trong ngữ cảnh\n"
    "- Không thêm kiến thức ngoài\n"
    "- Trả lời bằng tiếng Việt"
)

REASK_VI = ("Câu trả lời trên đang viết bằng tiếng Anh. Hãy viết lại toàn bộ câu trả lời bằng "
            "tiếng Việt, giữ nguyên nội dung và chỉ dựa trên NGỮ CẢNH.")

NO_OUTLINE = "(không có)"

# "Bước 3: Bật trục chính" (accents optional, list markers allowed).
_STEP = re.compile(r"^\s*(?:[-*+]\s*)?(?:bước|buoc)\s+(\d+)\s*[:.)-]?\s*(.+)$", re.IGNORECASE)


def format_chunk(number: int, title: str, text: str) -> str:
    """A context chunk with the number the answer cites it by."""
    head = f"[{number}] {title}".rstrip()
    return f"{head}\n{text.strip()}"


def extract_outline(texts: Sequence[str], limit: int = 20) -> list[str]:
    """The "Bước N: ..." lines of the chunks, in chunk order, duplicates dropped (§2: MMR
    stage "extract step outline")."""
    outline, seen = [], set()
    for text in texts:
        for line in unicodedata.normalize("NFC", text).splitlines():
            match = _STEP.match(line)
            if not match:
                continue
            step = f"Bước {match.group(1)}: {match.group(2).strip()}"
            key = normalize(step)
            if key not in seen:
                seen.add(key)
                outline.append(step)
                if len(outline) >= limit:
                    return outline
    return outline


def lexical_messages(question: str, context: str, outline: Sequence[str]) -> list[dict]:
    """The design's two-turn prompt for the lexical pipeline."""
    user = USER_TEMPLATE_VI.format(context=context or "(trống)",
                                   outline="\n".join(outline) if outline else NO_OUTLINE,
                                   question=question.strip())
    return [{"role": "system", "content": SYSTEM_VI}, {"role": "user", "content": user}]
