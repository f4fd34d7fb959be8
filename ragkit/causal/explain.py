"""Answers for causal questions (causal-chain design, sections 6 and 7): the Vietnamese sections
"Nguyên nhân chính", "Yếu tố bổ trợ", "Điều kiện/ngoại lệ", "Nguồn trích dẫn", a
deterministic template, the LLM prompt, and the anti-hallucination check."""

from __future__ import annotations

import re
import unicodedata

from .chains import Chain
from .kg import EvidenceKG

SECTIONS = ("Nguyên nhân chính", "Yếu tố bổ trợ", "Điều kiện/ngoại lệ", "Nguồn trích dẫn")
RELATION_VI = {"increases": "làm tăng", "decreases": "làm giảm", "enables": "tạo điều kiện cho",
               "contributes_to": "góp phần vào", "precursor_of": "là tiền chất của",
               "modulates": "điều chỉnh", "drives": "thúc đẩy", "includes": "kéo theo",
               "strengthens": "làm mạnh thêm"}
_NEGATIVE = {"decreases"}

SYSTEM_VI = ("Bạn giải thích cơ chế hình thành PM2.5. CHỈ dùng các chuỗi nhân quả và bằng chứng "
             "được cung cấp; không thêm nguyên nhân mới, không thêm con số, không thêm nguồn. "
             "Trả lời bằng tiếng Việt với đúng bốn mục: " + ", ".join(f"'{s}'" for s in SECTIONS) + ".")


def direction(chain: Chain) -> int:
    """+1 when the chain as a whole raises PM2.5, -1 when it lowers it."""
    sign = 1
    for edge in chain.edges:
        if edge["relation"] in _NEGATIVE:
            sign = -sign
    return sign


def _condition_text(c: dict) -> str:
    return f"{c['variable']} {c['op']} {c['value']}{(' ' + c['unit']) if c.get('unit') else ''}"


def sources(chains: list[Chain], factors: list[dict], limit: int = 5) -> list[str]:
    """Distinct DOIs/URLs in chain order, then factors (at most ``limit``)."""
    out: list[str] = []
    evidence = [ev for c in chains for e in c.edges for ev in e["evidence"]] + \
        [ev for f in factors for ev in f["evidence"]]
    for ev in evidence:
        ref = f"doi:{ev['source_doi']}" if ev.get("source_doi") else ev.get("source_url", "")
        if ref and ref not in out:
            out.append(ref)
    return out[:limit]


def template_answer(kg: EvidenceKG, chains: list[Chain], factors: list[dict],
                    uncertainties: list[str]) -> str:
    """The deterministic answer: every statement comes from a chain, a factor or a check."""
    refs = sources(chains, factors)
    number = {r: i + 1 for i, r in enumerate(refs)}

    def cite(edge) -> str:
        ids = []
        for ev in edge["evidence"]:
            ref = f"doi:{ev['source_doi']}" if ev.get("source_doi") else ev.get("source_url", "")
            if ref in number and number[ref] not in ids:
                ids.append(number[ref])
        return "".join(f"[{i}]" for i in ids)

    lines = [f"**{SECTIONS[0]}**"]
    if not chains:
        lines.append("- Đồ thị tri thức không có chuỗi nhân quả đủ tin cậy cho câu hỏi này.")
    for i, chain in enumerate(chains, 1):
        steps = [f"{kg.label(e['source'])} {RELATION_VI.get(e['relation'], e['relation'])} "
                 f"{kg.label(e['target'])} {cite(e)}" for e in chain.edges]
        effect = "tăng" if direction(chain) > 0 else "giảm"
        lines.append(f"{i}) " + "; ".join(steps) + f" → PM2.5 {effect}.")
    lines.append(f"**{SECTIONS[1]}**")
    lines += [f"- {f['label']} {RELATION_VI.get(f['relation'], f['relation'])} PM2.5 "
              f"(độ tin cậy {f['confidence']}) {cite(f)}" for f in factors] or ["- Không có."]
    lines.append(f"**{SECTIONS[2]}**")
    lines += [f"- {u}" for u in uncertainties] or ["- Các điều kiện của chuỗi đều đã được kiểm tra."]
    lines.append(f"**{SECTIONS[3]}**")
    lines += [f"[{number[r]}] {r}" for r in refs] or ["- Không có."]
    return "\n".join(lines)


