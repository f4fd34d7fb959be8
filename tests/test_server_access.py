"""Who may use ``ragkit serve`` and how it holds up against careless or hostile clients: API
keys, server-issued conversations private to their key, origins, slow and broken requests.
A real server process on 127.0.0.1 (the kg pipeline over the bundled biomedical KG, which
loads in a second), real HTTP, raw-socket and WebSocket clients."""

import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest
import websockets

from ragkit.testing.launch import free_port, running_http, serve_command

KEY_A = "a" * 8 + "-test-key-0123456789"
KEY_B = "b" * 8 + "-test-key-0123456789"
APP_ORIGIN = "https://app.example"
Q1 = "What symptoms do diseases treated by Aspirin have?"
FOLLOW_UP = "and which of them affect the liver?"
READ_TIMEOUT_S = 2


def biomed_store(folder) -> str:
    """The demo biomedical KG imported into a typed store in ``folder``."""
    from ragkit.kgqa.importer import import_kg
    from ragkit.kgqa.store import open_typed_store

    store = folder / "biomed.json.gz"
    with open_typed_store(str(store)) as graph:
        import_kg("data/biomed/nodes.csv", "data/biomed/edges.csv", graph)
    return str(store)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-access")
    store = biomed_store(root)
    port = free_port()
    log = root / "server.log"
    command = serve_command(port, "--store", str(store), "--api-key", KEY_A, "--api-key", KEY_B,
                            "--sessions-per-key", "3", "--read-timeout", str(READ_TIMEOUT_S),
                            "--cors-origin", APP_ORIGIN, "--log-level", "info")
    with running_http(command, f"http://127.0.0.1:{port}/health", timeout=120, log=log) as proc:
        for _ in range(200):      # /ready answers 200 (without details) once the KG is in
            if httpx.get(f"http://127.0.0.1:{port}/ready").status_code == 200:
                break
            time.sleep(0.1)
        yield {"http": f"http://127.0.0.1:{port}", "ws": f"ws://127.0.0.1:{port}/ws", "port": port,
               "proc": proc, "log": log}


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def ask(server, body, key=KEY_A, **kw):
    return httpx.post(server["http"] + "/ask", json=body, headers={**auth(key), **kw.pop("headers", {})},
                      timeout=60, **kw)


def kg(question, session=None):
    return {"question": question, "pipeline": "kg", "no_llm": True, **({"session": session} if session else {})}


# --------------------------------------------------------------------------- keys
@pytest.mark.slow
def test_serve_refuses_to_listen_beyond_loopback_without_a_key():
    env = {k: v for k, v in os.environ.items() if k != "RAGKIT_API_KEY"}
    # --timeout 0 is refused too, later: a server that lost the check stops before it listens.
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "serve", "--host", "0.0.0.0", "--port", "0",
                          "--kg", "data/merged_knowledge_graph.json", "--timeout", "0"], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 3
    assert out.stderr.startswith("ragkit: error: --host 0.0.0.0: listening beyond loopback needs --api-key "
                                 "or RAGKIT_API_KEY") and out.stderr.count("\n") == 1
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "serve", "--host", "0.0.0.0",
                          "--kg", "data/merged_knowledge_graph.json", "--timeout", "0"], capture_output=True,
                         text=True, timeout=60, env={**env, "RAGKIT_API_KEY": "short"})
    assert out.returncode == 3 and "must be at least 16 printable ASCII characters" in out.stderr


def test_every_endpoint_but_health_needs_the_key(server):
    for method, path in [("POST", "/ask"), ("GET", "/"), ("GET", "/docs"), ("GET", "/openapi.json")]:
        for headers in ({}, auth("not-the-key-but-long-enough"), {"Authorization": KEY_A}):
            response = httpx.request(method, server["http"] + path, headers=headers, json=kg(Q1))
            assert response.status_code == 401, (path, headers)
            assert response.json()["error"].startswith("authorization: ")
            assert response.headers["www-authenticate"] == "Bearer"
    assert httpx.get(server["http"] + "/health").json()["status"] == "ok"
    assert httpx.get(server["http"] + "/ready").json() == {"ready": True}        # the status, no details
    assert httpx.get(server["http"] + "/ready", headers=auth(KEY_B)).json()["pipelines"] == {"kg": "ready"}
    for key in (KEY_A, KEY_B):
        assert ask(server, kg(Q1), key=key).status_code == 200


