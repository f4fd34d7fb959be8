"""The server's own logic with a stand-in service (no sources, no model): limits, timeouts,
error mapping, sessions, event order. The real server is tested in test_server.py."""

import time

import pytest
from fastapi.testclient import TestClient

from ragkit.config import LLMConfig
from ragkit.errors import InputError, ModelError, StoreUnavailableError
from ragkit.pipelines.base import Answer
from ragkit.pipelines.kg import KGTrace
from ragkit.kgqa.answer import check_entities
from ragkit.server.access import check_exposure, is_loopback
from ragkit.server import HTTPProblem, ServeLimits, Sessions, create_app


class StandIn:
    """Answers after ``delay`` seconds, writes its answer through on_token like a model, or
    raises ``fail``."""

    llm_config = LLMConfig()

    def __init__(self, delay=0.0, fail=None, tokens=0):
        self.delay, self.fail, self.closed, self.tokens = delay, fail, False, tokens
        self.written, self.stopped = 0, None

    def available(self):
        return ["kg"]

    def health(self):
        return {"kg": "ready"}

    def answer(self, request, on_token=None):
        if self.tokens:              # a slow model: one piece every 20 ms
            try:
                for _ in range(self.tokens):
                    time.sleep(0.02)
                    on_token("x", 1)
                    self.written += 1
            except BaseException as exc:
                self.stopped = type(exc).__name__
                raise
            self.stopped = "finished"
        time.sleep(self.delay)
        if self.fail:
            raise self.fail
        text = f"echo: {request.question}"
        if on_token and not request.no_llm:
            for piece in text.split(" "):
                on_token(piece + " ", 1)
        turn = {"question": request.question, "history": len(request.history or [])}
        trace = KGTrace(turn=None if request.question == "nothing" else turn)   # kg: no plan, no turn
        return Answer(request.question, request.pipeline, text, [], trace, {})

    def close(self):
        self.closed = True


def client(service, keys=(), cors_origins=(), log_questions=False, **limits):
    return TestClient(create_app(service, ServeLimits(**limits), keys=list(keys), cors_origins=list(cors_origins),
                                 log_questions=log_questions), base_url="http://127.0.0.1")


def test_a_slow_answer_is_a_504_and_the_server_goes_on():
    with client(StandIn(delay=1.0), timeout_s=0.2) as c:
        slow = c.post("/ask", json={"question": "q", "pipeline": "kg"})
        assert slow.status_code == 504
        assert slow.json() == {"error": "request: no answer within 0.2 s"}
        assert c.get("/health").status_code == 200


@pytest.mark.parametrize("fail, status", [(ModelError("llm server x: not reachable"), 502),
                                          (StoreUnavailableError("store bolt://x: Neo4j is not reachable"), 503),
                                          (InputError("question: is empty"), 400),
                                          (RuntimeError("boom"), 500)])
def test_errors_map_to_statuses_with_one_line(fail, status):
    with client(StandIn(fail=fail)) as c:
        response = c.post("/ask", json={"question": "q", "pipeline": "kg"})
    assert response.status_code == status
    assert "\n" not in response.json()["error"]
    if status == 500:
        assert response.json()["error"] == "internal error (RuntimeError); see the server log"


def test_websocket_events_come_in_order_and_the_connection_is_a_session():
    service = StandIn()
    with client(service) as c, c.websocket_connect("ws://127.0.0.1/ws") as ws:
        ws.send_json({"question": "one two three", "pipeline": "kg"})
        events = [ws.receive_json() for _ in range(6)]
        ws.send_json({"question": "again", "pipeline": "kg", "no_llm": True})
        second = [ws.receive_json() for _ in range(4)]
    assert [e["type"] for e in events] == ["start", "token", "token", "token", "token", "result"]
    assert "".join(e["text"] for e in events[1:5]) == "echo: one two three "
    assert events[-1]["replaced"] is False              # the streamed text is the answer
    assert [e["type"] for e in second] == ["start", "token", "token", "result"]
    assert second[1]["call"] == 0                       # no model: the answer in pieces
    assert second[-1]["trace"]["turn"]["history"] == 1  # the first turn was remembered
    assert events[0]["session"] == second[0]["session"]
    assert service.closed


def test_a_websocket_timeout_is_an_error_event():
    with client(StandIn(delay=1.0), timeout_s=0.2) as c, c.websocket_connect("ws://127.0.0.1/ws") as ws:
        ws.send_json({"question": "q", "pipeline": "kg"})
        assert ws.receive_json()["type"] == "start"
        assert ws.receive_json() == {"type": "error", "status": 504, "error": "request: no answer within 0.2 s"}