def prompt_messages(question: str, kg: EvidenceKG, chains: list[Chain], uncertainties: list[str]) -> list[dict]:
    """The design's three input blocks: question, chains with evidence, uncertainties."""
    blocks = []
    for i, chain in enumerate(chains, 1):
        steps = []
        for e in chain.edges:
            quote = e["evidence"][0]
            ref = quote.get("source_doi") or quote.get("source_url")
            steps.append(f"  - {kg.label(e['source'])} --{e['relation']}--> {kg.label(e['target'])}: "
                         f"{e.get('mechanism', '')} (nguồn: {ref})")
        blocks.append(f"Chuỗi {i}:\n" + "\n".join(steps))
    user = (f"CÂU HỎI: {question}\n\nCHUỖI NHÂN QUẢ:\n" + "\n".join(blocks) +
            "\n\nĐIỀU KIỆN CHƯA KIỂM TRA ĐƯỢC:\n" + ("\n".join(f"- {u}" for u in uncertainties) or "- (không)"))
    return [{"role": "system", "content": SYSTEM_VI}, {"role": "user", "content": user}]


def _allowed_numbers(chains: list[Chain], factors: list[dict], uncertainties: list[str]) -> set[str]:
    text = " ".join([str(e) for c in chains for e in c.edges] + [str(f) for f in factors] + uncertainties)
    return set(re.findall(r"\d+(?:[.,]\d+)?", text))


def hallucinations(answer: str, kg: EvidenceKG, chains: list[Chain], factors: list[dict],
                   uncertainties: list[str], question: str = "") -> list[str]:
    """What the answer says that the selected chains do not: a cause (a KG node that is in
    no selected chain or factor), a number, or a source. Empty means the answer passes.

    Names are compared with their diacritics ("mưa" is not "mùa"); the uncertainty lines,
    which the answer may repeat, and the question's own words are not counted."""
    from .chains import find_names, name_index

    problems = []
    allowed_nodes = {n for c in chains for n in c.nodes} | {f["factor"] for f in factors} | {"pm25"}
    text = unicodedata.normalize("NFC", answer.lower())
    for line in uncertainties:
        text = text.replace(unicodedata.normalize("NFC", line.lower()), " ")
    raw, _ = name_index(kg)
    asked = {node for _, _, node in find_names(unicodedata.normalize("NFC", question.lower()), raw)}
    for _, _, node in find_names(text, raw):
        if node not in allowed_nodes and node not in asked:
            problems.append(f"cause not in the selected chains: {kg.label(node)}")
    numbers = set(re.findall(r"\d+(?:[.,]\d+)?", answer)) - _allowed_numbers(chains, factors, uncertainties)
    numbers -= {str(i) for i in range(0, 10)} | set(re.findall(r"\d+", question))  # list numbering
    numbers -= {"2.5", "2,5", "25"}                                                 # PM2.5 itself
    problems += [f"number not in the evidence: {n}" for n in sorted(numbers)]
    refs = set(sources(chains, factors, limit=1000))
    for found in re.findall(r"(?:doi:\s*|doi\.org/)(10\.\S+?)(?=[\s)\],;]|$)", answer, re.IGNORECASE):
        if f"doi:{found.rstrip('.')}" not in refs:
            problems.append(f"source not in the evidence: {found}")
    for url in re.findall(r"https?://\S+", answer):
        url = url.rstrip(".,;)]")
        if "doi.org/" not in url and url not in refs:
            problems.append(f"source not in the evidence: {url}")
    return sorted(set(problems))