def test_the_websocket_handshake_needs_the_key(server):
    async def main():
        refused = []
        for headers in ({}, auth("not-the-key-but-long-enough")):
            with pytest.raises(websockets.InvalidStatus) as caught:
                await websockets.connect(server["ws"], additional_headers=headers, open_timeout=10)
            refused.append(caught.value.response)
        async with websockets.connect(server["ws"], additional_headers=auth(KEY_A)) as ws:
            await ws.send(json.dumps(kg(Q1)))
            while (event := json.loads(await asyncio.wait_for(ws.recv(), 30)))["type"] not in ("result", "error"):
                pass
        return refused, event

    refused, event = asyncio.run(main())
    assert [r.status_code for r in refused] == [401, 401]
    assert json.loads(refused[0].body)["error"] == "authorization: send the API key as 'Authorization: Bearer <key>'"
    assert json.loads(refused[1].body)["error"] == "authorization: the API key is not valid"
    assert event["type"] == "result" and event["trace"]["context_store"]["final_result"]
    assert "without completing handshake" not in server["log"].read_text()


# --------------------------------------------------------------------------- sessions
def test_sessions_are_issued_by_the_server_and_private_to_their_key(server):
    first = ask(server, kg(Q1, "new")).json()
    session = first["session"]
    assert len(session) >= 32 and session != "new"
    follow = ask(server, kg(FOLLOW_UP, session)).json()
    assert follow["session"] == session and '"them"' in follow["trace"]["standalone"]
    stolen = ask(server, kg(FOLLOW_UP, session), key=KEY_B)            # another key: as if it did not exist
    assert stolen.status_code == 404 and stolen.json()["error"].startswith(f"session: {session!r} is not open")
    chosen = ask(server, kg(Q1, "ana"))                                 # ids are not the client's to choose
    assert chosen.status_code == 404 and '"session": "new"' in chosen.json()["error"]
    assert "session" not in ask(server, kg(Q1)).json()                  # no session asked, none opened


def test_a_key_opening_many_sessions_drops_only_its_own(server):
    mine = ask(server, kg(Q1, "new")).json()["session"]
    theirs = [ask(server, kg(Q1, "new"), key=KEY_B).json()["session"] for _ in range(5)]   # 3 per key
    assert ask(server, kg(FOLLOW_UP, mine)).status_code == 200
    assert [ask(server, kg(FOLLOW_UP, s), key=KEY_B).status_code for s in theirs] == [404, 404, 200, 200, 200]


def test_a_websocket_connection_is_a_server_issued_session_of_its_key(server):
    async def main():
        async with websockets.connect(server["ws"], additional_headers=auth(KEY_A)) as ws:
            await ws.send(json.dumps(kg(Q1)))
            start = json.loads(await ws.recv())
        async with websockets.connect(f"{server['ws']}?session={start['session']}",
                                      additional_headers=auth(KEY_B)) as ws:
            refused = json.loads(await asyncio.wait_for(ws.recv(), 30))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 30)
        return start, refused, closed.value.rcvd.code

    start, refused, code = asyncio.run(main())
    assert len(start["session"]) >= 32
    assert refused["type"] == "error" and refused["status"] == 404 and code == 1008


