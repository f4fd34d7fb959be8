"""Answers that arrive as they are written, with stand-in services (no sources, no model):
the OpenAI stream's content is the answer's generation token by token, sent before the
generation ends, and its last chunk carries the check's verdict; a deadline derived from
the model's speed lets a model that is still writing finish, and ends one that stalls.
The real model behind a real ``ragkit serve`` is in test_server_stream.py."""

import contextlib
import json
import threading
import time

import openai
import pytest
import uvicorn
from fastapi.testclient import TestClient

from ragkit.config import LLMConfig
from ragkit.llm.base import generating
from ragkit.pipelines.base import Answer, Citation
from ragkit.pipelines.kg import KGTrace
from ragkit.server import ServeLimits, create_app
from ragkit.testing.launch import free_port


class Writer:
    """A service whose model first writes a plan, then the answer in pieces; the answer's
    second piece waits until ``release`` is set (by the client, once it has the first)."""

    llm_config = LLMConfig()

    def __init__(self, answer="Fever [1] and chills [2].", pieces=("Fever ", "[1] ", "and ", "chills [2]."),
                 gated=True):
        self.answer_text, self.pieces = answer, pieces
        self.release = threading.Event()
        if not gated:
            self.release.set()
        self.waited_out = False     # the client never got the first piece while the generation waited

    def available(self):
        return ["kg"]

    def health(self):
        return {"kg": "ready"}

    def answer(self, request, on_token=None):
        if on_token is not None and not request.no_llm:
            with generating("step"):
                on_token('{"steps": []}', 1)
            with generating("answer"):
                for i, piece in enumerate(self.pieces):
                    if i == 1:          # a guard against a hang, not a limit on speed
                        self.waited_out = not self.release.wait(120)
                    on_token(piece, 2)
        trace = KGTrace(turn=None)
        return Answer(request.question, request.pipeline, self.answer_text, [Citation(1, "d1", "Fever")], trace,
                      {"generation": 1.0})

    def close(self):
        pass


