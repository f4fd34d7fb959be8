"""Causal chains (causal-chain design): scoring rules on small hand-built KGs, schema errors, the
synonym merge, condition checks, the empirical check on the real Beijing series, and the
anti-hallucination check."""

import json
import re

import pytest

from ragkit.causal.chains import (ChainConfig, analyse_question, edge_score, extract_entities,
                                  select_chains, split_by_direction, rank_chains)
from ragkit.causal.conditions import check_condition, empirical_support, load_weather, relative_humidity
from ragkit.causal.explain import hallucinations, template_answer
from ragkit.causal.kg import build_kg, load_kg, validate_kg
from ragkit.errors import InputError
from ragkit.pipelines.causal import explain

from .conftest import ROOT, shared

DEMO_KG = ROOT / "data" / "merged_knowledge_graph.json"
URL = "https://doi.org/10.1000/example"


def node(i, **kw):
    return {"id": i, "label": kw.pop("label", i), "aliases": kw.pop("aliases", []), "category": "meteorological", **kw}


def edge(s, t, conf="HIGH", strength="STRONG", rel="increases", lag="", conds=(), quote="Summary: a clear statement of the mechanism at work here.", tier="tier_1", cat="meteorological"):
    return {"source": s, "target": t, "relation": rel, "mechanism": "", "confidence": conf, "strength": strength,
            "temporal_lag": lag, "conditions": list(conds), "category": cat,
            "evidence": [{"source_url": URL, "source_doi": "", "source_quote": quote, "tier": tier}]}


def kg_of(nodes, edges):
    data = {"nodes": [node(n) for n in nodes], "edges": edges}
    validate_kg(data)
    return build_kg([("test", data)])


# --------------------------------------------------------------------------- scoring
def test_edge_points_and_each_bonus():
    base = edge("a", "b", conf="MEDIUM", strength="WEAK", quote="short")
    assert edge_score(base)[0] == 1.0
    assert edge_score({**base, "temporal_lag": "hours"})[0] == 1.5
    assert edge_score({**base, "conditions": [{"variable": "rh", "op": ">", "value": 75, "unit": "%"}]})[0] == 1.5
    assert edge_score({**base, "conditions": [{"variable": "season", "op": "==", "value": "winter"}]})[0] == 1.0
    clear = {**base, "evidence": [{"source_url": URL, "source_quote": "Summary: a long and unhedged statement of the effect."}]}
    assert edge_score(clear)[0] == 1.5
    hedged = {**base, "evidence": [{"source_url": URL, "source_quote": "Summary: this effect may exist under some conditions."}]}
    assert edge_score(hedged)[0] == 1.0
    assert edge_score(edge("a", "b"))[0] == 2 + 2 + 0.5


def test_chains_end_at_pm25_and_rank_by_mean_score():
    kg = kg_of(["h", "alw", "sulfate", "pm25", "w"],
               [edge("h", "alw"), edge("alw", "sulfate"), edge("sulfate", "pm25"),
                edge("w", "sulfate", conf="MEDIUM", strength="MODERATE")])
    chains, _, _ = select_chains(kg, ["h", "w"])
    assert [c.nodes for c in chains] == [["h", "alw", "sulfate", "pm25"], ["w", "sulfate", "pm25"]]
    assert chains[0].score > chains[1].score
    assert all(c.nodes[-1] == "pm25" and 2 <= len(c.edges) <= 4 for c in chains)


def test_at_most_three_chains_of_at_most_four_steps():
    nodes = ["pm25"] + [f"x{i}" for i in range(8)] + ["a", "b", "c", "d", "e"]
    edges = [edge(f"x{i}", "a") for i in range(8)] + [edge("a", "pm25"),
             edge("e", "d"), edge("d", "c"), edge("c", "b"), edge("b", "a")]
    kg = kg_of(nodes, edges)
    chains, _, _ = select_chains(kg, [f"x{i}" for i in range(8)] + ["e"], ChainConfig(k_hops=4))
    assert len(chains) == 3 and all(len(c.edges) <= 4 for c in chains)
    assert not any(c.nodes[0] == "e" for c in chains)  # e → ... → pm25 needs 5 steps


