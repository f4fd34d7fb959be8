"""The app: ``POST /ask``, ``/ws``, ``/health`` and ``/ready`` over a ``Service``, the limits
every request is held to, and ``serve``, which runs it under uvicorn (see the package's
docstring)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import InputError
from ..llm.base import generation_purpose
from ..runtime.cancel import cancellable
from ..runtime.extras import requires_extra
from ..pipelines import get_pipeline
from ..pipelines.base import MAX_QUESTION_CHARS
from ..service import AskRequest, Service, ask_request_model, request_type
from .access import LOCAL, LOOPBACK_NAMES, AccessGuard, Connections, InFlight, error_body
from .deadlines import FLOOR_S, Deadlines, overdue, time_left
from .protocol import HTTPProblem, check_session, decode_json, problem_for, replacement, without_paths

with requires_extra("server"):
    import uvicorn
    from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
    from fastapi.responses import JSONResponse, Response

log = logging.getLogger("ragkit.server")
NEW_SESSION = "new"      # "session": "new" asks the server to open a conversation


# The answer of POST /ask: ragkit ask --json's object (and the session, when one was sent).
ANSWER_SCHEMA = {"title": "Answer", "type": "object", "required": ["question", "pipeline", "answer", "citations",
                                                                   "trace", "timings_ms"], "properties": {
    "question": {"type": "string"}, "pipeline": {"type": "string"}, "answer": {"type": "string"},
    "citations": {"type": "array", "items": {"type": "object"}},
    "trace": {"type": "object", "description": "how the answer was made (answer_source, check, ...)"},
    "timings_ms": {"type": "object", "additionalProperties": {"type": "number"}},
    "session": {"type": "string"}}}
HEALTH_TTL_S = 2.0       # /ready asks the sources again after this long


@dataclass(frozen=True)
class ServeLimits:
    max_body: int = 64 * 1024        # bytes in one request body or WebSocket message
    max_question: int = MAX_QUESTION_CHARS     # characters in a question
    timeout_s: float | None = None   # to answer one question; None: from the model's measured speed (deadlines)
    min_timeout_s: float = FLOOR_S   # the shortest derived deadline
    stall_timeout_s: float | None = None   # past a derived deadline: the longest wait for a token (None: derived)
    workers: int = 4                 # questions answered at once
    sessions_per_key: int = 256      # conversations a key keeps open (its least recent dropped)
    questions_per_key: int = 16      # questions of one key answered or waiting at once (429 over)
    max_turns: int = 8               # turns kept per conversation
    read_timeout_s: float = 10.0     # to send a request's headers, then its body (408 after)
    ws_max_message: int = 16         # times max_body: a WebSocket message over it closes (1009)
    max_inputs: int = 256            # texts in one /v1/embeddings request
    websockets_per_key: int = 32     # WebSocket connections one key holds open (429 over)
    websockets: int = 256            # WebSocket connections open in all (429 over)


RERANK_PROMPT_TOKENS = 320      # one candidate's rerank prompt: its passage (160 words) and the question


class Cancelled(BaseException):
    """Raised inside a generation whose client has gone; a BaseException so that no
    pipeline's error handling turns it into an answer."""


class Sessions:
    """The kg pipeline's conversations: turns per session id, each id issued by the server
    (``secrets.token_urlsafe``, unguessable) to one owner (a principal, ``access``).
    An owner keeps at most ``per_owner`` open; opening one more drops that owner's least
    recently used, never another owner's."""

    def __init__(self, per_owner: int, max_turns: int):
        self.per_owner, self.max_turns = per_owner, max_turns
        self._owned: dict[str, OrderedDict[str, list[dict]]] = {}
        self._lock = threading.Lock()

    def open(self, owner: str) -> str:
        with self._lock:
            mine = self._owned.setdefault(owner, OrderedDict())
            session = secrets.token_urlsafe(24)
            mine[session] = []
            while len(mine) > self.per_owner:
                mine.popitem(last=False)
            return session

    def history(self, owner: str, session: str) -> list[dict]:
        """The turns so far; HTTPProblem 404 when ``owner`` has no such session (never
        issued, dropped, or another owner's: the three look the same)."""
        with self._lock:
            mine = self._owned.get(owner, OrderedDict())
            if session not in mine:
                raise HTTPProblem(404, f"session: {session!r} is not open (the server issues ids: send "
                                       f"\"session\": \"new\" to start a conversation, then send back its id)")
            mine.move_to_end(session)
            return list(mine[session])

    def add(self, owner: str, session: str, turn: dict) -> None:
        with self._lock:
            turns = self._owned.get(owner, OrderedDict()).get(session)
            if turns is not None:           # not dropped while the question was answered
                turns.append(turn)
                del turns[:-self.max_turns]

    def count(self, owner: str) -> int:
        with self._lock:
            return len(self._owned.get(owner, {}))

    def __len__(self) -> int:
        return sum(len(mine) for mine in self._owned.values())