def test_readiness_reports_each_source():
    with client(StandIn()) as c:
        for _ in range(50):
            ready = c.get("/ready")
            if ready.status_code == 200:
                break
            time.sleep(0.05)
    assert ready.status_code == 200 and ready.json()["pipelines"] == {"kg": "ready"}


def test_sessions_keep_the_last_turns_of_each_owners_most_recent_conversations():
    sessions = Sessions(per_owner=2, max_turns=3)
    a, b = sessions.open("me"), sessions.open("me")
    theirs = sessions.open("them")
    for i in range(5):
        sessions.add("me", a, {"n": i})
    sessions.history("me", a)            # a is now my most recent
    c = sessions.open("me")              # b, my least recent, is dropped; theirs stays
    assert [t["n"] for t in sessions.history("me", a)] == [2, 3, 4]
    assert sessions.history("me", c) == [] and sessions.history("them", theirs) == []
    for owner, session in (("me", b), ("them", a), ("me", theirs)):
        with pytest.raises(HTTPProblem) as missing:
            sessions.history(owner, session)
        assert missing.value.status == 404
    assert len(sessions) == 3 and len({a, b, c, theirs}) == 4 and len(a) == 32


def test_the_answer_check_refuses_talk_of_json_keys_or_ai():
    store = {"diseases_A": [{"id": "d1", "name": "Fever"}], "final_result": [{"id": "s1", "name": "Chills"}]}
    nodes = [{"id": "d1", "name": "Fever"}, {"id": "s1", "name": "Chills"}]
    assert check_entities("Fever has the symptom Chills.", store, nodes).grounded
    for text in ("The JSON shows Chills.", "In final_result: Chills.", "As an AI, I found Chills.",
                 "diseases_A holds Fever, whose symptom is Chills."):
        check = check_entities(text, store, nodes)
        assert not check.grounded and check.reason.startswith("mentions the context's internals")


def test_a_timeout_stops_the_generation_behind_it():
    service = StandIn(tokens=250)      # five seconds of tokens
    with client(service, timeout_s=0.2) as c:
        assert c.post("/ask", json={"question": "q", "pipeline": "kg"}).status_code == 504
        for _ in range(200):
            if service.stopped:
                break
            time.sleep(0.05)
    assert service.stopped == "Cancelled"
    assert service.written < 250


def test_a_kg_question_with_no_plan_keeps_its_session_working():
    with client(StandIn()) as c:
        first = c.post("/ask", json={"question": "nothing", "pipeline": "kg", "session": "new"})
        second = c.post("/ask", json={"question": "q", "pipeline": "kg", "session": first.json()["session"]})
    assert first.status_code == second.status_code == 200
    assert second.json()["trace"]["turn"]["history"] == 0


@pytest.mark.parametrize("body, message", [
    ('{"question": "q", "k": ' + "9" * 5000 + "}", "request: not valid JSON"),
    ("[" * 60000, "request: not valid JSON"),
    ('{"question": "\\ud800 hi", "pipeline": "kg"}', "request: holds text that is not valid Unicode"),
    ('{"question": "q", "pipeline": "kg", "history": [1]}', "history[0]: must be a turn of an earlier kg answer"),
    ('{"question": "q", "pipeline": "kg", "history": [{}]}', "history[0]: must be a turn"),
    ('{"question": "q", "pipeline": "causal", "at": "yesterday"}', "at: not a date and time"),
    ('{"question": "q", "pipeline": "causal", "at": "2014-01-01T00:00:00+08:00"}', "at: must be a local date"),
    ('{"question": "q", "max_tokens": 0}', "max_tokens: must be between 1 and 4096"),
    ('{"question": "q", "session": "s1\\n"}', "session: must be 1-64"),
    ('{"question": "q", "method": "splade"}', "method: must be one of bm25, dense, hybrid, auto, graph, hybrid+graph, communities, got 'splade'"),
    ('{"question": "q", "rerank": "cross"}', "rerank: must be one of none, llm, got 'cross'"),
    ('{"question": "q", "rerank": true}', "rerank: must be str, got bool"),
    ('{"question": "q", "rerank": "llm", "k": 8, "rerank_depth": 5}', "rerank_depth: must be at least k (8), got 5"),
    ('{"question": "q", "rerank_depth": 500}', "rerank_depth: must be between 1 and 100, got 500"),
    ('{"question": "q", "steps": 4}', "steps: must be between 1 and 3, got 4"),
    ('{"question": "q", "steps": true}', "steps: must be int, got bool"),
])
def test_odd_json_is_a_400_not_a_500(body, message):
    with client(StandIn()) as c:
        response = c.post("/ask", content=body.encode("utf-8"))
    assert response.status_code == 400, response.text
    assert response.json()["error"].startswith(message)


