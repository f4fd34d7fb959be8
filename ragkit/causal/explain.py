"""Answers for causal questions: the Vietnamese sections
"Nguyên nhân chính", "Yếu tố bổ trợ", "Điều kiện/ngoại lệ", "Nguồn trích dẫn" (and
"Yếu tố ngược chiều" when the question asks a direction that some chains go against), a
deterministic template, the LLM prompt, and the anti-hallucination check.

The answer is Markdown: each section is a ``###`` heading after a blank line, so it never
runs on at the end of the list above it."""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from .chains import Chain, match_names, question_words
from .direction import AskedDirection
from .kg import EvidenceKG
from .records import ChainMeasured, Factor, SourceEvidence

SECTIONS = ("Nguyên nhân chính", "Yếu tố bổ trợ", "Điều kiện/ngoại lệ", "Nguồn trích dẫn")
OPPOSING_SECTION = "Yếu tố ngược chiều"
RELATION_VI = {"increases": "làm tăng", "decreases": "làm giảm", "enables": "tạo điều kiện cho",
               "contributes_to": "góp phần vào", "precursor_of": "là tiền chất của",
               "modulates": "điều chỉnh", "drives": "thúc đẩy", "includes": "kéo theo",
               "strengthens": "làm mạnh thêm"}
SYSTEM_VI = ("Bạn giải thích cơ chế hình thành PM2.5. CHỈ dùng các chuỗi nhân quả và bằng chứng "
             "được cung cấp; không thêm nguyên nhân mới, không thêm con số, không thêm nguồn. "
             "Trả lời bằng tiếng Việt với bốn mục: " + ", ".join(f"'{s}'" for s in SECTIONS) +
             f", và mục '{OPPOSING_SECTION}' nếu có chuỗi ngược chiều. Mỗi mục mở đầu bằng một "
             "dòng trống rồi một tiêu đề Markdown '### '. Sau mỗi câu hoặc mỗi dòng, ghi số nguồn "
             "của nó trong ngoặc vuông như [1], lấy từ mục NGUỒN; mục 'Nguồn trích dẫn' liệt kê "
             "các nguồn đã dùng dạng '- [n] nguồn'.")


def direction(chain: Chain) -> int:
    """The chain's net direction: +1 when its start rising raises PM2.5, -1 when it lowers
    it, 0 when an edge says no direction."""
    return chain.direction


def section(title: str, lines: list[str]) -> list[str]:
    """A Markdown section: a blank line, the heading, a blank line, its lines."""
    return ["", f"### {title}", "", *lines]


_EFFECT_VI = {1: "PM2.5 tăng", -1: "PM2.5 giảm", 0: "ảnh hưởng tới PM2.5 (chưa rõ chiều)"}


def effect_text(kg: EvidenceKG, chain: Chain, asked: AskedDirection) -> str:
    """"→ PM2.5 giảm." and, when the question says the start is low ("gió yếu"), how the
    chain reads then: "Vậy khi Tốc độ gió giảm, PM2.5 tăng." """
    text = f"→ {_EFFECT_VI[chain.direction]}."
    start = chain.nodes[0]
    if asked.level(start) < 0 and chain.direction:
        text += f" Vậy khi {kg.label(start)} giảm, {_EFFECT_VI[asked.effect(start, chain.direction)]}."
    return text


def _condition_text(c: dict) -> str:
    return f"{c['variable']} {c['op']} {c['value']}{(' ' + c['unit']) if c.get('unit') else ''}"


def _ref(ev: SourceEvidence) -> str:
    return f"doi:{ev['source_doi']}" if ev.get("source_doi") else ev.get("source_url", "")


def source_evidence(chains: list[Chain], factors: list[Factor], opposing: Sequence[Chain] = ()):
    """(reference, evidence item, what it backs, stage) for every evidence item in the
    answer's reading order: chains, factors, opposing chains."""
    for c in chains:
        for e in c.edges:
            for ev in e["evidence"]:
                yield _ref(ev), ev, f"{e['source']}->{e['target']}", "chain"
    for f in factors:
        for ev in f["evidence"]:
            yield _ref(ev), ev, f"{f['factor']}->pm25", "factor"
    for c in opposing:
        for e in c.edges:
            for ev in e["evidence"]:
                yield _ref(ev), ev, f"{e['source']}->{e['target']}", "opposing"


