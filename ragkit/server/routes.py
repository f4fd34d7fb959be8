"""The server's own routes over a ``Server``: ``GET /health``, ``GET /ready``, ``GET /``,
``POST /ask`` (``add_core_routes``) and the ``/ws`` conversation, each question answered as
events (``add_websocket_routes``)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from typing import Any

from ..runtime.extras import requires_extra
from ..service import AskRequest, ask_request_model
from .protocol import HTTPProblem, check_session, problem_for, replacement, without_paths
from .serving import NEW_SESSION, Server, parse_request

with requires_extra("server"):
    from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
    from fastapi.responses import JSONResponse, Response
    from starlette.requests import ClientDisconnect
    from starlette.websockets import WebSocketState


log = logging.getLogger("ragkit.server")

# The answer of POST /ask: ragkit ask --json's object (and the session, when one was sent).
ANSWER_SCHEMA = {"title": "Answer", "type": "object", "required": ["question", "pipeline", "answer", "citations",
                                                                   "trace", "timings_ms"], "properties": {
    "question": {"type": "string"}, "pipeline": {"type": "string"}, "answer": {"type": "string"},
    "citations": {"type": "array", "items": {"type": "object"}},
    "trace": {"type": "object", "description": "how the answer was made (answer_source, check, ...)"},
    "timings_ms": {"type": "object", "additionalProperties": {"type": "number"}},
    "session": {"type": "string"}}}


def add_core_routes(app: FastAPI, server: Server) -> None:
    """Mount ``/health``, ``/ready``, ``/`` and ``POST /ask`` on ``app``."""
    @app.get("/health")
    async def health():
        return {"status": "ok", "uptime_s": round(time.time() - server.started, 1)}

    @app.get("/ready")
    async def ready(request: Request):
        body: dict[str, Any]
        if server.embeddings_only:
            models = server.embedders
            body = {"ready": bool(models) and all(v == "ready" for v in (models or {}).values()),
                    "embeddings": {m: without_paths(str(v)) for m, v in models.items()} if models else
                    {"*": "loading"}}
            if request.scope.get("ragkit.principal") is None:
                body = {"ready": body["ready"]}
            return JSONResponse(body, status_code=200 if body["ready"] else 503)
        warm = await server.current_health()
        body = {"ready": bool(warm and all(v == "ready" for v in warm.values())),
                "pipelines": {p: without_paths(str(v)) for p, v in warm.items()} if warm else
                {p: "loading" for p in server.service.available()},
                "llm": server.service.llm_config.server_url or "gguf in process"}
        if warm is not None and not warm:
            body["ready"], body["pipelines"] = False, {"*": "no source configured"}
        if request.scope.get("ragkit.principal") is None:     # no key: the status, no details
            body = {"ready": body["ready"]}
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    @app.get("/")
    async def index(request: Request):
        principal = server.principal_of(request.scope)
        return {"service": "ragkit", "pipelines": server.service.available(),
                "endpoints": ["POST /ask", "WS /ws", "GET /v1/models", "POST /v1/chat/completions",
                              "POST /v1/embeddings", "GET /health", "GET /ready"],
                "limits": server.limits.__dict__, "served": server.served,
                "answer_deadline": server.deadlines.to_dict(),
                "sessions": server.sessions.count(principal), "principal": principal}

    # The body is read and checked by parse_request (one-line errors); the schema is shown.
    @app.post("/ask", openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": ask_request_model(server.limits.max_question).model_json_schema()}}}},
        responses={200: {"description": "what `ragkit ask --json` prints (and the session)",
                         "content": {"application/json": {"schema": ANSWER_SCHEMA}}}})
    async def ask(request: Request):
        try:
            body = await request.body()
        except ClientDisconnect:
            log.info("ask: the client left before its body had come; nothing answered")
            return Response(status_code=400)
        principal = server.principal_of(request.scope)
        request_obj, session = parse_request(body, server.limits)
        session = server.open_session(principal, session)
        data = await server.answer(request_obj, principal, session)
        # Plain JSON already: skip FastAPI's generic encoder (10x slower on a large trace).
        return Response(json.dumps(data, ensure_ascii=False), media_type="application/json")


def add_websocket_routes(app: FastAPI, server: Server) -> None:
    """Mount ``/ws``: one conversation per connection, within the key's and the server's
    connection limits."""
    @app.websocket("/ws")
    async def ws(socket: WebSocket):
        principal = server.principal_of(socket.scope)
        refused = server.connections.open(principal)
        if refused is not None:      # the handshake's answer is a 429 (uvicorn sends one)
            log.info(f"ws 429 principal={principal} refused: {refused}")
            try:
                await socket.send_denial_response(JSONResponse({"error": refused}, status_code=429))
            except RuntimeError:     # a server without HTTP answers to a handshake: a close
                await socket.close(1013, refused[:120])
            return
        try:
            await ws_session(server, socket, principal)
        finally:
            server.connections.close(principal)


async def ws_session(server: Server, socket: WebSocket, principal: str) -> None:
    """One connection's conversation: each text frame a question, answered in turn."""
    await socket.accept()
    code = 1000
    try:
        try:
            asked = socket.query_params.get("session")
            check_session(asked)
            default_session = server.open_session(principal, asked or NEW_SESSION)
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
                request, session = parse_request(raw, server.limits)
                session = server.open_session(principal, session) or default_session
            except HTTPProblem as exc:
                log.info(f"ws {exc.status} principal={principal} refused: {exc.message}")
                await socket.send_json({"type": "error", "status": exc.status, "error": exc.message})
                continue
            await stream_answer(server, socket, request, principal, session)
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


async def stream_answer(server: Server, socket: WebSocket, request: AskRequest, principal: str,
                        session: str | None) -> None:
    """``request`` answered on ``socket`` as events: start, the model's tokens as written,
    then the result (or an error)."""
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
    job = asyncio.ensure_future(server.answer(request, principal, session, on_token, via="ws"))
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