def parse_request(raw: bytes | str, limits: ServeLimits) -> tuple[AskRequest, str | None]:
    """An AskRequest and its session id from a JSON body; HTTPProblem 400/413 otherwise."""
    data = decode_json(raw, limits.max_body)
    session = data.pop("session", None) if isinstance(data, dict) else None
    check_session(session)
    try:
        request = request_type().from_dict(data)
    except InputError as exc:
        raise HTTPProblem(400, str(exc)) from None
    if len(request.question) > limits.max_question:
        raise HTTPProblem(400, f"question: {len(request.question)} characters, over the "
                               f"{limits.max_question}-character limit")
    return request, session


class _BodyLimit:
    """ASGI middleware: refuse an HTTP body over ``max_body`` bytes with 413, before it is
    read whole (a declared Content-Length, or counted as it streams in), and one that has
    not all come within ``timeout_s`` of its headers with 408 (a client sending a byte a
    second holds a connection no longer than that)."""

    def __init__(self, app, max_body: int = 64 * 1024, timeout_s: float = 10.0):
        self.app, self.max_body, self.timeout_s = app, max_body, timeout_s

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_big = JSONResponse(error_body(scope.get("path", ""), 413,
                                          f"request: body over the {self.max_body}-byte limit"), 413)
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            return await too_big(scope, receive, send)
        seen, complete = 0, False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s

        async def counted():
            nonlocal seen, complete
            if complete:          # the body is in: what comes now is the disconnect, in its time
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.001))
            except asyncio.TimeoutError:
                raise HTTPProblem(408, f"request: body not received within {self.timeout_s:g} s") from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if seen > self.max_body:
                    raise HTTPProblem(413, f"request: body over the {self.max_body}-byte limit")
            return message

        return await self.app(scope, counted, send)


