"""Writes data/kgqa_dev.jsonl: questions over the demo biomedical KG (data/biomed) in the
phrasings people use, each with its gold answer computed here from the CSV files alone
(plain Python, not through ragkit's planner), so the gold does not share the planner's
mistakes.

Each question is written by hand with a small query that says what it asks:

- ``c:aspirin >TREATS >HAS_SYMPTOM``: from a node (``c:`` compound, ``d:`` disease, ``s:``
  symptom, ``g:`` gene, ``a:`` anatomy), along edges (``>``) or against them (``<``);
- ``all:Disease``: every node of a type; ``{d:gout}``: the node itself;
- ``Q & Q``, ``Q | Q``, ``Q - Q``: both, either, and all but (left to right);
- a leading ``#``: the question asks how many; ``unmapped``: the graph cannot answer it.

Every third question by position (``index % 10`` in 2, 5, 8) is held out: measured only at
the end, never read while building the planner.

    .venv/bin/python tools/kgqa_dev.py     # -> data/kgqa_dev.jsonl
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREFIX = {"c": "compound", "d": "disease", "s": "symptom", "g": "gene", "a": "anatomy"}

# (shape, query, question)
QUESTIONS = [
    # ------------------------------------------------------------ one relation step
    ("one_hop", "c:aspirin >TREATS", "What does Aspirin treat?"),
    ("one_hop", "d:gout <TREATS", "Which drugs treat gout?"),
    ("one_hop", "c:warfarin >TREATS", "Which diseases are treated by Warfarin?"),
    ("one_hop", "d:migraine <TREATS", "What medicines are used for migraine?"),
    ("one_hop", "c:ibuprofen >CAUSES_SIDE_EFFECT", "What side effects does ibuprofen cause?"),
    ("one_hop", "s:nausea <CAUSES_SIDE_EFFECT", "Which medications can cause nausea?"),
    ("one_hop", "d:gout >HAS_SYMPTOM", "What are the symptoms of gout?"),
    ("one_hop", "s:rash <HAS_SYMPTOM", "Which illnesses present with a rash?"),
    ("one_hop", "c:diclofenac >INHIBITS", "Which genes does diclofenac inhibit?"),
    ("one_hop", "g:ptgs2 <INHIBITS", "Name the compounds that inhibit PTGS2."),
    ("one_hop", "d:alzheimers_disease >ASSOCIATED_WITH", "Which genes are linked to Alzheimer's disease?"),
    ("one_hop", "g:hla_drb1 <ASSOCIATED_WITH", "What conditions are associated with HLA-DRB1?"),
    ("one_hop", "d:hypertension >AFFECTS", "Which organs does hypertension affect?"),
    ("one_hop", "a:liver <AFFECTS", "List the diseases that affect the liver."),
    ("one_hop", "c:metformin >TREATS", "Metformin is prescribed for which conditions?"),
    ("one_hop", "d:type_2_diabetes >HAS_SYMPTOM", "Show me the signs of type 2 diabetes."),
    ("one_hop", "a:brain <AFFECTS", "Which disorders affect the brain?"),
    ("one_hop", "c:lisinopril >CAUSES_SIDE_EFFECT", "Lisinopril: what adverse effects can it cause?"),
    ("one_hop", "d:peptic_ulcer <TREATS", "What is used to treat a peptic ulcer?"),
    ("one_hop", "g:apoe <ASSOCIATED_WITH", "Diseases associated with APOE?"),
    ("one_hop", "d:asthma >AFFECTS", "Which body parts are affected by asthma?"),
    ("one_hop", "c:paracetamol >TREATS", "Tylenol treats which illnesses?"),
    ("one_hop", "s:joint_pain <HAS_SYMPTOM", "Which diseases have joint pain as a symptom?"),
    ("one_hop", "d:gout <TREATS", "Thuốc nào điều trị Gout?"),
    ("one_hop", "d:migraine >HAS_SYMPTOM", "Các triệu chứng của Migraine là gì?"),
    ("one_hop", "c:methotrexate >CAUSES_SIDE_EFFECT", "Methotrexate có những tác dụng phụ nào?"),
    ("one_hop", "d:psoriasis >ASSOCIATED_WITH", "Which gene is psoriasis tied to?"),
    ("one_hop", "c:omeprazole >INHIBITS", "What gene is targeted by omeprazole?"),
    # ------------------------------------------------------------ two relation steps
    ("two_hop", "g:apoe <ASSOCIATED_WITH <TREATS", "Which drugs treat diseases associated with APOE?"),
    ("two_hop", "c:aspirin >TREATS >HAS_SYMPTOM", "What symptoms do diseases treated by Aspirin have?"),
    ("two_hop", "c:methotrexate >TREATS >ASSOCIATED_WITH",
     "Which genes are associated with diseases treated by Methotrexate?"),
    ("two_hop", "g:ldlr <ASSOCIATED_WITH >AFFECTS", "Which organs are affected by diseases linked to LDLR?"),
    ("two_hop", "c:warfarin >TREATS >AFFECTS", "What body parts do the conditions that warfarin treats affect?"),
    ("two_hop", "a:liver <AFFECTS <TREATS", "Which medications treat illnesses that affect the liver?"),
    ("two_hop", "s:chest_pain <HAS_SYMPTOM <TREATS", "What drugs are used for diseases that cause chest pain?"),
    ("two_hop", "s:chest_pain <HAS_SYMPTOM <TREATS", "Find compounds that treat diseases with chest pain as a symptom."),
    ("two_hop", "d:gout <TREATS >CAUSES_SIDE_EFFECT", "What side effects do the drugs that treat gout cause?"),
    ("two_hop", "d:migraine <TREATS >INHIBITS", "Which genes are inhibited by drugs used for migraine?"),
    ("two_hop", "g:ptgs1 <INHIBITS >TREATS", "Which diseases are treated by compounds that inhibit PTGS1?"),
    ("two_hop", "g:ptgs1 <INHIBITS >CAUSES_SIDE_EFFECT", "What side effects are caused by PTGS1 inhibitors?"),
    ("two_hop", "a:heart <AFFECTS >HAS_SYMPTOM", "What symptoms do diseases of the heart have?"),
    ("two_hop", "a:lungs <AFFECTS >ASSOCIATED_WITH", "Which genes are associated with diseases that affect the lungs?"),
    ("two_hop", "c:atorvastatin >TREATS >AFFECTS", "Atorvastatin treats diseases that affect which organs?"),
    ("two_hop", "c:colchicine >TREATS >ASSOCIATED_WITH", "Colchicine treats illnesses linked to which genes?"),
    ("two_hop", "s:memory_loss <HAS_SYMPTOM >ASSOCIATED_WITH",
     "Which genes are tied to diseases that present with memory loss?"),
    ("two_hop", "g:f5 <ASSOCIATED_WITH <TREATS", "What medicines are used for conditions associated with F5?"),
    ("two_hop", "g:hla_b <ASSOCIATED_WITH >HAS_SYMPTOM", "What are the symptoms of diseases associated with HLA-B?"),
    ("two_hop", "d:malaria <TREATS >CAUSES_SIDE_EFFECT", "Drugs that treat malaria cause which side effects?"),
    ("two_hop", "g:vkorc1 <INHIBITS >TREATS", "Diseases treated by drugs that inhibit VKORC1?"),
    ("two_hop", "s:wheezing <HAS_SYMPTOM >AFFECTS", "Which organs are affected by diseases that have wheezing as a symptom?"),
    ("two_hop", "c:sumatriptan >TREATS >AFFECTS", "Sumatriptan is used for an illness that affects which organ?"),
    ("two_hop", "a:kidney <AFFECTS <TREATS", "Which drugs are given for conditions that affect the kidney?"),
    ("two_hop", "c:allopurinol >TREATS >HAS_SYMPTOM", "List the symptoms of the diseases allopurinol treats."),
    ("two_hop", "g:tcf7l2 <ASSOCIATED_WITH <TREATS", "Thuốc nào điều trị các bệnh liên quan đến TCF7L2?"),
    ("two_hop", "c:omeprazole >TREATS >HAS_SYMPTOM", "Các bệnh được điều trị bằng Omeprazole có triệu chứng gì?"),
    ("two_hop", "s:excessive_thirst <HAS_SYMPTOM <TREATS",
     "Which medications treat conditions whose symptoms include excessive thirst?"),
    ("two_hop", "g:slc2a9 <ASSOCIATED_WITH >AFFECTS", "SLC2A9 is associated with diseases affecting which parts of the body?"),
    ("two_hop", "c:levothyroxine >TREATS >AFFECTS", "Which organ is affected by the disease that levothyroxine treats?"),
    ("two_hop", "g:cacna1a <ASSOCIATED_WITH <TREATS", "Which medicines treat disorders associated with CACNA1A?"),
    # ------------------------------------------------------------ three relation steps
    ("three_hop", "g:ptgs2 <INHIBITS >TREATS >AFFECTS",
     "Which organs are affected by diseases treated by drugs that inhibit PTGS2?"),
    ("three_hop", "g:pnpla3 <ASSOCIATED_WITH <TREATS >CAUSES_SIDE_EFFECT",
     "What side effects do drugs that treat diseases associated with PNPLA3 cause?"),
    ("three_hop", "g:hla_drb1 <ASSOCIATED_WITH <TREATS >INHIBITS",
     "Which genes are inhibited by medicines used for diseases associated with HLA-DRB1?"),
    ("three_hop", "a:spine <AFFECTS <TREATS >CAUSES_SIDE_EFFECT",
     "What side effects are caused by drugs that treat diseases affecting the spine?"),
    ("three_hop", "g:hmgcr <INHIBITS >TREATS >HAS_SYMPTOM",
     "What are the symptoms of diseases treated by compounds that inhibit HMGCR?"),
    ("three_hop", "s:jaundice <HAS_SYMPTOM <TREATS >INHIBITS",
     "Which genes do the drugs that treat diseases with jaundice as a symptom inhibit?"),
    ("three_hop", "g:xdh <INHIBITS >TREATS >ASSOCIATED_WITH",
     "Which genes are linked to diseases treated by drugs that inhibit XDH?"),
    ("three_hop", "a:uterus <AFFECTS <TREATS >CAUSES_SIDE_EFFECT",
     "Drugs for illnesses that affect the uterus cause which side effects?"),
    ("three_hop", "g:ace <INHIBITS >TREATS >AFFECTS",
     "Which body parts are affected by conditions treated by medicines that inhibit ACE?"),
    ("three_hop", "s:light_sensitivity <HAS_SYMPTOM <TREATS >CAUSES_SIDE_EFFECT",
     "What side effects do the medications for diseases that cause light sensitivity have?"),
    ("three_hop", "g:lpa <ASSOCIATED_WITH <TREATS >INHIBITS",
     "Genes inhibited by drugs that treat diseases linked to LPA?"),
    ("three_hop", "a:esophagus <AFFECTS <TREATS >TREATS",
     "Which diseases are treated by the drugs that treat diseases affecting the esophagus?"),
    ("three_hop", "g:pitx2 <ASSOCIATED_WITH <TREATS >CAUSES_SIDE_EFFECT",
     "Các thuốc điều trị bệnh liên quan đến PITX2 gây ra tác dụng phụ nào?"),
    # ------------------------------------------------------------ intersections
    ("intersection", "c:aspirin >TREATS & c:ibuprofen >TREATS", "Which diseases are treated by both Aspirin and Ibuprofen?"),
    ("intersection", "(c:aspirin >TREATS & c:ibuprofen >TREATS) >HAS_SYMPTOM",
     "What are the common symptoms of diseases treated by both Aspirin and Ibuprofen?"),
    ("intersection", "d:gout >HAS_SYMPTOM & d:rheumatoid_arthritis >HAS_SYMPTOM",
     "Which symptoms do gout and rheumatoid arthritis share?"),
    ("intersection", "d:osteoarthritis <TREATS & d:migraine <TREATS", "Which drugs treat both osteoarthritis and migraine?"),
    ("intersection", "c:aspirin >TREATS & s:chest_pain <HAS_SYMPTOM", "Which diseases treated by aspirin have chest pain as a symptom?"),
    ("intersection", "a:liver <AFFECTS & a:brain <AFFECTS", "Which diseases affect both the liver and the brain?"),
    ("intersection", "s:nausea <CAUSES_SIDE_EFFECT & s:diarrhea <CAUSES_SIDE_EFFECT",
     "What drugs cause nausea and also diarrhea as side effects?"),
    ("intersection", "g:ptgs1 <INHIBITS & g:ptgs2 <INHIBITS", "Which compounds inhibit PTGS1 as well as PTGS2?"),
    ("intersection", "c:naproxen >TREATS & a:spine <AFFECTS", "Which of the diseases naproxen treats affect the spine?"),
    ("intersection", "c:celecoxib >TREATS & c:diclofenac >TREATS & c:naproxen >TREATS",
     "What conditions do celecoxib, diclofenac and naproxen all treat?"),
    ("intersection", "s:fever <HAS_SYMPTOM & s:cough <HAS_SYMPTOM", "Which illnesses have both fever and cough?"),
    ("intersection", "d:hypertension >AFFECTS & d:heart_failure >AFFECTS",
     "Which organs are affected by hypertension and heart failure alike?"),
    ("intersection", "c:prednisone >TREATS & g:hla_drb1 <ASSOCIATED_WITH",
     "Which diseases that prednisone treats are associated with HLA-DRB1?"),
    ("intersection", "c:aspirin >CAUSES_SIDE_EFFECT & c:naproxen >CAUSES_SIDE_EFFECT",
     "What side effects do aspirin and naproxen have in common?"),
    ("intersection", "d:rheumatoid_arthritis <TREATS & d:systemic_lupus_erythematosus <TREATS",
     "Thuốc nào điều trị cả Rheumatoid Arthritis và lupus?"),
    ("intersection", "(s:fever <HAS_SYMPTOM & g:hla_drb1 <ASSOCIATED_WITH) <TREATS",
     "Which drugs treat diseases that have fever as a symptom and are associated with HLA-DRB1?"),
    # ------------------------------------------------------------ unions
    ("union", "d:gout <TREATS | d:migraine <TREATS", "Which drugs treat either gout or migraine?"),
    ("union", "c:metformin >CAUSES_SIDE_EFFECT | c:colchicine >CAUSES_SIDE_EFFECT",
     "What side effects can metformin or colchicine cause?"),
    ("union", "a:kidney <AFFECTS | a:pancreas <AFFECTS", "Which diseases affect either the kidney or the pancreas?"),
    ("union", "g:ldlr <ASSOCIATED_WITH | g:tcf7l2 <ASSOCIATED_WITH", "List diseases linked to LDLR or TCF7L2."),
    # ------------------------------------------------------------ exclusions
    ("exclusion", "c:aspirin >TREATS - c:ibuprofen >TREATS", "Which diseases does Aspirin treat that Ibuprofen does not?"),
    ("exclusion", "c:naproxen >TREATS - c:aspirin >TREATS", "Which diseases treated by naproxen are not treated by aspirin?"),
    ("exclusion", "d:gout <TREATS - {c:naproxen}", "Which drugs treat gout other than naproxen?"),
    ("exclusion", "c:aspirin >CAUSES_SIDE_EFFECT - {s:heartburn}", "What side effects does aspirin have besides heartburn?"),
    ("exclusion", "d:osteoarthritis <TREATS - d:low_back_pain <TREATS",
     "Which drugs treat osteoarthritis but not low back pain?"),
    ("exclusion", "d:gout >HAS_SYMPTOM - d:rheumatoid_arthritis >HAS_SYMPTOM",
     "Which symptoms of gout are not symptoms of rheumatoid arthritis?"),
    ("exclusion", "all:Compound - d:fever <TREATS", "Which drugs do not treat fever?"),
    ("exclusion", "a:heart <AFFECTS - {d:hypertension}", "Apart from hypertension, which diseases affect the heart?"),
    ("exclusion", "g:ptgs2 <INHIBITS - g:ptgs1 <INHIBITS", "Which compounds inhibit PTGS2 without inhibiting PTGS1?"),
    ("exclusion", "c:ibuprofen >TREATS - {d:fever, d:migraine}", "What does ibuprofen treat except fever and migraine?"),
    ("exclusion", "a:liver <AFFECTS - c:prednisone >TREATS", "Which diseases affecting the liver are not treated by prednisone?"),
    ("exclusion", "all:Gene - d:rheumatoid_arthritis >ASSOCIATED_WITH",
     "Which genes are not associated with rheumatoid arthritis?"),
    ("exclusion", "d:dysmenorrhea <TREATS - s:gi_bleeding <CAUSES_SIDE_EFFECT",
     "Which drugs for dysmenorrhea do not cause GI bleeding?"),
    ("exclusion", "d:rheumatoid_arthritis <TREATS - {c:methotrexate}",
     "Excluding methotrexate, which medicines treat rheumatoid arthritis?"),
    ("exclusion", "a:lungs <AFFECTS - {d:asthma}", "Những bệnh nào ảnh hưởng đến phổi (lungs) ngoại trừ hen suyễn (asthma)?"),
    ("exclusion", "c:celecoxib >TREATS - c:diclofenac >TREATS", "What does celecoxib treat that diclofenac doesn't?"),
    # ------------------------------------------------------------ counts
    ("count", "#c:aspirin >TREATS", "How many diseases does Aspirin treat?"),
    ("count", "#d:hypertension <TREATS", "How many drugs treat hypertension?"),
    ("count", "#d:rheumatoid_arthritis >HAS_SYMPTOM", "How many symptoms does rheumatoid arthritis have?"),
    ("count", "#a:liver <AFFECTS", "How many illnesses affect the liver?"),
    ("count", "#c:aspirin >TREATS >HAS_SYMPTOM", "How many symptoms do the diseases treated by aspirin have?"),
    ("count", "#g:ptgs2 <INHIBITS", "Number of compounds that inhibit PTGS2?"),
    ("count", "#c:aspirin >TREATS & c:ibuprofen >TREATS", "How many diseases are treated by both aspirin and ibuprofen?"),
    ("count", "#all:Gene", "How many genes are in the graph?"),
    ("count", "#all:Disease", "How many diseases does the knowledge graph hold?"),
    ("count", "#s:nausea <CAUSES_SIDE_EFFECT", "How many medications list nausea as a side effect?"),
    ("count", "#g:hla_drb1 <ASSOCIATED_WITH <TREATS", "Count the drugs that treat diseases associated with HLA-DRB1."),
    ("count", "#c:naproxen >TREATS - c:aspirin >TREATS", "How many diseases does naproxen treat that aspirin does not?"),
    ("count", "#d:malaria >AFFECTS", "Malaria affects how many organs?"),
    ("count", "#d:gout <TREATS", "Có bao nhiêu thuốc điều trị Gout?"),
    ("count", "#a:blood_vessels <AFFECTS", "What is the number of diseases affecting the blood vessels?"),
    ("count", "#c:warfarin >TREATS >ASSOCIATED_WITH", "How many genes are associated with diseases that warfarin treats?"),
    # ------------------------------------------------------------ two steps, more phrasings
    ("two_hop", "d:otitis_media <TREATS >CAUSES_SIDE_EFFECT", "What are the side effects of drugs for otitis media?"),
    ("two_hop", "c:hydroxychloroquine >TREATS >AFFECTS", "Hydroxychloroquine treats conditions affecting which organs?"),
    ("two_hop", "a:thyroid <AFFECTS <TREATS", "What drug is used for the disease that affects the thyroid?"),
    ("two_hop", "g:psen1 <ASSOCIATED_WITH >HAS_SYMPTOM", "Symptoms of illnesses associated with PSEN1?"),
    ("two_hop", "s:edema <HAS_SYMPTOM >ASSOCIATED_WITH", "Which genes are associated with diseases whose symptoms include edema?"),
    ("two_hop", "c:prednisone >TREATS >AFFECTS", "Prednisone is used for diseases that affect which body parts?"),
    ("one_hop", "a:skin <AFFECTS", "Which conditions affect the skin?"),
    ("one_hop", "c:celecoxib >CAUSES_SIDE_EFFECT", "What are Celebrex's side effects?"),
    ("one_hop", "d:heart_failure <TREATS", "Heart failure is treated by which drugs?"),
    ("one_hop", "s:bleeding <CAUSES_SIDE_EFFECT", "Which compounds have bleeding as a side effect?"),
    # ------------------------------------------------------------ questions the graph cannot answer
    ("unmapped", "unmapped", "Who is Zorro?"),
    ("unmapped", "unmapped", "Tell me about Aspirin."),
    ("unmapped", "unmapped", "When was warfarin discovered?"),
    ("unmapped", "unmapped", "What is the price of ibuprofen?"),
    ("unmapped", "unmapped", "Which hospitals treat gout?"),
    ("unmapped", "unmapped", "Who manufactures Lipitor?"),
    ("unmapped", "unmapped", "What dose of metformin is safe?"),
    ("unmapped", "unmapped", "Is migraine hereditary?"),
]


def load_graph(folder: Path):
    """Nodes by id, and each node's neighbours per (relation, direction)."""
    with open(folder / "nodes.csv", newline="", encoding="utf-8") as fh:
        nodes = {row["id"]: row for row in csv.DictReader(fh)}
    near: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    with open(folder / "edges.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            near[(row["source"], row["relation"], ">")].add(row["target"])
            near[(row["target"], row["relation"], "<")].add(row["source"])
    return nodes, near


def node_id(short: str, nodes: dict) -> str:
    kind, _, rest = short.partition(":")
    full = f"{PREFIX[kind]}:{rest}"
    if full not in nodes:
        raise KeyError(f"{short}: not a node")
    return full


def evaluate(query: str, nodes: dict, near: dict) -> set[str]:
    """The node ids a query reaches (see the module docstring for the notation)."""
    tokens = query.replace("(", " ( ").replace(")", " ) ").replace("{", " { ").replace("}", " } ") \
        .replace(",", " ").split()
    pos = 0

    def term() -> set[str]:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            found = expr()
            pos += 1        # ")"
        elif tok == "{":
            found = set()
            while tokens[pos] != "}":
                found.add(node_id(tokens[pos], nodes))
                pos += 1
            pos += 1
        elif tok.startswith("all:"):
            found = {i for i, n in nodes.items() if n["type"] == tok[4:]}
        else:
            found = {node_id(tok, nodes)}
            if pos >= len(tokens) or tokens[pos][0] not in "<>":
                return found
        while pos < len(tokens) and tokens[pos][0] in "<>":
            hop = tokens[pos]
            found = set().union(*(near.get((n, hop[1:], hop[0]), set()) for n in found))
            pos += 1
        return found

    def expr() -> set[str]:
        nonlocal pos
        found = term()
        while pos < len(tokens) and tokens[pos] in "&|-":
            op = tokens[pos]
            pos += 1
            other = term()
            found = found & other if op == "&" else (found | other if op == "|" else found - other)
        return found

    return expr()


def main() -> None:
    nodes, near = load_graph(ROOT / "data" / "biomed")
    out = ROOT / "data" / "kgqa_dev.jsonl"
    seen = set()
    with open(out, "w", encoding="utf-8") as fh:
        for i, (shape, query, question) in enumerate(QUESTIONS):
            assert question not in seen, question
            seen.add(question)
            record = {"id": f"kg{i:03d}", "question": question, "shape": shape, "query": query,
                      "split": "held_out" if i % 10 in (2, 5, 8) else "dev"}
            if query == "unmapped":
                record["answers"] = None
            else:
                ids = evaluate(query.lstrip("#"), nodes, near)
                if query.startswith("#"):
                    record["count"] = len(ids)
                record["answers"] = sorted(nodes[n]["name"] for n in ids)
                record["answer_ids"] = sorted(ids)
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {len(QUESTIONS)} questions to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