@contextlib.contextmanager
def serving(service, **limits):
    """The app under uvicorn on a free loopback port, in a thread of this process."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(service, ServeLimits(**limits)), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()


def test_the_openai_stream_sends_the_answer_as_it_is_written_then_the_verdict():
    service = Writer()
    with serving(service) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        chunks, content = [], []
        for chunk in client.chat.completions.create(model="ragkit-kg", stream=True,
                                                    messages=[{"role": "user", "content": "What do they cause?"}]):
            chunks.append(chunk)
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece:
                content.append(piece)
                if len(content) == 1:       # the generation waits for this: the piece came before its end
                    service.release.set()
    assert not service.waited_out
    assert content == ["Fever ", "[1] ", "and ", "chills [2]."]       # the answer's generation, not the plan
    assert chunks[0].choices[0].delta.role == "assistant"
    final = chunks[-1]
    assert final.object == "chat.completion.chunk" and final.choices[0].finish_reason == "stop"
    assert final.ragkit["answer"] == "Fever [1] and chills [2]." and final.ragkit["replaced"] is False
    assert [(c["id"], c["title"]) for c in final.ragkit["citations"]] == [(1, "Fever")]
    assert final.ragkit["pipeline"] == "kg" and final.ragkit["trace"] is not None


def test_a_replaced_answer_says_so_in_the_last_chunk():
    service = Writer(answer="Fever [1].", gated=False)
    with TestClient(create_app(service, ServeLimits()),
                    base_url="http://127.0.0.1") as c:
        body = c.post("/v1/chat/completions", json={"model": "ragkit-kg", "stream": True,
                                                    "messages": [{"role": "user", "content": "q"}]}).text
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    streamed = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))
    assert streamed == "Fever [1] and chills [2]."
    verdict = events[-1]["ragkit"]
    assert verdict["answer"] == "Fever [1]." and verdict["replaced"] is True and "replaced_because" in verdict
    assert body.rstrip().endswith("data: [DONE]")


def test_an_answer_without_the_model_still_comes_in_pieces():
    with TestClient(create_app(Writer(gated=False), ServeLimits()),
                    base_url="http://127.0.0.1") as c:
        body = c.post("/v1/chat/completions", json={"model": "ragkit-kg-no-llm", "stream": True,
                                                    "messages": [{"role": "user", "content": "q"}]}).text
    assert body.count('"content": "') >= 4 and '"replaced": false' in body


def test_websocket_tokens_say_what_the_generation_writes():
    with TestClient(create_app(Writer(gated=False), ServeLimits()),
                    base_url="http://127.0.0.1") as c, c.websocket_connect("ws://127.0.0.1/ws") as ws:
        ws.send_json({"question": "q", "pipeline": "kg"})
        events = [ws.receive_json() for _ in range(7)]
    assert [e["type"] for e in events] == ["start", "token", "token", "token", "token", "token", "result"]
    assert [e["purpose"] for e in events[1:6]] == ["step", "answer", "answer", "answer", "answer"]


class Paced:
    """A model that writes ``tokens`` pieces ``gap`` seconds apart, then goes silent for
    ``silence`` seconds before the answer is done."""

    llm_config = LLMConfig()

    def __init__(self, tokens, gap, silence=0.0):
        self.tokens, self.gap, self.silence = tokens, gap, silence

    def available(self):
        return ["kg"]

    def health(self):
        return {"kg": "ready"}

    def answer(self, request, on_token=None):
        with generating("answer"):
            for _ in range(self.tokens):
                time.sleep(self.gap)
                on_token("x ", 1)
        time.sleep(self.silence)
        return Answer(request.question, request.pipeline, "x", [], KGTrace(turn=None), {})

    def close(self):
        pass


def test_a_model_still_writing_past_a_derived_deadline_finishes():
    # 0.1 s floor, no speed measured (a stand-in has no model): 25 tokens 20 ms apart go past it.
    with TestClient(create_app(Paced(tokens=25, gap=0.02), ServeLimits(min_timeout_s=0.1, stall_timeout_s=5.0)),
                    base_url="http://127.0.0.1") as c:
        done = c.post("/ask", json={"question": "q", "pipeline": "kg"})
    assert done.status_code == 200 and done.json()["answer"] == "x"


def test_a_model_that_stalls_past_a_derived_deadline_is_a_504_that_says_so():
    service = Paced(tokens=3, gap=0.02, silence=2.0)
    with TestClient(create_app(service, ServeLimits(min_timeout_s=0.1, stall_timeout_s=0.3)),
                    base_url="http://127.0.0.1") as c:
        stalled = c.post("/ask", json={"question": "q", "pipeline": "kg"})
        assert stalled.status_code == 504
        assert stalled.json()["error"] == (
            "request: no answer within 0.1 s, and the model wrote nothing for 0.3 s (deadline: the model's speed is "
            "not measured: the 0.1 s floor; past it, only 0.3 s without a token ends it; --timeout sets a fixed one)")
        silent = c.post("/ask", json={"question": "q", "pipeline": "kg", "no_llm": True})   # no model: the floor
        assert silent.status_code == 504 and silent.json()["error"].startswith(
            "request: no answer within 0.1 s (deadline: an answer without the model")


@pytest.mark.parametrize("limits, seconds, basis", [
    ({}, 60.0, "the model's speed is not measured: the 60 s floor"),
    ({"timeout_s": 120.0}, 120.0, "--timeout")])
def test_the_index_reports_the_answer_deadline(limits, seconds, basis):
    with TestClient(create_app(Paced(0, 0.0), ServeLimits(**limits)),
                    base_url="http://127.0.0.1") as c:
        index = c.get("/").json()
    assert index["answer_deadline"]["seconds"] == seconds and index["answer_deadline"]["basis"].startswith(basis)
    assert index["answer_deadline"]["model_speed"] is None and index["limits"]["timeout_s"] == limits.get("timeout_s")


# ----------------------------------------------------------------- the real model, a real server
Q1 = "What symptoms do diseases treated by Aspirin have?"


@pytest.fixture(scope="module")
def model_server(tmp_path_factory):
    """``ragkit serve`` with the kg demo store, the tests' GGUF (SmolLM2-135M), no --timeout:
    the deadline comes from the model's speed, measured at start-up."""
    import httpx

    from ragkit.pipelines import get_pipeline
    from ragkit.service import demo_data_dir
    from ragkit.testing.launch import running_http, serve_command

    out = tmp_path_factory.mktemp("stream")
    store = get_pipeline("kg").build_demo(demo_data_dir(), out, progress=False)["typed_kg"]
    port, log = free_port(), out / "server.log"
    url = f"http://127.0.0.1:{port}"
    with running_http(serve_command(port, "--store", store, "--log-level", "info"), url + "/health",
                      timeout=180, log=log):
        for _ in range(1200):               # the warm-up measures the model in the background
            if httpx.get(url + "/").json()["answer_deadline"]["model_speed"]:
                break
            time.sleep(0.25)
        yield {"url": url, "log": log}