def sources(chains: list[Chain], factors: list[Factor], limit: int | None = None,
            opposing: Sequence[Chain] = ()) -> list[str]:
    """Distinct DOIs/URLs in the answer's reading order: chains, factors, opposing chains
    (all of them, or at most ``limit``); source ``[n]`` is the n-th."""
    out = list(dict.fromkeys(ref for ref, *_ in source_evidence(chains, factors, opposing) if ref))
    return out if limit is None else out[:limit]


def template_answer(kg: EvidenceKG, chains: list[Chain], factors: list[Factor],
                    uncertainties: list[str], opposing: Sequence[Chain] = (),
                    asked: AskedDirection | None = None) -> str:
    """The deterministic answer: every statement comes from a chain, a factor or a check,
    and every statement cites its sources."""
    asked = asked or AskedDirection()
    refs = sources(chains, factors, opposing=opposing)
    number = {r: i + 1 for i, r in enumerate(refs)}

    def cite(edge) -> str:
        ids = []
        for ev in edge["evidence"]:
            ref = _ref(ev)
            if ref in number and number[ref] not in ids:
                ids.append(number[ref])
        return "".join(f" [{i}]" for i in ids)

    def chain_line(chain: Chain) -> str:
        steps = [f"{kg.label(e['source'])} {RELATION_VI.get(e['relation'], e['relation'])} "
                 f"{kg.label(e['target'])}{cite(e)}" for e in chain.edges]
        return "; ".join(steps) + " " + effect_text(kg, chain, asked)

    main = [f"{i}) {chain_line(c)}" for i, c in enumerate(chains, 1)] or \
        ["- Đồ thị tri thức không có chuỗi nhân quả đủ tin cậy cho câu hỏi này."]
    lines = section(SECTIONS[0], main)[1:]
    lines += section(SECTIONS[1], [f"- {f['label']} {RELATION_VI.get(f['relation'], f['relation'])} PM2.5 "
                                   f"(độ tin cậy {f['confidence']}){cite(f)}" for f in factors] or ["- Không có."])
    if opposing:
        lines += section(OPPOSING_SECTION, [f"- {chain_line(c)}" for c in opposing])
    lines += section(SECTIONS[2], [f"- {u}" for u in uncertainties] or
                     ["- Các điều kiện của chuỗi đều đã được kiểm tra."])
    lines += section(SECTIONS[3], [f"- [{number[r]}] {r}" for r in refs] or ["- Không có."])
    return "\n".join(lines)


def _chain_blocks(kg: EvidenceKG, chains: list[Chain], name: str, number: dict[str, int]) -> list[str]:
    blocks = []
    for i, chain in enumerate(chains, 1):
        steps = []
        for e in chain.edges:
            cited = "".join(f"[{n}]" for n in dict.fromkeys(number[_ref(ev)] for ev in e["evidence"]
                                                             if _ref(ev) in number))
            steps.append(f"  - {kg.label(e['source'])} {RELATION_VI.get(e['relation'], e['relation'])} "
                         f"{kg.label(e['target'])}: {e.get('mechanism') or ''} {cited}".rstrip())
        blocks.append(f"{name} {i} ({_EFFECT_VI[chain.direction]}):\n" + "\n".join(steps))
    return blocks


def prompt_messages(question: str, kg: EvidenceKG, chains: list[Chain], uncertainties: list[str],
                    opposing: Sequence[Chain] = (), factors: Sequence[Factor] = (),
                    empirical: Sequence[ChainMeasured] = (), numbered: Sequence[str] = ()) -> list[dict]:
    """The prompt's input blocks: the question, the chains with their mechanisms, the
    supporting factors, the opposing chains (when some go against the asked direction), the
    open conditions, what the measured series say of each chain, and the numbered sources
    every line cites, so the model has each of its four sections' material and cites it as
    the template answer does. ``numbered``: the sources of everything selected, in order,
    when the prompt shows only part of it (a small model's window): a source keeps its number
    in the answer's citations."""
    refs = sources(chains, list(factors), opposing=list(opposing))
    order = {r: i for i, r in enumerate(numbered or refs, 1)}
    number = {r: order[r] for r in refs if r in order}
    user = f"CÂU HỎI: {question}\n\nCHUỖI NHÂN QUẢ:\n" + "\n".join(_chain_blocks(kg, chains, "Chuỗi", number))
    user += "\n\nYẾU TỐ BỔ TRỢ:\n" + ("\n".join(
        f"- {f['label']} {RELATION_VI.get(f['relation'], f['relation'])} PM2.5 "
        + "".join(f"[{n}]" for n in dict.fromkeys(number[_ref(ev)] for ev in f["evidence"] if _ref(ev) in number))
        for f in factors) or "- (không)")
    if opposing:
        user += "\n\nCHUỖI NGƯỢC CHIỀU:\n" + "\n".join(_chain_blocks(kg, list(opposing), "Ngược chiều", number))
    user += "\n\nĐIỀU KIỆN CHƯA KIỂM TRA ĐƯỢC:\n" + ("\n".join(f"- {u}" for u in uncertainties) or "- (không)")
    if empirical:
        user += "\n\nSỐ LIỆU ĐO:\n" + "\n".join(
            f"- Chuỗi {e['chain']}: " + ("; ".join(f"{', '.join(c.get('conditions', []))}: {c.get('verdict')}"
                                                  for c in e["checks"]) or "không có điều kiện đo được")
            for e in empirical)
    user += "\n\nNGUỒN:\n" + "\n".join(f"[{n}] {r}" for r, n in number.items())
    return [{"role": "system", "content": SYSTEM_VI}, {"role": "user", "content": user}]


