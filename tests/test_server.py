"""``ragkit serve`` as a client sees it: a real server process on 127.0.0.1 serving the
demo sources, real HTTP and WebSocket clients, bounded in count and time."""

import asyncio
import json
import os
import subprocess
import sys
import time

import httpx
import pytest
import websockets

from ragkit.kgqa.answer import NOT_MAPPED
from ragkit.testing.launch import free_port, running_http, serve_command

pytestmark = pytest.mark.slow

Q1 = "What symptoms do diseases treated by Aspirin have?"
Q2 = "What are the common symptoms of diseases treated by both Aspirin and Ibuprofen?"
FOLLOW_UP = "and which of them affect the liver?"
QUESTIONS = {"lexical": "Quy trình thay mũi khoan gồm các bước nào?",
             "spec": "What is SCP in 5G Core?",
             "causal": "Vì sao PM2.5 tăng khi độ ẩm cao?",
             "graph": "Aage Bohr có những giải thưởng gì?",
             "kg": Q1}
DEADLINE_S = 240      # no client below waits longer than this for anything


@pytest.fixture(scope="module")
def server(demo_dir, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("serve-log") / "server.log"
    with running_http(serve_command(port, "--demo", str(demo_dir), "--workers", "4", "--timeout", "120"),
                      f"http://127.0.0.1:{port}/ready", timeout=180, log=log) as proc:
        yield {"http": f"http://127.0.0.1:{port}", "ws": f"ws://127.0.0.1:{port}/ws", "proc": proc, "log": log}


def post(server, body, **kw):
    return httpx.post(server["http"] + "/ask", timeout=DEADLINE_S, **kw,
                      **({"json": body} if not isinstance(body, (bytes, str)) else {"content": body}))


async def ws_ask(url, requests, close_after_first_token=False):
    """Send each request on one connection; return every event per request."""
    out = []
    async with websockets.connect(url, open_timeout=30) as ws:
        for request in requests:
            await ws.send(json.dumps(request))
            events = []
            while True:
                event = json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))
                events.append(event)
                if close_after_first_token and event["type"] == "token":
                    return [events]
                if event["type"] in ("result", "error"):
                    break
            out.append(events)
    return out


def result_of(events):
    assert events[-1]["type"] == "result", events[-1]
    return events[-1]


# --------------------------------------------------------------------------- HTTP
def test_health_and_readiness(server):
    assert httpx.get(server["http"] + "/health").json()["status"] == "ok"
    ready = httpx.get(server["http"] + "/ready")
    assert ready.status_code == 200
    assert ready.json()["pipelines"] == {p: "ready" for p in QUESTIONS}


@pytest.mark.parametrize("pipeline", list(QUESTIONS))
def test_post_ask_answers_every_pipeline_with_citations(server, pipeline):
    response = post(server, {"question": QUESTIONS[pipeline], "pipeline": pipeline, "no_llm": True})
    assert response.status_code == 200, response.text
    data = response.json()
    assert set(data) == {"question", "pipeline", "answer", "citations", "trace", "timings_ms"}
    assert data["pipeline"] == pipeline and data["answer"].strip() and data["citations"]


def test_post_ask_returns_what_the_cli_prints(server, demo_dir):
    cli = subprocess.run([sys.executable, "-m", "ragkit.cli", "ask", Q2, "--pipeline", "kg",
                          "--store", str(demo_dir / "biomed.json.gz"), "--no-llm", "--json"],
                         capture_output=True, text=True, check=True)
    from_cli = json.loads(cli.stdout)
    from_server = post(server, {"question": Q2, "pipeline": "kg", "no_llm": True}).json()
    for data in (from_cli, from_server):
        data.pop("timings_ms")
        for key in [k for k in data["trace"] if k.endswith("_ms")]:
            data["trace"].pop(key)
    assert from_server == from_cli
    assert [s["op"] for s in from_server["trace"]["plan"]["steps"]] == ["expand", "expand", "intersection", "expand"]


def test_a_session_carries_kg_follow_ups(server):
    first = post(server, {"question": Q1, "pipeline": "kg", "no_llm": True, "session": "new"}).json()
    follow = post(server, {"question": FOLLOW_UP, "pipeline": "kg", "no_llm": True, "session": first["session"]}).json()
    alone = post(server, {"question": FOLLOW_UP, "pipeline": "kg", "no_llm": True, "session": "new"}).json()
    assert follow["session"] == first["session"] != alone["session"]
    assert '"them"' in follow["trace"]["standalone"]
    finals = {i["name"] for i in follow["trace"]["context_store"]["final_result"]}
    treated = {i["name"] for k, v in first["trace"]["context_store"].items() if isinstance(v, list)
               for i in v if i.get("type") == "Disease"}
    assert finals and finals <= treated
    assert alone["trace"]["standalone"] == FOLLOW_UP     # another session has no history


def test_a_question_naming_nothing_in_the_graph_is_answered_as_not_mapped(server):
    response = post(server, {"question": "Who is Zorro?", "pipeline": "kg", "no_llm": True})
    assert response.status_code == 200
    assert response.json()["answer"].startswith(NOT_MAPPED)
    assert response.json()["trace"]["plan"] is None