# --------------------------------------------------------------------------- origins and logs
def test_web_pages_of_other_origins_are_refused_and_cors_is_only_for_the_one_given(server):
    other = ask(server, kg(Q1), headers={"Origin": "http://evil.example"})
    assert other.status_code == 403 and "access-control-allow-origin" not in other.headers
    assert other.json()["error"] == "origin: http://evil.example may not use this server (allow it with --cors-origin)"
    allowed = ask(server, kg(Q1), headers={"Origin": APP_ORIGIN})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == APP_ORIGIN
    preflight = httpx.options(server["http"] + "/ask", headers={
        "Origin": APP_ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type"})
    assert preflight.status_code == 200 and "authorization" in preflight.headers["access-control-allow-headers"].lower()
    same = ask(server, kg(Q1), headers={"Origin": server["http"]})          # the server's own pages (/docs)
    assert same.status_code == 200


@pytest.fixture(scope="module")
def keyless(tmp_path_factory):
    """A loopback server without a key (``make serve``'s setup), answering also to one more name."""
    root = tmp_path_factory.mktemp("serve-keyless")
    store = biomed_store(root)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("RAGKIT_API_KEY", "RAGKIT_ALLOWED_HOSTS")}
    command = serve_command(port, "--store", str(store), "--allowed-host", "rag.internal")
    with running_http(command, f"http://127.0.0.1:{port}/health", timeout=120, log=root / "server.log", env=env):
        for _ in range(200):      # the KG loads in the background
            if httpx.get(f"http://127.0.0.1:{port}/ready").status_code == 200:
                break
            time.sleep(0.1)
        yield {"http": f"http://127.0.0.1:{port}", "ws": f"ws://127.0.0.1:{port}/ws", "port": port}


@pytest.mark.parametrize("path, method", [("/ask", "post"), ("/v1/chat/completions", "post"), ("/ready", "get"),
                                          ("/openapi.json", "get")])
def test_a_dns_rebinding_page_is_refused_by_its_host_name(keyless, path, method):
    # a page on evil.example that pointed its name at 127.0.0.1: the browser sends its own
    # name as Host, and its Origin agrees with it
    port = keyless["port"]
    forged = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    body = kg(Q1) if path == "/ask" else {"model": "ragkit-kg-no-llm", "messages": [{"role": "user", "content": Q1}]}
    kwargs = {"json": body} if method == "post" else {}
    refused = httpx.request(method.upper(), keyless["http"] + path, headers=forged, timeout=60, **kwargs)
    assert refused.status_code == 403, refused.text
    message = refused.json()["error"]
    message = message["message"] if isinstance(message, dict) else message
    assert message == "host: 'evil.example' is not a name this server answers to (allow it with --allowed-host)"
    plain = httpx.request(method.upper(), keyless["http"] + path, headers={"Host": f"EVIL.example.:{port}"},
                          timeout=60, **kwargs)
    assert plain.status_code == 403        # without an Origin too, whatever the case or a final dot


def test_the_websocket_handshake_is_refused_by_its_host_name(keyless):
    async def handshake():
        try:
            async with websockets.connect(keyless["ws"], additional_headers={
                    "Host": f"evil.example:{keyless['port']}", "Origin": f"http://evil.example:{keyless['port']}"}):
                return None
        except websockets.InvalidStatus as exc:
            return exc.response.status_code

    assert asyncio.run(handshake()) == 403


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}", "rag.internal",
                                  "rag.internal:{port}"])
def test_loopback_names_and_the_allowed_host_are_answered(keyless, host):
    host = host.format(port=keyless["port"])
    answer = httpx.post(keyless["http"] + "/ask", json=kg(Q1), headers={"Host": host}, timeout=60)
    assert answer.status_code == 200 and answer.json()["citations"], answer.text
    own_page = httpx.post(keyless["http"] + "/ask", json=kg(Q1), timeout=60,
                          headers={"Host": host, "Origin": f"http://{host}"})
    assert own_page.status_code == 200          # the server's own pages (/docs) by any allowed name


@pytest.mark.slow
def test_an_allowed_host_that_is_not_a_host_name_is_one_line_naming_it():
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "serve", "--kg", "data/merged_knowledge_graph.json",
                          "--allowed-host", "https://rag.internal/ask"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 3 and out.stderr.count("\n") == 1
    assert out.stderr.startswith("ragkit: error: --allowed-host 'https://rag.internal/ask': must be a host name")


def test_the_request_log_names_the_key_but_not_the_question(server):
    secret = "What symptoms do diseases treated by Ibuprofen have?"
    assert ask(server, kg(secret), key=KEY_B).status_code == 200
    text = server["log"].read_text()
    assert secret not in text and "Ibuprofen" not in text
    assert "ask 200 pipeline=kg principal=key:" in text
    assert KEY_A not in text and KEY_B not in text


