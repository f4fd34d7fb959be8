"""``ragkit serve``: every pipeline over HTTP and WebSocket (FastAPI + uvicorn).

- ``POST /ask`` takes a JSON request (``service.AskRequest``'s fields, plus an optional
  ``session``) and returns what ``ragkit ask --json`` prints.
- ``/ws`` takes the same requests as text frames, one after another on one connection, and
  answers each with events: ``start``, ``token`` (model text as it is written; without a
  model, the answer in pieces), then ``result`` (the ``/ask`` JSON, whose ``answer`` is the
  checked one, with ``replaced``: whether it differs from the text the model streamed, and
  ``replaced_because``), or ``error``. A connection is a session: kg follow-ups see earlier turns.
- ``GET /health`` (the process is up) and ``GET /ready`` (every source loaded).

Requests are bounded: the body size (413), the question length (400), the time to answer
(504), and at most ``workers`` questions at once (the rest wait their turn).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response

from .errors import IndexFormatError, InputError, ModelError, RagkitError, StoreUnavailableError
from .service import AskRequest, Service

log = logging.getLogger("ragkit.server")
SESSION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def replacement(written: dict[int, list[str]], data: dict) -> dict:
    """Whether the answer the check settled on differs from what the model streamed (its
    last call), and why: the stream showed the model's words, the result may not keep them."""
    if not written:
        return {"replaced": False}
    streamed = " ".join("".join(written[max(written)]).split())
    final = " ".join(data["answer"].split())
    if streamed == final:
        return {"replaced": False}
    trace = data.get("trace") or {}
    why = trace.get("fallback_reason") or ("the model's text was tidied (thinking, an unfinished last sentence "
                                            "or unsupported sentences removed; citations added or numbered "
                                            "as the citation list)" if trace.get("answer_source") == "model" else "")
    return {"replaced": True, "replaced_because": why}


@dataclass(frozen=True)
class ServeLimits:
    max_body: int = 64 * 1024        # bytes in one request body or WebSocket message
    max_question: int = 2000         # characters in a question
    timeout_s: float = 60.0          # to answer one question
    workers: int = 4                 # questions answered at once
    max_sessions: int = 256          # conversations remembered (least recent dropped)
    max_turns: int = 8               # turns kept per conversation


class Cancelled(BaseException):
    """Raised inside a generation whose client has gone; a BaseException so that no
    pipeline's error handling turns it into an answer."""


class Sessions:
    """The kg pipeline's conversation turns, per session id, least recent dropped first."""

    def __init__(self, max_sessions: int, max_turns: int):
        self.max_sessions, self.max_turns = max_sessions, max_turns
        self._turns: OrderedDict[str, list[dict]] = OrderedDict()
        self._lock = threading.Lock()

    def history(self, session: str) -> list[dict]:
        with self._lock:
            turns = self._turns.get(session, [])
            if session in self._turns:
                self._turns.move_to_end(session)
            return list(turns)

    def add(self, session: str, turn: dict) -> None:
        with self._lock:
            turns = self._turns.setdefault(session, [])
            turns.append(turn)
            del turns[:-self.max_turns]
            self._turns.move_to_end(session)
            while len(self._turns) > self.max_sessions:
                self._turns.popitem(last=False)

    def __len__(self) -> int:
        return len(self._turns)