def _allowed_numbers(chains: list[Chain], factors: list[Factor], uncertainties: list[str]) -> set[str]:
    text = " ".join([str(e) for c in chains for e in c.edges] + [str(f) for f in factors] + uncertainties)
    return set(re.findall(r"\d+(?:[.,]\d+)?", text))


def hallucinations(answer: str, kg: EvidenceKG, chains: list[Chain], factors: list[Factor],
                   uncertainties: list[str], question: str = "", opposing: Sequence[Chain] = ()) -> list[str]:
    """What the answer says that the selected chains do not: a cause (a KG node that is in
    no selected chain or factor), a number, or a source; and an answer that cites none of
    the sources it was given. Empty means the answer passes.

    Names are compared with their diacritics ("mưa" is not "mùa"), longest first ("Sưởi
    ấm mùa đông" does not also name the season); the uncertainty lines, which the answer may
    repeat, and the question's own words are not counted. Opposing chains are evidence too."""
    problems = []
    chains = list(chains) + list(opposing)
    allowed_nodes = {n for c in chains for n in c.nodes} | {f["factor"] for f in factors} | {"pm25"}
    text = unicodedata.normalize("NFC", answer.lower())
    for line in uncertainties:
        text = text.replace(unicodedata.normalize("NFC", line.lower()), " ")
    asked = {node for _, _, nodes in match_names(question_words(question), kg) for node in nodes}
    # What the chains' mechanisms name is evidence too: the prompt shows them.
    shown = " ".join(e.get("mechanism") or "" for c in chains for e in c.edges)
    allowed_nodes |= {node for _, _, nodes in match_names(question_words(shown), kg) for node in nodes}
    for _, _, nodes in match_names(question_words(text), kg):
        if nodes.isdisjoint(allowed_nodes) and nodes.isdisjoint(asked):
            problems.append(f"cause not in the selected chains: {kg.label(min(nodes))}")
    refs = set(sources(chains, factors))
    # Citation marks [n] are numbers of sources, not claims: one past the sources is made up.
    marks = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
    problems += [f"source not in the evidence: [{n}]" for n in sorted(marks) if not 1 <= n <= len(refs)]
    if refs and not marks:      # every statement is to cite its sources, as the template's do
        problems.append("the answer cites none of its sources")
    numbers = set(re.findall(r"\d+(?:[.,]\d+)?", re.sub(r"\[\d+\]", " ", answer)))
    numbers -= _allowed_numbers(chains, factors, uncertainties)
    numbers -= {str(i) for i in range(0, 10)} | set(re.findall(r"\d+", question))  # list numbering
    numbers -= {"2.5", "2,5", "25"}                                                 # PM2.5 itself
    problems += [f"number not in the evidence: {n}" for n in sorted(numbers)]
    for found in re.findall(r"(?:doi:\s*|doi\.org/)(10\.\S+?)(?=[\s)\],;]|$)", answer, re.IGNORECASE):
        doi = found.rstrip(".")
        if f"doi:{doi}" not in refs and not any(r.lower().endswith("doi.org/" + doi.lower()) for r in refs):
            problems.append(f"source not in the evidence: {found}")
    for url in re.findall(r"https?://\S+", answer):
        url = url.rstrip(".,;)]")
        if "doi.org/" not in url and url not in refs:
            problems.append(f"source not in the evidence: {url}")
    return sorted(set(problems))
