"""The registry is the only place that knows the pipelines: a pipeline declared in one module
and registered in one line gets the command line, ``POST /ask`` with its options in the
OpenAPI schema, the OpenAI chat route and the profiler, with no other change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ragkit.errors import InputError
from ragkit.pipelines import options, sources_from_flags
from ragkit.service import AskRequest, FIELD_TYPES, Service, Sources

from .conftest import ROOT

NOTES = "The pump needs oil every week.\nThe valve is checked daily.\nThe pump hums when it runs dry.\n"


def run(script: str, tmp_path) -> dict:
    """``script`` run after registering the notes pipeline (before ragkit.service is
    imported, as a user's own code would); it prints one JSON object."""
    (tmp_path / "notes.txt").write_text(NOTES, encoding="utf-8")
    code = ("import json, sys\nimport ragkit.pipelines as registry\n"
            "registry.register('notes', 'tests.toy_pipeline', 'NotesPipeline')\n" + textwrap.dedent(script))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NOTES": str(tmp_path / "notes.txt")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip(), f"nothing on stdout; stderr: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_registered_pipeline_gets_the_command_line(tmp_path):
    out = run("""
        import contextlib, io, os
        from ragkit.cli import main
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = main(["ask", "Which note mentions the pump?", "--pipeline", "notes", "--notes", os.environ["NOTES"],
                         "--keep", "1", "--shout", "--no-llm", "--json"])
        help_text = io.StringIO()
        with contextlib.redirect_stdout(help_text), contextlib.suppress(SystemExit):
            main(["ask", "--help"])
        print(json.dumps({"code": code, "answer": json.loads(buffer.getvalue()), "help": help_text.getvalue()}))
    """, tmp_path)
    assert out["code"] == 0
    assert out["answer"]["pipeline"] == "notes"
    assert out["answer"]["answer"] == "THE PUMP NEEDS OIL EVERY WEEK. [1]"
    assert out["answer"]["citations"][0]["doc_id"] == "notes#1"
    assert "match" in out["answer"]["timings_ms"]
    assert "--notes" in out["help"] and "notes: the answer in capitals" in out["help"]


@pytest.mark.slow
def test_a_registered_pipeline_gets_the_server_and_the_profiler(tmp_path):
    out = run("""
        import os
        from fastapi.testclient import TestClient
        from ragkit.server import ServeLimits, create_app
        from ragkit.service import Service, Sources
        from ragkit.workbench.latency_study import pipeline_questions, profile_pipelines

        service = Service(Sources(notes=os.environ["NOTES"]))
        # A fixed deadline: no model speed measured in the background (no model is asked here).
        with TestClient(create_app(service, limits=ServeLimits(timeout_s=60)), base_url="http://127.0.0.1") as client:
            schema = client.get("/openapi.json").json()["paths"]["/ask"]["post"]["requestBody"]["content"][
                "application/json"]["schema"]["properties"]
            asked = client.post("/ask", json={"question": "Which note mentions the valve?", "pipeline": "notes",
                                              "no_llm": True, "keep": 1}).json()
            refused = client.post("/ask", json={"question": "pump?", "pipeline": "notes", "keep": "two"})
            models = [m["id"] for m in client.get("/v1/models").json()["data"]]
            chat = client.post("/v1/chat/completions", json={"model": "ragkit-notes-no-llm", "messages": [
                {"role": "user", "content": "Which note mentions the pump?"}]}).json()
        runs = profile_pipelines(service, pipeline_questions(["notes"]), repeats=1)
        print(json.dumps({"schema": schema, "asked": asked, "refused": [refused.status_code, refused.json()],
                          "models": models, "chat": chat["choices"][0]["message"]["content"],
                          "stages": sorted(set(runs.stage))}))
    """, tmp_path)
    assert out["schema"]["keep"]["default"] == 2 and "notes" in out["schema"]["keep"]["description"]
    assert out["schema"]["shout"]["default"] is False
    assert out["asked"]["answer"] == "The valve is checked daily. [1]"
    assert out["refused"][0] == 400 and "keep: must be int" in out["refused"][1]["error"]
    assert out["models"][:2] == ["ragkit-notes", "ragkit-notes-no-llm"]
    assert out["chat"].startswith("The pump needs oil every week. [1] The pump hums")
    assert "match" in out["stages"] and "total" in out["stages"]


def test_a_registered_pipeline_gets_the_scaling_study_and_a_demo_source(tmp_path, demo_dir):
    out = run(f"""
        import shutil
        from pathlib import Path
        from ragkit.service import build_demo_sources
        from ragkit.workbench.latency_profiling import ProfilingParams
        from ragkit.workbench.latency_study import scaling, size_units

        params = ProfilingParams(sizes="notes=3,5,7")
        table = scaling({{"notes": params.sizes_by_pipeline["notes"]}}, "unused", repeats=1)
        demo = Path({str(tmp_path)!r}) / "demo"
        shutil.copytree({str(demo_dir)!r}, demo, symlinks=True)      # the other sources, reused
        print(json.dumps({{"units": size_units(), "sizes": params.sizes_by_pipeline,
                          "rows": sorted(set(zip(table.pipeline, table["size"]))),
                          "demo": build_demo_sources(demo).given()}}))
    """, tmp_path)
    assert out["units"]["notes"] == "notes" and out["units"]["lexical"] == "chunks"
    assert out["sizes"]["notes"] == [3, 5, 7] and out["sizes"]["kg"] == [1000, 10000, 100000]
    assert out["rows"] == [["notes", 3], ["notes", 5], ["notes", 7]]
    assert out["demo"]["notes"].endswith("notes.txt")
    assert {"index", "spec_store", "evidence_kg", "graph", "typed_kg", "notes"} <= set(out["demo"])


def test_the_request_and_the_flags_come_from_the_declarations():
    assert {"k", "method", "steps", "depth", "history", "llm_planner", "at"} <= set(options())
    assert FIELD_TYPES["k"] is int and FIELD_TYPES["history"] is list
    assert sources_from_flags({"--store": "s.json.gz", "--index": "idx"}, "spec") == \
        {"spec_store": "s.json.gz", "index": "idx"}
    assert sources_from_flags({"--store": "s.json.gz"}, "kg") == {"typed_kg": "s.json.gz"}
    with pytest.raises(InputError, match="rerank_depth: must be at least k"):
        AskRequest("q", rerank="llm", rerank_depth=2, k=5)
    with pytest.raises(InputError, match="method: must be one of"):
        AskRequest("q", method="magic")
    with pytest.raises(InputError, match="indx: no pipeline reads such a source"):
        Service(Sources(indx="x"))


def test_the_typed_request_holds_every_built_in_option_as_declared():
    """``AskRequest`` is a real class whose fields are the options the built-in pipelines
    declare, with their kinds and defaults; nothing registered from outside, nothing added."""
    import typing
    from dataclasses import MISSING, fields

    from ragkit.service import common_options, request_type

    hints = typing.get_type_hints(AskRequest)
    declared = {o.name: o for o in (*common_options(), *options().values())}
    assert [f.name for f in fields(AskRequest)] == ["question", *declared]
    for f in fields(AskRequest)[1:]:
        option = declared[f.name]
        assert f.default == option.default and f.default_factory is MISSING, f.name
        assert option.kind in {typing.get_origin(t) or t for t in (hints[f.name], *typing.get_args(hints[f.name]))}
    assert request_type() is AskRequest
    request = AskRequest("q", "graph", max_hops=2)
    assert (request.pipeline, request.max_hops, request.k) == ("graph", 2, 4)


def test_the_earlier_source_names_still_name_the_renamed_fields():
    given = Sources(kg="evidence.json", kg_store="typed.json.gz")
    assert given.evidence_kg == given.kg == "evidence.json"
    assert given.typed_kg == given.kg_store == "typed.json.gz"
    assert given == Sources(evidence_kg="evidence.json", typed_kg="typed.json.gz")
    assert given.given() == {"evidence_kg": "evidence.json", "typed_kg": "typed.json.gz"}


def test_a_source_field_no_pipeline_declares_is_no_attribute():
    given = Sources(index="idx")
    assert given.index == "idx" and given.spec_store is None
    with pytest.raises(AttributeError, match="Sources has no field 'indx'"):
        given.indx