def test_binary_frames_and_bad_session_ids_on_the_websocket():
    with client(StandIn()) as c:
        with c.websocket_connect("ws://127.0.0.1/ws") as ws:
            ws.send_bytes(b'{"question": "q"}')
            assert ws.receive_json() == {"type": "error", "status": 400,
                                         "error": "request: send JSON as a text frame, not binary"}
            ws.send_json({"question": "q", "pipeline": "kg", "no_llm": True})
            assert ws.receive_json()["type"] == "start"
        with c.websocket_connect("ws://127.0.0.1/ws?session=" + "x" * 65) as ws:
            assert ws.receive_json()["error"].startswith("session: must be 1-64")


def test_the_result_says_when_the_streamed_text_was_replaced():
    from ragkit.server import replacement

    data = {"answer": "The evidence says X [1].", "trace": {"answer_source": "fallback",
                                                           "fallback_reason": "the check failed: 40% support"}}
    assert replacement({1: ["Made ", "up."]}, data) == {"replaced": True,
                                                        "replaced_because": "the check failed: 40% support"}
    assert replacement({1: ["x"], 2: ["The evidence ", "says X [1]."]}, data) == {"replaced": False}  # the re-ask
    assert replacement({}, data) == {"replaced": False}       # nothing streamed by a model


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                            ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
                                            ("::", False), ("192.168.1.10", False), ("example.org", False)])
def test_only_loopback_may_listen_without_a_key(host, loopback):
    assert is_loopback(host) is loopback
    if loopback:
        check_exposure(host, [])
    else:
        with pytest.raises(InputError, match="listening beyond loopback needs --api-key"):
            check_exposure(host, [])
    check_exposure(host, ["k" * 32])


def test_a_key_past_its_questions_in_flight_gets_a_429_and_other_keys_do_not():
    import threading

    mine, theirs = "m" * 20, "t" * 20
    with client(StandIn(delay=0.6), keys=[mine, theirs], questions_per_key=2) as c:
        statuses = []

        def ask(key):
            statuses.append(c.post("/ask", json={"question": "q", "pipeline": "kg"},
                                   headers={"Authorization": f"Bearer {key}"}).status_code)

        threads = [threading.Thread(target=ask, args=(mine,)) for _ in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        over = c.post("/ask", json={"question": "q", "pipeline": "kg"}, headers={"Authorization": f"Bearer {mine}"})
        other = c.post("/ask", json={"question": "q", "pipeline": "kg"}, headers={"Authorization": f"Bearer {theirs}"})
        for t in threads:
            t.join()
        after = c.post("/ask", json={"question": "q", "pipeline": "kg"}, headers={"Authorization": f"Bearer {mine}"})
    assert over.status_code == 429 and over.json()["error"].startswith("request: 2 questions of this key")
    assert other.status_code == 200 and statuses == [200, 200] and after.status_code == 200


def test_cors_is_off_unless_an_origin_is_given():
    with client(StandIn()) as c:
        plain = c.post("/ask", json={"question": "q", "pipeline": "kg"}, headers={"Origin": "https://app.example"})
        preflight = c.options("/ask", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
    assert plain.status_code == 403 and "access-control-allow-origin" not in plain.headers
    assert "access-control-allow-origin" not in preflight.headers


def test_questions_are_logged_only_when_asked(caplog):
    import logging

    for log_questions in (False, True):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ragkit.server"), client(StandIn(), log_questions=log_questions) as c:
            c.post("/ask", json={"question": "private words", "pipeline": "kg"})
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ask 200")]
        assert len(lines) == 1 and ("private words" in lines[0]) is log_questions


def test_an_unexpected_error_mid_stream_closes_the_websocket_with_1011():
    from starlette.websockets import WebSocketDisconnect

    class Unsendable(StandIn):
        def answer(self, request, on_token=None):
            answer = super().answer(request, on_token)
            answer.timings_ms = {"not json": {1}}       # send_json cannot write a set
            return answer

    with client(Unsendable()) as c, c.websocket_connect("ws://127.0.0.1/ws") as ws:
        ws.send_json({"question": "q", "pipeline": "kg", "no_llm": True})
        assert ws.receive_json()["type"] == "start"
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                ws.receive_json()
    assert closed.value.code == 1011