def test_ties_break_by_length_then_node_ids():
    kg = kg_of(["b2", "b1", "m", "pm25"], [edge("b2", "m"), edge("b1", "m"), edge("m", "pm25")])
    chains, _, _ = select_chains(kg, ["b2", "b1"])
    assert [c.nodes[0] for c in chains] == ["b1", "b2"]
    again, _, _ = select_chains(kg, ["b1", "b2"])
    assert [c.nodes for c in again] == [c.nodes for c in chains]


def test_filters_confidence_tier_category():
    kg = kg_of(["a", "m", "pm25"], [edge("a", "m", conf="LOW"), edge("m", "pm25")])
    assert select_chains(kg, ["a"])[0] == []
    assert select_chains(kg, ["a"], ChainConfig(min_confidence="LOW"))[0]
    kg = kg_of(["a", "m", "pm25"], [edge("a", "m", tier="tier_3"), edge("m", "pm25")])
    assert select_chains(kg, ["a"])[0] == [] and select_chains(kg, ["a"], ChainConfig(max_tier=3))[0]
    kg = kg_of(["a", "m", "pm25"], [edge("a", "m", cat="chemical"), edge("m", "pm25")])
    assert select_chains(kg, ["a"], ChainConfig(categories=("meteorological",)))[0] == []


def test_core_meteorology_set_when_no_variable_is_named():
    kg = load_kg(DEMO_KG)
    chains, focus, _ = select_chains(kg, [])
    assert focus[0] == "temperature" and "relative_humidity" in focus
    assert chains and all(any(n in focus for n in c.nodes) for c in chains)


def test_search_stays_bounded_on_a_hub():
    nodes = ["pm25", "hub"] + [f"n{i}" for i in range(3000)]
    edges = [edge(f"n{i}", "hub") for i in range(3000)] + [edge(f"n{i}", f"n{i + 1}") for i in range(2999)] + [edge("hub", "pm25")]
    kg = kg_of(nodes, edges)
    config = ChainConfig(max_candidates=500)
    chains, _, sub = select_chains(kg, ["n5"], config)
    n = config.max_neighbours
    assert kg.graph.number_of_edges() == 6000
    assert sub.number_of_edges() <= 2 * (n + n ** 2 + n ** 3)   # bounded, whatever the hub's degree
    assert 1 <= len(chains) <= 3 and chains[0].nodes[0] == "n5"


# --------------------------------------------------------------------------- schema and merge
def test_schema_errors_name_the_edge_and_field():
    data = json.loads(DEMO_KG.read_text())
    data["edges"][2]["confidence"] = "SURE"
    with pytest.raises(InputError, match=r"edge 2 \(heterogeneous_chemistry → sulfate\), field confidence: 'SURE'"):
        validate_kg(data)
    data = json.loads(DEMO_KG.read_text())
    del data["edges"][0]["target"]
    with pytest.raises(InputError, match=r"edge 0 \(relative_humidity → \?\), field target: is missing"):
        validate_kg(data)
    data = json.loads(DEMO_KG.read_text())
    data["edges"][1]["evidence"][0].pop("source_url")
    data["edges"][1]["evidence"][0].pop("source_doi")
    with pytest.raises(InputError, match=r"edge 1 .*evidence"):
        validate_kg(data)