class HTTPProblem(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def problem_for(exc: BaseException) -> HTTPProblem:
    """The HTTP status and one-line message for an error raised while answering."""
    if isinstance(exc, HTTPProblem):
        return exc
    if isinstance(exc, InputError):
        return HTTPProblem(400, str(exc))
    if isinstance(exc, (IndexFormatError, StoreUnavailableError)):
        return HTTPProblem(503, str(exc))
    if isinstance(exc, ModelError):
        return HTTPProblem(502, str(exc))
    if isinstance(exc, RagkitError):
        return HTTPProblem(503, str(exc))
    log.exception("unexpected error", exc_info=exc)
    return HTTPProblem(500, f"internal error ({type(exc).__name__}); see the server log")


def parse_request(raw: bytes | str, limits: ServeLimits) -> tuple[AskRequest, str | None]:
    """An AskRequest and its session id from a JSON body; HTTPProblem 400/413 otherwise."""
    size = len(raw.encode("utf-8") if isinstance(raw, str) else raw)
    if size > limits.max_body:
        raise HTTPProblem(413, f"request: {size} bytes, over the {limits.max_body}-byte limit")
    try:
        data = json.loads(raw)
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise HTTPProblem(400, "request: holds text that is not valid Unicode (a lone surrogate)") from None
    except (ValueError, RecursionError) as exc:   # JSONDecodeError, huge integers, deep nesting
        raise HTTPProblem(400, f"request: not valid JSON ({' '.join(str(exc).split())[:200]})") from None
    session = data.pop("session", None) if isinstance(data, dict) else None
    check_session(session)
    try:
        request = AskRequest.from_dict(data)
    except InputError as exc:
        raise HTTPProblem(400, str(exc)) from None
    if len(request.question) > limits.max_question:
        raise HTTPProblem(400, f"question: {len(request.question)} characters, over the "
                               f"{limits.max_question}-character limit")
    return request, session


def check_session(session) -> None:
    if session is not None and (not isinstance(session, str) or not SESSION_ID.fullmatch(session)):
        raise HTTPProblem(400, "session: must be 1-64 letters, digits or _.:-")


class _BodyLimit:
    """ASGI middleware: refuse an HTTP body over ``max_body`` bytes with 413, before it is
    read whole (a declared Content-Length, or counted as it streams in)."""

    def __init__(self, app, max_body: int = 64 * 1024):
        self.app, self.max_body = app, max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_big = JSONResponse({"error": f"request: body over the {self.max_body}-byte limit"}, 413)
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            return await too_big(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise HTTPProblem(413, f"request: body over the {self.max_body}-byte limit")
            return message

        return await self.app(scope, counted, send)


def create_app(service: Service, limits: ServeLimits | None = None) -> FastAPI:
    """The app; it owns ``service`` from start-up to shut-down."""
    from contextlib import asynccontextmanager

    limits = limits or ServeLimits()
    sessions = Sessions(limits.max_sessions, limits.max_turns)
    pool = ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix="ragkit-ask")
    state = {"started": time.time(), "warm": None, "served": 0}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loop = asyncio.get_running_loop()
        # Load the sources in the background: /ready says 503 until they are in.
        warming = loop.run_in_executor(pool, service.warm)
        warming.add_done_callback(lambda f: state.update(warm=f.result() if not f.exception() else
                                                         {"*": f"error: {f.exception()}"}))
        yield
        pool.shutdown(wait=False, cancel_futures=True)
        service.close()

    app = FastAPI(title="ragkit", summary="Grounded question answering over local indexes and graphs",
                  lifespan=lifespan)
    app.add_middleware(_BodyLimit, max_body=limits.max_body)

    @app.exception_handler(HTTPProblem)
    async def _problem(request: Request, exc: HTTPProblem):
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    async def answer(request: AskRequest, session: str | None, on_token=None) -> dict:
        if session is not None and request.pipeline == "kg" and request.history is None:
            request.history = sessions.history(session)
        stop = threading.Event()

        def tokens(piece: str, call: int) -> None:    # runs in the worker thread
            if stop.is_set():
                raise Cancelled()
            if on_token is not None:
                on_token(piece, call)

        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(pool, service.answer, request, tokens)
        try:
            answered = await asyncio.wait_for(asyncio.shield(job), limits.timeout_s)
        except asyncio.TimeoutError:
            stop.set()          # a running generation stops at its next token
            job.cancel()        # a question still waiting for a worker never starts
            raise HTTPProblem(504, f"request: no answer within {limits.timeout_s:g} s") from None
        except asyncio.CancelledError:
            stop.set()
            job.cancel()
            raise
        except Exception as exc:
            raise problem_for(exc) from None
        data = answered.to_dict()
        if session is not None:
            turn = getattr(answered.trace, "turn", None)   # none when nothing in the question was found
            if turn is not None:
                sessions.add(session, turn)
            data["session"] = session
        state["served"] += 1
        return data

    @app.get("/health")
    async def health():
        return {"status": "ok", "uptime_s": round(time.time() - state["started"], 1)}

    @app.get("/ready")
    async def ready():
        warm = state["warm"]
        body = {"ready": bool(warm) and all(v == "ready" for v in warm.values()),
                "pipelines": warm or {p: "loading" for p in service.available()},
                "llm": service.llm_config.server_url or "gguf in process"}
        if warm is not None and not warm:
            body["ready"], body["pipelines"] = False, {"*": "no source configured"}
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    @app.get("/")
    async def index():
        return {"service": "ragkit", "pipelines": service.available(),
                "endpoints": ["POST /ask", "WS /ws", "GET /health", "GET /ready"],
                "limits": limits.__dict__, "served": state["served"], "sessions": len(sessions)}

    @app.post("/ask")
    async def ask(request: Request):
        request_obj, session = parse_request(await request.body(), limits)
        data = await answer(request_obj, session)
        # Plain JSON already: skip FastAPI's generic encoder (10x slower on a large trace).
        return Response(json.dumps(data, ensure_ascii=False), media_type="application/json")

    @app.websocket("/ws")
    async def ws(socket: WebSocket):
        await socket.accept()
        default_session = socket.query_params.get("session") or uuid.uuid4().hex
        try:
            check_session(default_session)
        except HTTPProblem as exc:
            await socket.send_json({"type": "error", "status": exc.status, "error": exc.message})
            await socket.close(code=1008)
            return
        try:
            while True:
                message = await socket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                raw = message.get("text")
                try:
                    if raw is None:
                        raise HTTPProblem(400, "request: send JSON as a text frame, not binary")
                    request, session = parse_request(raw, limits)
                except HTTPProblem as exc:
                    await socket.send_json({"type": "error", "status": exc.status, "error": exc.message})
                    continue
                await stream_answer(socket, request, session or default_session)
        except WebSocketDisconnect:
            return

    async def stream_answer(socket: WebSocket, request: AskRequest, session: str) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def on_token(piece: str, call: int) -> None:   # runs in the worker thread
            loop.call_soon_threadsafe(queue.put_nowait, {"type": "token", "text": piece, "call": call})

        async def send(event: dict) -> None:
            try:
                await socket.send_json(event)
            except (WebSocketDisconnect, RuntimeError, OSError):
                raise WebSocketDisconnect(code=1006) from None

        job = asyncio.ensure_future(answer(request, session, on_token))
        getter = None
        try:
            await send({"type": "start", "question": request.question, "pipeline": request.pipeline,
                        "session": session})
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
                    await send({"type": "token", "text": piece, "call": 0})
            await send({"type": "result", **replacement(written, data), **data})
        finally:
            # However this ends (the client left, the server stops), the worker stops at its
            # next token (answer() sets its stop on cancellation) and nothing is left pending.
            job.cancel()
            if getter is not None and not getter.done():
                getter.cancel()
            job.add_done_callback(lambda task: task.cancelled() or task.exception())

    return app


def serve(service: Service, host: str = "127.0.0.1", port: int = 8000, limits: ServeLimits | None = None,
          log_level: str = "info") -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    limits = limits or ServeLimits()
    uvicorn.run(create_app(service, limits), host=host, port=port, log_level=log_level,
                ws_max_size=limits.max_body, timeout_graceful_shutdown=5)