# --------------------------------------------------------------------------- slow and broken clients
def raw_exchange(port, head, trickle=b"", every_s=0.5, limit_s=10):
    """Send ``head``, then ``trickle`` a byte at a time; return what came back and when the
    server closed the connection (seconds after ``head``)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=limit_s)
    started = time.monotonic()
    sock.sendall(head)
    try:
        for byte in trickle:
            time.sleep(every_s)
            sock.sendall(bytes([byte]))
    except OSError:          # the server has closed it
        pass
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except OSError:
        pass
    sock.close()
    return received, time.monotonic() - started


def test_headers_sent_a_byte_at_a_time_are_cut_off(server):
    received, took = raw_exchange(server["port"], b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", b"y" * 40)
    assert received.startswith(b"HTTP/1.1 408 ")
    assert received.endswith(b'{"error": "request: headers not received within 2 s"}')
    assert took < READ_TIMEOUT_S + 2


def test_a_body_sent_a_byte_at_a_time_is_cut_off(server):
    head = (b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY_A.encode() +
            b"\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
    received, took = raw_exchange(server["port"], head, b"{" + b" " * 100)
    assert received.startswith(b"HTTP/1.1 408 ") and b"connection: close" in received.lower()
    assert received.endswith(b'{"error":"request: body not received within 2 s"}')
    assert took < READ_TIMEOUT_S + 2


def test_an_aborted_body_is_one_log_line_not_a_traceback(server):
    head = (b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY_A.encode() +
            b"\r\nContent-Length: 500\r\n\r\n{\"question\": ")
    sock = socket.create_connection(("127.0.0.1", server["port"]))
    sock.sendall(head)
    time.sleep(0.3)
    sock.close()
    for _ in range(50):
        if "the client left before its body had come" in server["log"].read_text():
            break
        time.sleep(0.1)
    text = server["log"].read_text()
    assert text.count("ask: the client left before its body had come; nothing answered") == 1
    assert "Traceback" not in text and "ClientDisconnect" not in text
    assert ask(server, kg(Q1)).status_code == 200


def test_an_oversized_websocket_message_is_an_error_event_and_the_connection_stays(server):
    async def main():
        async with websockets.connect(server["ws"], additional_headers=auth(KEY_A)) as ws:
            await ws.send(json.dumps({"question": "y" * 70000, "pipeline": "kg"}))
            too_big = json.loads(await asyncio.wait_for(ws.recv(), 30))
            await ws.send(json.dumps(kg(Q1)))
            while (event := json.loads(await asyncio.wait_for(ws.recv(), 30)))["type"] not in ("result", "error"):
                pass
            return too_big, event

    too_big, event = asyncio.run(main())
    assert too_big == {"type": "error", "status": 413, "error": "request: 70034 bytes, over the 65536-byte limit"}
    assert event["type"] == "result"


def test_every_websocket_question_is_one_log_line_even_when_its_client_left_at_once(server):
    """A client that sends its question and closes without reading anything, and one whose
    message is refused: each is a line in the request log (answered, 499 or the refusal)."""
    import re

    def ws_lines() -> int:
        return len(re.findall(r"(?m)^\S+:\s+ws \d{3} ", server["log"].read_text()))

    async def ask_and_leave():
        async with websockets.connect(server["ws"], additional_headers=auth(KEY_A)) as ws:
            await ws.send(json.dumps(kg(Q1)))

    async def refused():
        async with websockets.connect(server["ws"], additional_headers=auth(KEY_A)) as ws:
            await ws.send(json.dumps({"question": "y" * 70000, "pipeline": "kg"}))
            await asyncio.wait_for(ws.recv(), 30)

    before = ws_lines()
    for _ in range(10):
        asyncio.run(ask_and_leave())
    asyncio.run(refused())
    for _ in range(100):
        if ws_lines() - before >= 11:
            break
        time.sleep(0.1)
    text = server["log"].read_text()
    assert ws_lines() - before == 11, text[-3000:]
    assert "ws 413 principal=" in text and "Traceback" not in text


def test_errors_name_no_path_on_the_server(tmp_path):
    hidden = tmp_path / "private-folder" / "lexical-index"
    hidden.mkdir(parents=True)
    (hidden / "notes.txt").write_text("not an index")
    port = free_port()
    with running_http(serve_command(port, "--index", str(hidden)), f"http://127.0.0.1:{port}/health", timeout=120,
                      log=tmp_path / "server.log"):
        for _ in range(100):        # the index is read in the background: /ready says when it failed
            ready = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=30)
            if "error" in ready.text:
                break
            time.sleep(0.1)
        asked = httpx.post(f"http://127.0.0.1:{port}/ask", json={"question": "What is it?", "pipeline": "lexical",
                                                                "no_llm": True}, timeout=60)
        chat = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60, json={
            "model": "ragkit-lexical-no-llm", "messages": [{"role": "user", "content": "What is it?"}]})
    assert asked.status_code == 503 and asked.json()["error"].startswith("index lexical-index: not a ragkit BM25 index")
    assert chat.status_code == 503 and "index lexical-index: not a ragkit BM25 index" in chat.text
    assert "error: index lexical-index: not a ragkit BM25 index" in ready.json()["pipelines"]["lexical"]
    for reply in (asked, chat, ready):
        assert str(tmp_path) not in reply.text and "private-folder" not in reply.text


def test_websocket_connections_are_capped_per_key_and_in_all(tmp_path):
    store = biomed_store(tmp_path)
    port = free_port()
    command = serve_command(port, "--store", str(store), "--api-key", KEY_A, "--api-key", KEY_B,
                            "--websockets-per-key", "2", "--websockets", "3", "--log-level", "info",
                            "--timeout", "60")      # no model loaded to measure its speed (its load silences stderr)
    url = f"ws://127.0.0.1:{port}/ws"

    async def scenario():
        async def refusal(key):
            try:
                async with websockets.connect(url, additional_headers=auth(key), open_timeout=10):
                    return None
            except websockets.InvalidStatus as exc:
                return exc.response.status_code, json.loads(exc.response.body)["error"]

        first = [await websockets.connect(url, additional_headers=auth(KEY_A)) for _ in range(2)]
        per_key = await refusal(KEY_A)
        other = await websockets.connect(url, additional_headers=auth(KEY_B))      # the third in all
        in_all = await refusal(KEY_B)
        await first[0].close()
        await asyncio.sleep(0.3)
        again = await websockets.connect(url, additional_headers=auth(KEY_B))      # a place came free
        await again.send(json.dumps(kg(Q1)))
        events = []
        while not events or events[-1]["type"] not in ("result", "error"):
            events.append(json.loads(await again.recv()))
        for ws in (first[1], other, again):
            await ws.close()
        return per_key, in_all, events[-1]

    with running_http(command, f"http://127.0.0.1:{port}/health", timeout=120, log=tmp_path / "server.log"):
        per_key, in_all, last = asyncio.run(scenario())
    assert per_key == (429, "connections: 2 WebSocket connections of this key are open; close one "
                            "(or ask several questions on one)")
    assert in_all == (429, "connections: the server has 3 WebSocket connections open; try again later")
    assert last["type"] == "result" and last["citations"]
    assert "ws 429 principal=key:" in (tmp_path / "server.log").read_text()


@pytest.mark.slow
def test_a_timed_out_rerank_frees_its_worker_for_the_next_question(tmp_path):
    """One worker, an LLM rerank of 100 candidates (one model call each) that cannot finish in
    the 10 s deadline, then a question without the model: the rerank stops at its next model
    call after the 504, so the worker is free and the cheap question is answered (before, it
    waited behind the rerank's remaining calls and timed out too)."""
    from ragkit.llm.catalog import installed_path

    index, store = tmp_path / "manuals", biomed_store(tmp_path)
    subprocess.run([sys.executable, "-m", "ragkit.cli", "index", "build", "--corpus", "data/manuals", "--out",
                    str(index)], check=True, capture_output=True, timeout=300)
    port = free_port()
    command = serve_command(port, "--index", str(index), "--store", str(store), "--workers", "1", "--timeout", "10",
                            "--model", str(installed_path("smollm2-135m")), "--log-level", "info")
    slow = {"question": "Các bước vận hành máy khoan an toàn là gì?", "pipeline": "lexical", "no_llm": True,
            "rerank": "llm", "rerank_depth": 100, "k": 3}
    with running_http(command, f"http://127.0.0.1:{port}/health", timeout=120, log=tmp_path / "server.log"):
        for _ in range(300):
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=30).status_code == 200:
                break
            time.sleep(0.1)
        for _ in range(5):      # until the model is loaded (a first try may load it past 10 s)
            warm = httpx.post(f"http://127.0.0.1:{port}/ask", json={**slow, "k": 1, "rerank_depth": 1}, timeout=120)
            if warm.status_code == 200:
                break
        assert warm.status_code == 200, warm.text       # now one call is one call
        reranked = httpx.post(f"http://127.0.0.1:{port}/ask", json=slow, timeout=120)
        cheap = httpx.post(f"http://127.0.0.1:{port}/ask", json=kg(Q1), timeout=120)
    assert reranked.status_code == 504 and reranked.json()["error"].startswith("request: no answer within 10 s")
    assert cheap.status_code == 200, cheap.text
    assert cheap.json()["citations"]