def _write(tmp_path, data, name="kg.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False))
    return path


def test_null_optional_fields_are_absent_and_earn_no_bonus(tmp_path):
    data = json.loads(DEMO_KG.read_text())
    assert data["edges"][0]["temporal_lag"] == "hours"
    data["edges"][0].update(temporal_lag=None, mechanism=None, category=None)
    data["edges"][0]["evidence"][0]["tier"] = None
    data["edges"][3]["conditions"] = None
    data["nodes"][1]["aliases"] = None
    kg = load_kg(_write(tmp_path, data))
    rh_alw = kg.graph.edges["relative_humidity", "aerosol_liquid_water"]
    assert "temporal_lag" not in rh_alw and "mechanism" not in rh_alw
    assert edge_score(rh_alw)[1]["temporal_lag"] == 0.0
    assert kg.graph.edges["heterogeneous_chemistry", "nitrate"]["conditions"] == []
    answer = explain("Tại sao độ ẩm cao làm PM2.5 tăng?", kg, use_llm=False)
    step = answer.trace["selected_chains"][0]["steps"][0]
    assert step["source"] == "relative_humidity" and step["temporal_lag"] == "" and step["mechanism"] == ""


def test_missing_optional_fields_load(tmp_path):
    data = {"nodes": [{"id": "wind_speed", "label": "Wind"}, {"id": "stagnation", "label": "Stagnation"},
                      {"id": "pm25", "label": "PM2.5"}],
            "edges": [{"source": "wind_speed", "target": "stagnation", "relation": "decreases",
                       "confidence": "HIGH", "strength": "STRONG",
                       "evidence": [{"source_url": URL, "source_quote": "Summary: wind breaks stagnation."}]},
                      {"source": "stagnation", "target": "pm25", "relation": "increases",
                       "confidence": "HIGH", "strength": "STRONG",
                       "evidence": [{"source_doi": "10.1000/x", "source_quote": "Summary: stagnant air accumulates it."}]}]}
    answer = explain("Why does weak wind raise PM2.5?", load_kg(_write(tmp_path, data)), use_llm=False)
    chain = answer.trace["selected_chains"][0]
    assert chain["nodes"] == ["wind_speed", "stagnation", "pm25"] and chain["score"] == 4.0
    assert chain["steps"][0]["conditions"] == [] and answer.trace["check"]["problems"] == []


def test_extra_fields_are_kept_and_shown(tmp_path):
    data = json.loads(DEMO_KG.read_text())
    data["edges"][0]["region"] = "North China Plain"
    data["edges"][0]["evidence"][0]["year"] = 2018
    kg = load_kg(_write(tmp_path, data))
    assert kg.graph.edges["relative_humidity", "aerosol_liquid_water"]["region"] == "North China Plain"
    answer = explain("Tại sao độ ẩm cao làm PM2.5 tăng?", kg, use_llm=False)
    step = answer.trace["selected_chains"][0]["steps"][0]
    assert step["extra"] == {"region": "North China Plain"}
    assert step["evidence"][0]["extra"] == {"year": 2018}
    assert answer.trace["selected_chains"][0]["steps"][1]["extra"] == {}
    assert set(answer.trace["selected_chains"][0]["steps"][1]["evidence"][0]) == {"source_url", "source_doi", "source_quote"}


@pytest.mark.slow
def test_required_field_null_is_refused_in_one_line(tmp_path):
    import subprocess
    import sys

    data = json.loads(DEMO_KG.read_text())
    data["edges"][4]["confidence"] = None
    path = _write(tmp_path, data, "merged.json")
    with pytest.raises(InputError, match=r"^kg .*merged.json: edge 4 \(sulfate → pm25\), field confidence: "
                                         r"is null \(a required field\)$"):
        load_kg(path)
    data["edges"][4]["confidence"] = "HIGH"
    data["edges"][4]["evidence"][0]["source_quote"] = None
    with pytest.raises(InputError, match=r"edge 4 \(sulfate → pm25\), field evidence.0.source_quote: is null"):
        validate_kg(data)
    data["edges"][4]["evidence"][0]["source_quote"] = "Summary."
    data["edges"][4]["strength"] = "HUGE"     # enumerations are still checked
    with pytest.raises(InputError, match=r"edge 4 \(sulfate → pm25\), field strength: 'HUGE' is not one of"):
        validate_kg(data)
    data["edges"][4]["strength"] = None
    _write(tmp_path, data, "merged.json")
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "explain", "Vì sao PM2.5 tăng?", "--kg", str(path)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 3 and out.stdout == ""
    assert out.stderr.strip() == (f"ragkit: error: kg {path}: edge 4 (sulfate → pm25), field strength: "
                                  f"is null (a required field)")


def test_bad_kg_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_kg(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        load_kg(bad)


def test_synonym_merge_keeps_all_evidence(tmp_path):
    one = {"nodes": [node("pm2.5", label="PM2.5"), node("RH", label="Relative humidity")],
           "edges": [edge("RH", "pm2.5")]}
    two = {"nodes": [node("pm25"), node("relative_humidity", aliases=["độ ẩm"])],
           "edges": [{**edge("relative_humidity", "pm25"),
                      "evidence": [{"source_url": "https://example.org/b", "source_quote": "Summary: another source."}]}]}
    paths = []
    for i, data in enumerate((one, two)):
        path = tmp_path / f"kg{i}.json"
        path.write_text(json.dumps(data, ensure_ascii=False))
        paths.append(path)
    kg = load_kg(paths)
    assert set(kg.graph.nodes) == {"pm25", "relative_humidity"}
    merged = kg.graph.edges["relative_humidity", "pm25"]
    assert len(merged["evidence"]) == 2
    assert extract_entities(kg, "Độ ẩm ảnh hưởng thế nào tới PM2.5?") == ["relative_humidity"]


def test_entities_keep_rain_and_season_apart():
    kg = load_kg(DEMO_KG)
    assert extract_entities(kg, "Mưa có làm giảm bụi mịn không?") == ["precipitation"]
    assert extract_entities(kg, "Tại sao mùa đông PM2.5 cao?") == ["seasonal_patterns"]
    assert extract_entities(kg, "Vì sao RH cao và gió yếu làm tăng PM2.5?") == ["relative_humidity", "wind_speed"]


# --------------------------------------------------------------------------- conditions
def test_relative_humidity_from_dew_point():
    assert relative_humidity(20.0, 20.0) == pytest.approx(100.0)
    assert relative_humidity(30.0, 10.0) == pytest.approx(28.5, abs=0.5)


def test_condition_checks_on_a_daily_table(tmp_path):
    table = tmp_path / "daily.csv"
    table.write_text("date,temperature,dew_point,wind_speed,precipitation\n"
                     "2024-01-10,10,9,1.0,0\n2024-07-02,30,25,5.0,12\n")
    weather = load_weather(table)
    rh = {"variable": "relative_humidity", "op": ">", "value": 75, "unit": "%"}
    assert check_condition(rh, weather, "2024-01-10").status == "holds"
    assert check_condition(rh, weather).status == "fails"          # the last row: July, RH ~74 %
    assert check_condition({"variable": "season", "op": "==", "value": "winter"}, weather, "2024-01-10").status == "holds"
    assert check_condition({"variable": "pblh", "op": "<", "value": 500}, weather).status == "not_checkable"
    assert check_condition(rh, None).status == "no_data"
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="needs year/month/day"):
        load_weather(bad)


@pytest.mark.slow
def test_empirical_check_on_the_beijing_series():
    weather = load_weather(shared("pm25", "PRSA_data_2010.1.1-2014.12.31.csv"))
    assert len(weather) == 43824 and weather["relative_humidity"].between(0, 100).all()
    humid = empirical_support([{"variable": "relative_humidity", "op": ">", "value": 75, "unit": "%"}], 1, weather)
    assert humid["verdict"] == "supports" and humid["median_pm25_when_holding"] > humid["median_pm25_otherwise"]
    windy = empirical_support([{"variable": "wind_speed", "op": ">", "value": 3, "unit": "m/s"}], -1, weather)
    assert windy["verdict"] == "supports" and windy["ratio"] < 1
    wrong_way = empirical_support([{"variable": "wind_speed", "op": ">", "value": 3, "unit": "m/s"}], 1, weather)
    assert wrong_way["verdict"] == "contradicts"


# --------------------------------------------------------------------------- answers
def test_template_answer_has_the_seed_sections_and_passes_its_own_check():
    answer = explain("Tại sao độ ẩm cao làm PM2.5 tăng?", DEMO_KG, use_llm=False)
    for section in ("Nguyên nhân chính", "Yếu tố bổ trợ", "Điều kiện/ngoại lệ", "Nguồn trích dẫn"):
        assert section in answer.answer
    assert answer.trace["entities"] == ["relative_humidity"]
    chains = answer.trace["selected_chains"]
    assert 1 <= len(chains) <= 3 and all(s["evidence"][0]["source_url"] for c in chains for s in c["steps"])
    assert answer.trace["check"]["problems"] == []
    assert any("chưa" in u for u in answer.trace["uncertainties"])  # no weather: says what it cannot check


def test_anti_hallucination_flags_new_causes_numbers_and_sources():
    kg = load_kg(DEMO_KG)
    chains, focus, sub = select_chains(kg, ["relative_humidity"])
    ok = template_answer(kg, chains, [], [])
    assert hallucinations(ok, kg, chains, [], []) == []
    assert any("Carbon đen" in p for p in hallucinations(ok + " Carbon đen cũng là nguyên nhân.", kg, chains, [], []))
    assert "number not in the evidence: 300" in hallucinations(ok + " PM2.5 tăng 300 %.", kg, chains, [], [])
    assert any("source not in the evidence" in p
               for p in hallucinations(ok + " Xem doi:10.9999/invented.", kg, chains, [], []))
    uncited = re.sub(r"\s*\[\d+\]", "", ok)           # the same statements, no [n]
    assert hallucinations(uncited, kg, chains, [], []) == ["the answer cites none of its sources"]


def test_llm_answer_that_adds_a_cause_falls_back_to_the_template(gguf):
    from .test_pipeline_lexical import ScriptedLLM

    llm = ScriptedLLM(["**Nguyên nhân chính** Carbon đen và 300 nhà máy làm PM2.5 tăng."], gguf)
    answer = explain("Tại sao độ ẩm cao làm PM2.5 tăng?", DEMO_KG, use_llm=True, llm=llm)
    assert answer.trace["answer_source"] == "fallback"
    assert "Carbon đen" not in answer.answer and answer.trace["check"]["problems"]


@pytest.mark.slow
def test_explain_cli_contract_with_weather(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "explain", "Vì sao gió yếu làm PM2.5 tăng?",
                          "--kg", str(DEMO_KG), "--weather", str(shared("pm25", "PRSA_data_2010.1.1-2014.12.31.csv")),
                          "--at", "2013-01-12 08:00", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"selected_chains", "supporting_factors", "uncertainties"} <= set(data)
    step = data["selected_chains"][0]["steps"][0]
    assert {"source", "target", "relation", "confidence", "strength", "evidence"} <= set(step)
    assert {"source_url", "source_doi", "source_quote"} == set(step["evidence"][0])
    assert data["empirical"] and data["empirical"][0]["checks"][0]["verdict"] in ("supports", "contradicts", "no_clear_difference")
    bad = subprocess.run([sys.executable, "-m", "ragkit.cli", "explain", "", "--kg", str(DEMO_KG)],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 3 and bad.stderr.strip() == "ragkit: error: question: is empty"


@pytest.mark.slow
def test_real_gguf_answer_is_checked(gguf):
    from ragkit.config import LLMConfig

    answer = explain("Tại sao độ ẩm cao làm PM2.5 tăng?", DEMO_KG, use_llm=True, llm=gguf,
                     llm_config=LLMConfig(max_tokens=64))
    assert answer.timings_ms["generation"] > 0 and "model_answer" in answer.trace
    assert answer.trace["answer_source"] in ("model", "fallback")
    if answer.trace["answer_source"] == "fallback":
        assert "Nguyên nhân chính" in answer.answer


# --------------------------------------------------------------------------- direction
def _effect(chain: dict, levels: dict) -> int:
    return levels.get(chain["nodes"][0], 1) * chain["direction"]


@pytest.mark.parametrize("question", ["Tại sao độ ẩm cao làm PM2.5 tăng?", "Why does high humidity raise PM2.5?",
                                      "Why is PM2.5 worse when humidity is high?"])
def test_a_question_asking_why_pm25_rises_lists_no_lowering_chain_as_main_cause(question):
    answer = explain(question, DEMO_KG, use_llm=False)
    assert answer.trace["asked_direction"]["outcome"] == 1
    main, opposing = answer.trace["selected_chains"], answer.trace["opposing_factors"]
    assert main and all(c["direction"] == 1 for c in main)
    # the cold surge dries the air: a chain that lowers PM2.5, kept as an opposing factor
    assert not any(c["nodes"][0] == "cold_surge" for c in main)
    assert any(c["nodes"][:2] == ["cold_surge", "relative_humidity"] for c in opposing)
    assert all(c["direction"] == -1 and c["steps"][0]["evidence"][0]["source_quote"] for c in opposing)
    assert answer.trace["check"]["problems"] == []


def test_a_low_cause_turns_the_chain_round():
    """"Gió yếu" (weak wind): the wind chain lowers PM2.5 when the wind rises, so with the
    wind low it raises it: a main cause. The cold surge, which brings wind, opposes."""
    for question in ("Vì sao gió yếu làm PM2.5 tăng?", "Why does weak wind make PM2.5 rise?"):
        answer = explain(question, DEMO_KG, use_llm=False)
        assert answer.trace["asked_direction"] == {"outcome": 1, "levels": {"wind_speed": -1}}
        main = answer.trace["selected_chains"]
        assert main[0]["nodes"][0] == "wind_speed" and all(_effect(c, {"wind_speed": -1}) == 1 for c in main)
        assert [c["nodes"][0] for c in answer.trace["opposing_factors"]][:1] == ["cold_surge"]
    assert "Vậy khi Tốc độ gió giảm, PM2.5 tăng." in answer.answer


def test_a_question_asking_why_pm25_falls_keeps_rising_chains_out():
    answer = explain("Vì sao mưa làm bụi mịn giảm?", DEMO_KG, use_llm=False)
    assert answer.trace["asked_direction"]["outcome"] == -1
    assert answer.trace["selected_chains"] and all(c["direction"] == -1 for c in answer.trace["selected_chains"])


def test_no_direction_keeps_every_chain():
    kg = load_kg(DEMO_KG)
    for question in ("Độ ẩm ảnh hưởng thế nào tới PM2.5?", "How does humidity affect PM2.5?"):
        entities, asked = analyse_question(kg, question)
        assert asked.outcome == 0 and entities == ["relative_humidity"]
        answer = explain(question, kg, use_llm=False)
        assert answer.trace["opposing_factors"] == []
        assert [c["nodes"] for c in answer.trace["selected_chains"]] == \
            [c.nodes for c in select_chains(kg, ["relative_humidity"])[0]]


def test_direction_words_inside_names_are_names():
    """"Độ cao lớp biên" (boundary-layer height) and "Tăng trưởng hút ẩm" (hygroscopic
    growth) hold "cao" and "tăng" as part of their names."""
    kg = load_kg(DEMO_KG)
    assert analyse_question(kg, "Độ cao lớp biên ảnh hưởng PM2.5 ra sao?")[1].outcome == 0
    entities, asked = analyse_question(kg, "Tăng trưởng hút ẩm của hạt tác động PM2.5 thế nào?")
    assert entities == ["hygroscopic_growth"] and asked.outcome == 0


def test_split_by_direction_on_a_hand_built_kg():
    kg = kg_of(["up", "down", "m", "pm25"],
               [edge("up", "m"), edge("down", "m", rel="decreases"), edge("m", "pm25", rel="contributes_to")])
    ranked, _, _ = rank_chains(kg, ["up", "down"])
    _, rising = analyse_question(kg, "why does pm2.5 rise")
    agree, oppose = split_by_direction(ranked, rising)
    assert [c.nodes[0] for c in agree] == ["up"] and [c.nodes[0] for c in oppose] == ["down"]
    _, none = analyse_question(kg, "what drives pm2.5")
    assert split_by_direction(ranked, none) == (ranked, [])


# --------------------------------------------------------------------------- names
def test_names_match_with_their_diacritics():
    kg = load_kg(DEMO_KG)
    # "nặng" (heavy) is not "nắng" (sunshine): no summer photochemistry in a winter answer
    assert extract_entities(kg, "Vì sao mùa đông ô nhiễm PM2.5 nặng hơn?") == ["seasonal_patterns"]
    answer = explain("Vì sao mùa đông ô nhiễm PM2.5 nặng hơn?", kg, use_llm=False)
    assert answer.trace["asked_direction"]["outcome"] == 1
    assert not any("solar_radiation" in c["nodes"] or "photochemistry" in c["nodes"]
                   for c in answer.trace["selected_chains"])
    assert extract_entities(kg, "Nắng làm PM2.5 tăng thế nào?") == ["solar_radiation"]
    # typed without any diacritics, the accent-free name still matches
    assert extract_entities(kg, "vi sao nang lam pm2.5 tang") == ["solar_radiation"]
    assert analyse_question(kg, "vi sao do am cao lam pm2.5 tang")[1].levels == {"relative_humidity": 1}


def test_longer_names_win_over_names_inside_them():
    kg = load_kg(DEMO_KG)
    assert extract_entities(kg, "Gió mùa đông bắc ảnh hưởng PM2.5 thế nào?") == ["cold_surge"]
    assert extract_entities(kg, "Sưởi ấm mùa đông làm PM2.5 tăng ra sao?") == ["winter_heating"]
    assert extract_entities(kg, "Does a southerly wind bring PM2.5?") == ["southerly_flow"]
    chains, _, _ = select_chains(kg, ["winter_heating"])
    text = template_answer(kg, chains, [], [])
    assert "Sưởi ấm mùa đông" in text and hallucinations(text, kg, chains, [], []) == []


# --------------------------------------------------------------------------- markdown
def _blocks(markdown: str) -> list[dict]:
    import mistune   # the Markdown parser nbconvert renders notebooks with

    return mistune.create_markdown(renderer=None)(markdown)


def _text(node) -> str:
    return node.get("raw", "") + "".join(_text(c) for c in node.get("children", []))


@pytest.mark.parametrize("question,opposing", [("Tại sao độ ẩm cao làm PM2.5 tăng?", True),
                                               ("Why does rain lower PM2.5?", False)])
def test_answer_sections_render_as_markdown_headings(question, opposing):
    answer = explain(question, DEMO_KG, use_llm=False)
    blocks = _blocks(answer.answer)
    headings = [_text(b) for b in blocks if b["type"] == "heading"]
    assert headings == ["Nguyên nhân chính", "Yếu tố bổ trợ"] + ["Yếu tố ngược chiều"] * opposing + \
        ["Điều kiện/ngoại lệ", "Nguồn trích dẫn"]
    lists = [b for b in blocks if b["type"] == "list"]
    assert not any(title in _text(item) for b in lists for item in b["children"] for title in headings)
    sources = lists[-1]["children"]   # one list item per source, not one run-on paragraph
    assert len(sources) >= 2 and all(_text(s).startswith("[") for s in sources)
