"""The app over a ``Service``: its middleware (the body limit, access), its error shapes,
its routes (``routes``, ``openai_chat``, ``openai_embeddings``) over one ``serving.Server``,
and ``serve``, which runs it under uvicorn (see the package's docstring)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Sequence

from ..runtime.extras import requires_extra
from ..service import Service
from .access import LOOPBACK_NAMES, AccessGuard, error_body
from .routes import add_core_routes, add_websocket_routes
from .serving import ServeLimits, Server
from .protocol import HTTPProblem

with requires_extra("server"):
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

log = logging.getLogger("ragkit.server")


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

    server = Server(service, limits or ServeLimits(), log_questions=log_questions, embeddings_only=embeddings_only)
    limits = server.limits

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loop = asyncio.get_running_loop()
        # Load the sources in the background: /ready says 503 until they are in.
        warming = loop.run_in_executor(server.pool, service.health)
        warming.add_done_callback(lambda f: setattr(server, "warm", _outcome(f)))
        if not embeddings_only:       # the model's speed, measured here unless --timeout
            server.deadlines.start(loop, lambda fn: loop.run_in_executor(server.pool, fn), lambda: service.llm)
        if embeddings_only:
            from .openai_embeddings import warm_embedders

            models = loop.run_in_executor(server.pool, warm_embedders)
            models.add_done_callback(lambda f: setattr(server, "embedders", _outcome(f)))
        yield
        server.deadlines.stop()
        server.pool.shutdown(wait=False, cancel_futures=True)
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

    from .openai_chat import add_openai_routes
    from .openai_embeddings import add_embedding_routes

    add_core_routes(app, server)
    add_openai_routes(app, service, answer=server.answer, open_session=server.open_session,
                      principal_of=server.principal_of, max_question=limits.max_question, max_turns=limits.max_turns)
    add_embedding_routes(app, run=server.run, principal_of=server.principal_of, max_inputs=limits.max_inputs)
    add_websocket_routes(app, server)
    return app


def _outcome(future) -> dict:
    """A finished load's result, or its error as the one state every name is in."""
    return future.result() if not future.exception() else {"*": f"error: {future.exception()}"}


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