@pytest.mark.parametrize("body, status, message", [
    (b"{not json", 400, "request: not valid JSON"),
    ({"question": "x", "pipeline": "sql"}, 400, "pipeline: must be one of lexical, spec, causal, graph, kg, got 'sql'"),
    ({"pipeline": "kg"}, 400, "question: is missing"),
    ({"question": "   ", "pipeline": "kg"}, 400, "question: is empty"),
    ({"question": Q1, "pipeline": "kg", "k": "3"}, 400, "k: must be int, got str"),
    ({"question": Q1, "pipeline": "kg", "depth": 9}, 400, "depth: must be between 1 and 3, got 9"),
    ({"question": Q1, "pipeline": "kg", "cypher": "MATCH (n) DETACH DELETE n"}, 400, "cypher: not a request field"),
    ({"question": Q1, "session": "../../etc"}, 400, "session: must be 1-64 letters"),
    ({"question": "x" * 2500, "pipeline": "kg"}, 400, "question: 2500 characters, over the 2000-character limit"),
    ([Q1], 400, "request: must be a JSON object, got list"),
    ({"question": "y" * 70000}, 413, "request: body over the 65536-byte limit"),
])
def test_malformed_requests_get_a_4xx_with_one_clear_line(server, body, status, message):
    response = post(server, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error.startswith(message) and "\n" not in error


def test_the_graph_survives_an_injection_attempt(server):
    evil = "What treats x'}) DETACH DELETE n //?"
    refused = post(server, {"question": evil, "pipeline": "kg", "no_llm": True})
    assert refused.status_code == 200 and refused.json()["question"] == evil   # answered as text, not run
    data = post(server, {"question": Q1, "pipeline": "kg", "no_llm": True}).json()
    assert data["trace"]["context_store"]["final_result"]


# --------------------------------------------------------------------------- WebSocket
def test_concurrent_websocket_sessions_all_get_complete_answers(server):
    """Ten sessions at once (eight without a model, two streaming the GGUF's tokens), each
    with two questions; every one gets its tokens and then its result."""
    no_llm = [[{"question": QUESTIONS[p], "pipeline": p, "no_llm": True},
               {"question": Q2, "pipeline": "kg", "no_llm": True}]
              for p in ["lexical", "spec", "causal", "graph", "kg", "graph", "kg", "spec"]]
    with_llm = [[{"question": Q1, "pipeline": "kg", "max_tokens": 48},
                 {"question": FOLLOW_UP, "pipeline": "kg", "no_llm": True}] for _ in range(2)]

    async def main():
        return await asyncio.wait_for(asyncio.gather(*(ws_ask(server["ws"], r) for r in no_llm + with_llm)),
                                      DEADLINE_S)

    started = time.monotonic()
    sessions = asyncio.run(main())
    assert time.monotonic() - started < DEADLINE_S
    assert len(sessions) == 10
    for requests, answers in zip(no_llm + with_llm, sessions):
        assert len(answers) == 2
        for request, events in zip(requests, answers):
            assert events[0]["type"] == "start" and events[0]["pipeline"] == request["pipeline"]
            result = result_of(events)
            tokens = [e for e in events if e["type"] == "token"]
            assert tokens, "every answer is streamed"
            assert result["question"] == request["question"] and result["citations"]
            if request.get("no_llm"):
                assert "".join(t["text"] for t in tokens).strip() == result["answer"].strip()
            else:
                assert {t["call"] for t in tokens} == {1}
                assert "".join(t["text"] for t in tokens) == result["trace"]["raw_answer"]
    for answers in sessions[-2:]:     # the connection is the session: the follow-up saw turn 1
        assert '"them"' in result_of(answers[1])["trace"]["standalone"]


def test_a_bad_websocket_message_gets_an_error_and_the_connection_stays_open(server):
    async def main():
        async with websockets.connect(server["ws"]) as ws:
            await ws.send("{oops")
            bad = json.loads(await asyncio.wait_for(ws.recv(), 30))
            await ws.send(json.dumps({"question": Q1, "pipeline": "nope"}))
            wrong = json.loads(await asyncio.wait_for(ws.recv(), 30))
            await ws.send(json.dumps({"question": Q1, "pipeline": "kg", "no_llm": True}))
            events = []
            while not events or events[-1]["type"] not in ("result", "error"):
                events.append(json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S)))
            return bad, wrong, events

    bad, wrong, events = asyncio.run(main())
    assert bad == {"type": "error", "status": 400, "error": bad["error"]} and bad["error"].startswith("request: not valid JSON")
    assert wrong["status"] == 400 and wrong["error"].startswith("pipeline: must be one of")
    assert result_of(events)["trace"]["context_store"]["final_result"]


def test_the_server_keeps_serving_after_a_client_leaves_mid_stream(server):
    async def main():
        left = await ws_ask(server["ws"], [{"question": Q2, "pipeline": "kg", "max_tokens": 200}],
                            close_after_first_token=True)
        after = await ws_ask(server["ws"], [{"question": Q1, "pipeline": "kg", "max_tokens": 32},
                                            {"question": QUESTIONS["graph"], "pipeline": "graph", "no_llm": True}])
        return left, after

    left, after = asyncio.run(asyncio.wait_for(main(), DEADLINE_S))
    assert left[0][-1]["type"] == "token"
    assert all(result_of(events)["citations"] for events in after)
    assert server["proc"].poll() is None
    assert httpx.get(server["http"] + "/health").status_code == 200
    assert "Traceback" not in server["log"].read_text()


def test_serve_refuses_bad_options():
    run = lambda *a: subprocess.run([sys.executable, "-m", "ragkit.cli", "serve", *a], capture_output=True,
                                    text=True, timeout=60, env={**os.environ})
    out = run("--port", "0")
    assert out.returncode == 3 and out.stderr.strip() == ("ragkit: error: serve: no source given "
                                                          "(--index, --spec-store, --kg, --graph, --store, or --demo DIR; "
                                                          "or --embeddings-only)")
    out = run("--kg", "data/merged_knowledge_graph.json", "--timeout", "0")
    assert out.returncode == 3 and out.stderr.strip() == "ragkit: error: --timeout: must be positive, got 0.0"