@pytest.mark.slow
def test_the_model_answer_streams_as_it_is_written_and_ends_with_the_verdict(model_server):
    client = openai.OpenAI(base_url=model_server["url"] + "/v1", api_key="unused", max_retries=0, timeout=600)
    asked = {"model": "ragkit-kg", "messages": [{"role": "user", "content": Q1}], "max_tokens": 48}
    arrivals = [(time.monotonic(), chunk) for chunk in client.chat.completions.create(
        **asked, stream=True, stream_options={"include_usage": True})]
    content = [(t, c.choices[0].delta.content) for t, c in arrivals if c.choices and c.choices[0].delta.content]
    final = next(c for _, c in arrivals if c.choices and c.choices[0].finish_reason)
    verdict, trace = final.ragkit, final.ragkit["trace"]
    assert len(content) > 1
    # The content is the model's text as it wrote it, piece by piece.
    assert "".join(piece for _, piece in content) == trace["raw_answer"]
    written = trace["generation"]["completion_tokens"]
    assert written <= 48 and len(content) > written / 2
    # The first piece arrived while the model was still writing: the pieces came over (at
    # least a quarter of) the time llama.cpp spent writing them, not at once at the end.
    spread_s = content[-1][0] - content[0][0]
    assert spread_s > 0.25 * trace["generation"]["generation_ms"] / 1000
    assert content[-1][0] <= next(t for t, c in arrivals if c is final)
    # The last chunk is the verdict: the check, and the checked answer, as the non-streamed completion has it.
    whole = client.chat.completions.create(**asked)
    assert isinstance(trace["check"]["passed"], bool) and trace["answer_source"] in ("model", "fallback")
    assert verdict["answer"] == whole.choices[0].message.content
    assert verdict["citations"] == whole.ragkit["citations"] and verdict["citations"]
    assert verdict["replaced"] == (" ".join(trace["raw_answer"].split()) != " ".join(verdict["answer"].split()))
    assert arrivals[-1][1].usage.completion_tokens == whole.usage.completion_tokens


@pytest.mark.slow
def test_the_deadline_follows_the_measured_speed_and_is_in_the_start_up_log(model_server):
    import httpx

    deadline = httpx.get(model_server["url"] + "/").json()["answer_deadline"]
    speed = deadline["model_speed"]
    assert speed["model"].endswith(".gguf")
    assert speed["prompt_tokens_per_s"] > 0 and speed["generation_tokens_per_s"] > 0
    needed = 3 * (1728 / speed["prompt_tokens_per_s"] + 320 / speed["generation_tokens_per_s"])
    # the speeds are reported rounded: the server's own figure may round up a second apart
    assert abs(deadline["seconds"] - max(60.0, float(-(-needed // 1)))) <= 1.0 and deadline["stall_s"] >= 30
    log = model_server["log"].read_text()
    line = next(line for line in log.splitlines() if "answer deadline:" in line)
    assert line.startswith("INFO:     answer deadline: ") and " s for a model answer (" in line
    assert f"{speed['model']} measured here at " in line and "--timeout sets a fixed one" in line
    assert "Traceback" not in log