def create_app(service: Service, limits: ServeLimits | None = None, *, keys: Sequence[str] = (),
               cors_origins: Sequence[str] = (), log_questions: bool = False, embeddings_only: bool = False,
               hosts: Sequence[str] = LOOPBACK_NAMES) -> FastAPI:
    """The app; it owns ``service`` from start-up to shut-down. ``keys``: the API keys (none:
    loopback only, one local user); ``cors_origins``: web origins allowed to call it;
    ``hosts``: the host names it answers to (``access.allowed_hosts``: loopback by default);
    ``log_questions``: put the question's text in the request log line; ``embeddings_only``:
    no pipelines, the embedding models loaded at start (``/ready`` waits for them)."""
    from contextlib import asynccontextmanager

    with requires_extra("server"):
        from starlette.exceptions import HTTPException as StarletteHTTPException
        from starlette.requests import ClientDisconnect
        from starlette.websockets import WebSocketState

    limits = limits or ServeLimits()
    sessions = Sessions(limits.sessions_per_key, limits.max_turns)
    in_flight = InFlight(limits.questions_per_key)
    connections = Connections(limits.websockets_per_key, limits.websockets)
    pool = ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix="ragkit-ask")
    state: dict[str, Any] = {"started": time.time(), "warm": None, "served": 0, "embedders": None}
    deadlines = Deadlines(limits.timeout_s, limits.min_timeout_s, limits.stall_timeout_s,
                          n_ctx=service.llm_config.n_ctx, max_tokens=service.llm_config.max_tokens)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loop = asyncio.get_running_loop()
        # Load the sources in the background: /ready says 503 until they are in.
        warming = loop.run_in_executor(pool, service.health)
        warming.add_done_callback(lambda f: state.update(warm=f.result() if not f.exception() else
                                                         {"*": f"error: {f.exception()}"}))
        if not embeddings_only:       # the model's speed, measured here unless --timeout
            deadlines.start(loop, lambda fn: loop.run_in_executor(pool, fn), lambda: service.llm)
        if embeddings_only:
            from .openai_embeddings import warm_embedders

            models = loop.run_in_executor(pool, warm_embedders)
            models.add_done_callback(lambda f: state.update(embedders=f.result() if not f.exception() else
                                                            {"*": f"error: {f.exception()}"}))
        yield
        deadlines.stop()
        pool.shutdown(wait=False, cancel_futures=True)
        service.close()

    app = FastAPI(title="ragkit", summary="Grounded question answering over local indexes and graphs",
                  lifespan=lifespan)
    app.add_middleware(_BodyLimit, max_body=limits.max_body, timeout_s=limits.read_timeout_s)
    app.add_middleware(AccessGuard, keys=list(keys), origins=list(cors_origins), hosts=list(hosts))
    if cors_origins:      # outermost: a browser's preflight carries no key
        with requires_extra("server"):
            from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type"])

    @app.exception_handler(HTTPProblem)
    async def _problem(request: Request, exc: HTTPProblem):
        # 408: the rest of the body may still trickle in; the connection is not reused.
        headers = {"Connection": "close"} if exc.status == 408 else None
        return JSONResponse(error_body(request.url.path, exc.status, exc.message, exc.code),
                            status_code=exc.status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def _routing(request: Request, exc: StarletteHTTPException):
        # the router's own refusals (an unknown path, a method a path does not take) in the
        # same one-line shape as every other error
        what = {404: "no such endpoint (GET / lists them)", 405: "method not allowed here"}.get(
            exc.status_code, str(exc.detail))
        message = f"{request.method} {request.url.path}: {what}"
        return JSONResponse(error_body(request.url.path, exc.status_code, message), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    def principal_of(scope) -> str:
        return scope.get("ragkit.principal") or LOCAL

    def open_session(principal: str, session: str | None) -> str | None:
        """The session a request names, checked against its owner; "new" opens one."""
        if session == NEW_SESSION:
            return sessions.open(principal)
        if session is not None:
            sessions.history(principal, session)      # 404 unless open and this principal's
        return session

    async def answer(request: AskRequest, principal: str, session: str | None, on_token=None,
                     via: str = "ask", prepare=None) -> dict:
        """The answer's JSON, within the key's in-flight limit and its deadline, logged.
        ``on_token(piece, call, purpose)`` gets the model's text as it is written (in the
        worker thread; ``purpose``: ``llm.base.generation_purpose``); ``prepare(request)``
        runs in the worker first (within the deadline)."""
        started, status = time.monotonic(), 200
        try:
            if not in_flight.enter(principal):
                raise HTTPProblem(429, f"request: {limits.questions_per_key} questions of this key are "
                                       f"already answered or waiting (the limit); send this one when one is done")
            try:
                return await _answer(request, principal, session, on_token, prepare)
            finally:
                in_flight.leave(principal)
        except HTTPProblem as exc:
            status = exc.status
            raise
        except asyncio.CancelledError:
            status = 499      # the client left
            raise
        finally:
            line = (f"{via} {status} pipeline={request.pipeline} principal={principal} "
                    f"session={session[:8] + '...' if session else '-'} {(time.monotonic() - started) * 1000:.0f} ms")
            log.info(line + (f" question={request.question!r}" if log_questions else ""))

    async def _answer(request: AskRequest, principal: str, session: str | None, on_token=None,
                      prepare=None) -> dict:
        if session is not None and get_pipeline(request.pipeline).conversational and request.history is None:
            request.history = sessions.history(principal, session)
        # an LLM rerank reads one prompt per candidate first: its time is in the deadline
        reranking = getattr(request, "rerank", None) == "llm"
        rerank_tokens = RERANK_PROMPT_TOKENS * int(getattr(request, "rerank_depth", 0) or 0) if reranking else 0
        deadline = await deadlines.for_answer(not request.no_llm or reranking, request.max_tokens, rerank_tokens)
        stop = threading.Event()
        last_token: list[float] = []          # when the model last wrote (time.monotonic)

        def tokens(piece: str, call: int) -> None:    # runs in the worker thread
            if stop.is_set():
                raise Cancelled()
            last_token[:] = [time.monotonic()]
            if on_token is not None:
                on_token(piece, call, generation_purpose())

        def must_stop() -> None:      # every stage and model call asks (runtime.cancel)
            if stop.is_set():
                raise Cancelled()

        def work():
            with cancellable(must_stop):
                if prepare is not None:
                    prepare(request)
                return service.answer(request, tokens)

        loop = asyncio.get_running_loop()
        modelled = not request.no_llm
        deadlines.in_flight += modelled
        job = loop.run_in_executor(pool, work)
        started = time.monotonic()
        try:
            while True:
                left = time_left(time.monotonic(), started, deadline, last_token[0] if last_token else None)
                if left <= 0:
                    stop.set()          # a running generation stops at its next token
                    job.cancel()        # a question still waiting for a worker never starts
                    stalled = deadline.stall_s is not None and bool(last_token)
                    raise HTTPProblem(504, overdue(deadline, stalled))
                done, _ = await asyncio.wait({job}, timeout=left)
                if done:
                    break
            answered = job.result()
        except asyncio.CancelledError:
            stop.set()
            job.cancel()
            raise
        except HTTPProblem:
            raise
        except Exception as exc:
            raise problem_for(exc) from None
        finally:
            deadlines.in_flight -= modelled
        data = answered.to_dict()
        if modelled:            # the answer's own figures: the deadlines follow a machine that slows
            deadlines.observe((data.get("trace") or {}).get("generation") or {})
        if session is not None:
            turn = getattr(answered.trace, "turn", None)   # none when nothing in the question was found
            if turn is not None:
                sessions.add(principal, session, turn)
            data["session"] = session
        state["served"] += 1
        return data

    async def run(job, principal: str, line: str):
        """``job()``'s result, computed in the worker pool within the key's in-flight limit
        and the timeout (``--timeout``, else the floor of a derived deadline); logged as
        ``line``, the status and the time taken."""
        started, status = time.monotonic(), 200
        timeout_s = limits.timeout_s if limits.timeout_s is not None else limits.min_timeout_s
        try:
            if not in_flight.enter(principal):
                raise HTTPProblem(429, f"request: {limits.questions_per_key} requests of this key are "
                                       f"already served or waiting (the limit); send this one when one is done")
            try:
                work = asyncio.get_running_loop().run_in_executor(pool, job)
                try:
                    return await asyncio.wait_for(asyncio.shield(work), timeout_s)
                except asyncio.TimeoutError:
                    work.cancel()       # one still waiting for a worker never starts
                    raise HTTPProblem(504, f"request: not done within {timeout_s:g} s") from None
                except asyncio.CancelledError:
                    work.cancel()
                    raise
                except HTTPProblem:
                    raise
                except Exception as exc:
                    raise problem_for(exc) from None
            finally:
                in_flight.leave(principal)
        except HTTPProblem as exc:
            status = exc.status
            raise
        except asyncio.CancelledError:
            status = 499      # the client left
            raise
        finally:
            log.info(f"{line} {status} principal={principal} {(time.monotonic() - started) * 1000:.0f} ms")

    @app.get("/health")
    async def health():
        return {"status": "ok", "uptime_s": round(time.time() - state["started"], 1)}

    async def current_health() -> dict | None:
        """The sources' health: None while they load; after that asked again (in a thread:
        a server store's check may wait up to its connect timeout) at most once per
        ``HEALTH_TTL_S``, so a store that stops makes /ready false, and true when back."""
        if state["warm"] is None:
            return None
        if time.monotonic() - state.get("checked", 0.0) > HEALTH_TTL_S:
            state["checked"] = time.monotonic()
            loop = asyncio.get_running_loop()
            state["warm"] = await loop.run_in_executor(None, service.health)
        return state["warm"]

    @app.get("/ready")
    async def ready(request: Request):
        body: dict[str, Any]
        if embeddings_only:
            models = state["embedders"]
            body = {"ready": bool(models) and all(v == "ready" for v in models.values()),
                    "embeddings": {m: without_paths(str(v)) for m, v in models.items()} if models else
                    {"*": "loading"}}
            if request.scope.get("ragkit.principal") is None:
                body = {"ready": body["ready"]}
            return JSONResponse(body, status_code=200 if body["ready"] else 503)
        warm = await current_health()
        body = {"ready": bool(warm and all(v == "ready" for v in warm.values())),
                "pipelines": {p: without_paths(str(v)) for p, v in warm.items()} if warm else
                {p: "loading" for p in service.available()},
                "llm": service.llm_config.server_url or "gguf in process"}
        if warm is not None and not warm:
            body["ready"], body["pipelines"] = False, {"*": "no source configured"}
        if request.scope.get("ragkit.principal") is None:     # no key: the status, no details
            body = {"ready": body["ready"]}
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    @app.get("/")
    async def index(request: Request):
        principal = principal_of(request.scope)
        return {"service": "ragkit", "pipelines": service.available(),
                "endpoints": ["POST /ask", "WS /ws", "GET /v1/models", "POST /v1/chat/completions",
                              "POST /v1/embeddings", "GET /health", "GET /ready"],
                "limits": limits.__dict__, "served": state["served"],
                "answer_deadline": deadlines.to_dict(),
                "sessions": sessions.count(principal), "principal": principal}

    # The body is read and checked by parse_request (one-line errors); the schema is shown.
    @app.post("/ask", openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": ask_request_model(limits.max_question).model_json_schema()}}}},
        responses={200: {"description": "what `ragkit ask --json` prints (and the session)",
                         "content": {"application/json": {"schema": ANSWER_SCHEMA}}}})
    async def ask(request: Request):
        try:
            body = await request.body()
        except ClientDisconnect:
            log.info("ask: the client left before its body had come; nothing answered")
            return Response(status_code=400)
        principal = principal_of(request.scope)
        request_obj, session = parse_request(body, limits)
        session = open_session(principal, session)
        data = await answer(request_obj, principal, session)
        # Plain JSON already: skip FastAPI's generic encoder (10x slower on a large trace).
        return Response(json.dumps(data, ensure_ascii=False), media_type="application/json")

    from .openai_chat import add_openai_routes

    add_openai_routes(app, service, answer=answer, open_session=open_session, principal_of=principal_of,
                      max_question=limits.max_question, max_turns=limits.max_turns)
    from .openai_embeddings import add_embedding_routes

    add_embedding_routes(app, run=run, principal_of=principal_of, max_inputs=limits.max_inputs)

    @app.websocket("/ws")
    async def ws(socket: WebSocket):
        principal = principal_of(socket.scope)
        refused = connections.open(principal)
        if refused is not None:      # the handshake's answer is a 429 (uvicorn sends one)
            log.info(f"ws 429 principal={principal} refused: {refused}")
            try:
                await socket.send_denial_response(JSONResponse({"error": refused}, status_code=429))
            except RuntimeError:     # a server without HTTP answers to a handshake: a close
                await socket.close(1013, refused[:120])
            return
        try:
            await ws_session(socket, principal)
        finally:
            connections.close(principal)

    async def ws_session(socket: WebSocket, principal: str) -> None:
        await socket.accept()
        code = 1000
        try:
            try:
                asked = socket.query_params.get("session")
                check_session(asked)
                default_session = open_session(principal, asked or NEW_SESSION)
            except HTTPProblem as exc:
                await socket.send_json({"type": "error", "status": exc.status, "error": exc.message})
                code = 1008
                return
            while True:
                message = await socket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                raw = message.get("text")
                try:
                    if raw is None:
                        raise HTTPProblem(400, "request: send JSON as a text frame, not binary")
                    request, session = parse_request(raw, limits)
                    session = open_session(principal, session) or default_session
                except HTTPProblem as exc:
                    log.info(f"ws {exc.status} principal={principal} refused: {exc.message}")
                    await socket.send_json({"type": "error", "status": exc.status, "error": exc.message})
                    continue
                await stream_answer(socket, request, principal, session)
        except WebSocketDisconnect:
            return
        except Exception:
            log.exception("ws: unexpected error; closing the connection")
            code = 1011
        finally:
            # Whatever ended it, close with a close frame while the connection still stands
            # (returning without one would drop the TCP connection mid-handshake).
            if socket.application_state == WebSocketState.CONNECTED and \
                    socket.client_state == WebSocketState.CONNECTED:
                try:
                    await socket.close(code)
                except Exception:     # the client went at the same moment
                    pass

    async def stream_answer(socket: WebSocket, request: AskRequest, principal: str, session: str | None) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def on_token(piece: str, call: int, purpose: str) -> None:   # runs in the worker thread
            loop.call_soon_threadsafe(queue.put_nowait, {"type": "token", "text": piece, "call": call,
                                                         "purpose": purpose})

        async def send(event: dict) -> None:
            try:
                await socket.send_json(event)
            except (WebSocketDisconnect, RuntimeError, OSError):
                raise WebSocketDisconnect(code=1006) from None

        try:
            await send({"type": "start", "question": request.question, "pipeline": request.pipeline,
                        "session": session})
        except WebSocketDisconnect:
            # Gone before the answer started: nothing is answered, and the log says so.
            log.info(f"ws 499 pipeline={request.pipeline} principal={principal} "
                     f"session={session[:8] + '...' if session else '-'} the client left before the answer started")
            raise
        job = asyncio.ensure_future(answer(request, principal, session, on_token, via="ws"))
        getter = None
        try:
            streamed = False
            written: dict[int, list[str]] = {}      # what the model streamed, per call
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({job, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    break
                event = getter.result()
                written.setdefault(event["call"], []).append(event["text"])
                await send(event)
                streamed = True
            while not queue.empty():
                event = queue.get_nowait()
                written.setdefault(event["call"], []).append(event["text"])
                await send(event)
                streamed = True
            try:
                data = job.result()
            except Exception as exc:
                problem = problem_for(exc)
                await send({"type": "error", "status": problem.status, "error": problem.message})
                return
            if not streamed:       # no model wrote it live: stream the answer in pieces
                for piece in re.findall(r"\S+\s*", data["answer"]):
                    await send({"type": "token", "text": piece, "call": 0, "purpose": "answer"})
            await send({"type": "result", **replacement(written, data), **data})
        finally:
            # However this ends (the client left, the server stops), the worker stops at its
            # next token (answer() sets its stop on cancellation) and nothing is left pending.
            job.cancel()
            if getter is not None and not getter.done():
                getter.cancel()
            job.add_done_callback(lambda task: task.cancelled() or task.exception())

    return app


def header_timeout_protocol(timeout_s: float):
    """uvicorn's HTTP protocol, with a deadline on a request's headers: they must all have
    come within ``timeout_s`` of the connection opening (or of the previous response), or
    the connection gets a 408 and is closed. uvicorn has no such limit of its own: a client
    sending a header byte a second would hold a connection for ever."""
    with requires_extra("server"):
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

    body = json.dumps({"error": f"request: headers not received within {timeout_s:g} s"}).encode()
    refusal = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
               b"content-length: %d\r\n\r\n%s" % (len(body), body))

    class HeaderTimeoutProtocol(AutoHTTPProtocol):  # type: ignore[valid-type,misc]  # uvicorn's pick, a variable
        _header_timer = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._cycle_seen = self.cycle          # a new cycle: the next request's headers are in
            self._header_timer = self.loop.call_later(timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not self._cycle_seen or self.transport.get_protocol() is not self:
                self._disarm()                     # headers complete, or upgraded to a WebSocket

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._header_timer is None and not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _too_slow(self) -> None:
            self._header_timer = None
            if self.transport.is_closing() or self.transport.get_protocol() is not self or \
                    self.cycle is not self._cycle_seen:
                return
            log.info("http: headers not received within %g s; connection closed", timeout_s)
            self.transport.write(refusal)
            self.transport.close()

    return HeaderTimeoutProtocol


def websocket_protocol():
    """uvicorn's WebSocket protocol, quiet about a handshake refused with an HTTP response
    (a 401 or 403 from ``AccessGuard``): uvicorn counts it as "returned without completing
    handshake" and logs an error for what is an ordinary refusal."""
    with requires_extra("server"):
        from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

    class RefusingWebSocketProtocol(AutoWebSocketsProtocol):  # type: ignore[valid-type,misc]  # a variable too
        async def send(self, message) -> None:
            await super().send(message)
            if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
                self.handshake_complete = True

    return RefusingWebSocketProtocol


def serve(service: Service, host: str = "127.0.0.1", port: int = 8000, limits: ServeLimits | None = None,
          log_level: str = "info", keys: Sequence[str] = (), cors_origins: Sequence[str] = (),
          log_questions: bool = False, embeddings_only: bool = False, allowed_host: Sequence[str] = ()) -> None:
    """Run the app with uvicorn until interrupted (beyond loopback only with a key); it answers
    to the loopback names, ``host`` and ``allowed_host``."""
    from .access import allowed_hosts, check_exposure

    check_exposure(host, list(keys))
    limits = limits or ServeLimits()
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
    log.addHandler(handler)
    log.setLevel(log_level.upper())
    log.propagate = False
    # A WebSocket message over max_body gets a 413 event from parse_request; only one far
    # over it is refused by the protocol (close code 1009).
    uvicorn.run(create_app(service, limits, keys=keys, cors_origins=cors_origins, log_questions=log_questions,
                           embeddings_only=embeddings_only, hosts=sorted(allowed_hosts(host, allowed_host))),
                host=host, port=port, log_level=log_level, http=header_timeout_protocol(limits.read_timeout_s),
                ws=websocket_protocol(),
                ws_max_size=limits.max_body * limits.ws_max_message, timeout_graceful_shutdown=5)
