"""What every route of the server holds a request to (``Server``): the service, the limits,
the conversations, the questions and WebSocket connections in flight per key, the worker
pool, the answer deadlines and the sources' health; ``Server.answer`` (a question, within
its key's in-flight limit and its deadline, streamed, cancelled when its client leaves) and
``Server.run`` (any other work in the pool, within the timeout)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import AsyncIterator, Callable

from ..errors import InputError
from ..llm.base import generation_purpose
from ..runtime.cancel import cancellable
from ..pipelines import get_pipeline
from ..pipelines.base import MAX_QUESTION_CHARS
from ..service import AskRequest, Service, request_type
from .access import LOCAL, Connections, InFlight
from .deadlines import FLOOR_S, Deadlines, overdue, time_left
from .protocol import HTTPProblem, check_session, decode_json, problem_for

log = logging.getLogger("ragkit.server")
NEW_SESSION = "new"      # "session": "new" asks the server to open a conversation
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


class Server:
    """The state the routes share, typed: one per app (``create_app``)."""

    def __init__(self, service: Service, limits: ServeLimits, *, log_questions: bool = False,
                 embeddings_only: bool = False):
        self.service, self.limits = service, limits
        self.log_questions, self.embeddings_only = log_questions, embeddings_only
        self.sessions = Sessions(limits.sessions_per_key, limits.max_turns)
        self.in_flight = InFlight(limits.questions_per_key)
        self.connections = Connections(limits.websockets_per_key, limits.websockets)
        self.pool = ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix="ragkit-ask")
        self.deadlines = Deadlines(limits.timeout_s, limits.min_timeout_s, limits.stall_timeout_s,
                                   n_ctx=service.llm_config.n_ctx, max_tokens=service.llm_config.max_tokens)
        self.started = time.time()
        self.warm: dict | None = None            # the sources' health; None while they load
        self.checked = 0.0                       # when it was last asked (time.monotonic)
        self.served = 0                          # answers given
        self.embedders: dict | None = None       # embeddings_only: each model's state; None while loading

    @staticmethod
    def principal_of(scope) -> str:
        return scope.get("ragkit.principal") or LOCAL

    def open_session(self, principal: str, session: str | None) -> str | None:
        """The session a request names, checked against its owner; "new" opens one."""
        if session == NEW_SESSION:
            return self.sessions.open(principal)
        if session is not None:
            self.sessions.history(principal, session)      # 404 unless open and this principal's
        return session

    async def answer(self, request: AskRequest, principal: str, session: str | None, on_token=None,
                     via: str = "ask", prepare=None) -> dict:
        """The answer's JSON, within the key's in-flight limit and its deadline, logged.
        ``on_token(piece, call, purpose)`` gets the model's text as it is written (in the
        worker thread; ``purpose``: ``llm.base.generation_purpose``); ``prepare(request)``
        runs in the worker first (within the deadline)."""
        def logged(status: int, ms: float) -> str:
            line = (f"{via} {status} pipeline={request.pipeline} principal={principal} "
                    f"session={session[:8] + '...' if session else '-'} {ms:.0f} ms")
            return line + (f" question={request.question!r}" if self.log_questions else "")

        async with self._held(principal, "questions", "answered", logged):
            return await self._answer(request, principal, session, on_token, prepare)

    async def _answer(self, request: AskRequest, principal: str, session: str | None, on_token=None,
                      prepare=None) -> dict:
        if session is not None and get_pipeline(request.pipeline).conversational and request.history is None:
            request.history = self.sessions.history(principal, session)
        # an LLM rerank reads one prompt per candidate first: its time is in the deadline
        reranking = getattr(request, "rerank", None) == "llm"
        rerank_tokens = RERANK_PROMPT_TOKENS * int(getattr(request, "rerank_depth", 0) or 0) if reranking else 0
        deadline = await self.deadlines.for_answer(not request.no_llm or reranking, request.max_tokens, rerank_tokens)
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
                return self.service.answer(request, tokens)

        loop = asyncio.get_running_loop()
        modelled = not request.no_llm
        self.deadlines.in_flight += modelled
        job = loop.run_in_executor(self.pool, work)
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
            self.deadlines.in_flight -= modelled
        data = answered.to_dict()
        if modelled:            # the answer's own figures: the deadlines follow a machine that slows
            self.deadlines.observe((data.get("trace") or {}).get("generation") or {})
        if session is not None:
            turn = getattr(answered.trace, "turn", None)   # none when nothing in the question was found
            if turn is not None:
                self.sessions.add(principal, session, turn)
            data["session"] = session
        self.served += 1
        return data

    async def run(self, job, principal: str, line: str):
        """``job()``'s result, computed in the worker pool within the key's in-flight limit
        and the timeout (``--timeout``, else the floor of a derived deadline); logged as
        ``line``, the status and the time taken."""
        timeout_s = self.limits.timeout_s if self.limits.timeout_s is not None else self.limits.min_timeout_s
        async with self._held(principal, "requests", "served", lambda status, ms: f"{line} {status} "
                              f"principal={principal} {ms:.0f} ms"):
            work = asyncio.get_running_loop().run_in_executor(self.pool, job)
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

    @contextlib.asynccontextmanager
    async def _held(self, principal: str, what: str, done: str,
                    logged: Callable[[int, float], str]) -> AsyncIterator[None]:
        """Within ``principal``'s in-flight limit (429 over it: so many ``what`` of the key
        are already ``done`` or waiting); the status (499: the client left) and the time
        taken logged as ``logged(status, ms)`` says."""
        started, status = time.monotonic(), 200
        try:
            if not self.in_flight.enter(principal):
                raise HTTPProblem(429, f"request: {self.limits.questions_per_key} {what} of this key are "
                                       f"already {done} or waiting (the limit); send this one when one is done")
            try:
                yield
            finally:
                self.in_flight.leave(principal)
        except HTTPProblem as exc:
            status = exc.status
            raise
        except asyncio.CancelledError:
            status = 499      # the client left
            raise
        finally:
            log.info(logged(status, (time.monotonic() - started) * 1000))

    async def current_health(self) -> dict | None:
        """The sources' health: None while they load; after that asked again (in a thread:
        a server store's check may wait up to its connect timeout) at most once per
        ``HEALTH_TTL_S``, so a store that stops makes /ready false, and true when back."""
        if self.warm is None:
            return None
        if time.monotonic() - self.checked > HEALTH_TTL_S:
            self.checked = time.monotonic()
            loop = asyncio.get_running_loop()
            self.warm = await loop.run_in_executor(None, self.service.health)
        return self.warm
