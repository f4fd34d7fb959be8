"""The OpenAI chat API over the pipelines, mounted by ``ragkit.server``, so that any OpenAI
client (the ``openai`` package, chat UIs, agent frameworks) can ask ragkit.

- ``GET /v1/models``: two models per served pipeline: ``ragkit-<pipeline>`` (the model
  writes the answer, checked as in ``/ask``) and ``ragkit-<pipeline>-no-llm`` (answered from
  the evidence, as ``"no_llm": true``); then the embedding models of ``POST /v1/embeddings``
  (``ragkit.server.openai_embeddings``).
- ``POST /v1/chat/completions``: the ``model`` picks the pipeline, the last user message is
  the question. The answer is the message's ``content``; what ``/ask`` adds (citations,
  trace, timings, session) rides in an extra ``ragkit`` field. The request may carry
  ``/ask``'s options in a ``ragkit`` object (``{"ragkit": {"k": 8, "session": "new"}}``;
  with the ``openai`` client, ``extra_body``). ``max_tokens`` (or
  ``max_completion_tokens``) bounds the generation; sampling fields (``temperature``,
  ``seed`` ...) and other fields ragkit does not read are accepted and ignored (ragkit
  decodes greedily); what it cannot honour (``n`` > 1, ``tools``, a JSON
  ``response_format``) is refused.
- With ``"stream": true`` the answer comes as server-sent events, ``data: {chunk}`` lines
  ending with ``data: [DONE]``: a first chunk with the role at once, then the model's
  answer as it writes it, one chunk per token (an answer without the model: the answer in
  word pieces), then the check's verdict: a chunk with ``finish_reason`` and the ``ragkit``
  field, which holds what the non-streamed ``ragkit`` field holds plus the checked
  ``answer`` and ``replaced`` (with ``replaced_because``): whether that answer differs from
  the text streamed, as on ``/ws`` (an OpenAI client cannot take back text it has shown).
  Only the answer's generation is streamed as content, not a kg plan or an entity list
  the model writes first, nor the Vietnamese re-ask. An error after the stream began is an
  ``error`` event.
- Earlier user messages feed a pipeline that reads earlier turns (the kg pipeline): they are
  asked again in order (without the model) to rebuild the turns a follow-up ("and which of
  them ...") refers to, unless the request names a ``session``, whose turns are used instead.

Errors are OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, with the
same one-line messages and statuses as ``/ask``; an unknown model is 404
(``model_not_found``). Access control is the server's (``ragkit.server.access``): the API key is the
client's ``api_key``, sent as a bearer token.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable

from ..errors import InputError
from ..runtime.extras import requires_extra
from ..pipelines import get_pipeline
from ..service import AskRequest, Service, request_type
from .access import error_body
from .openai_embeddings import EMBEDDING_MODELS
from .protocol import HTTPProblem, check_session, decode_json, problem_for, replacement

with requires_extra("server"):
    from fastapi import FastAPI, Request
    from fastapi.responses import Response, StreamingResponse

PREFIX = "ragkit-"
NO_LLM = "-no-llm"
KEEP_ALIVE_S = 15.0            # an SSE comment this often while the answer is made
OPTION_FIELDS = "ragkit"       # /ask's options in a chat request, and /ask's extras in its answer


def model_ids(pipelines: list[str]) -> list[str]:
    """The models ``/v1/models`` lists for the served ``pipelines``."""
    return [m for p in pipelines for m in (f"{PREFIX}{p}", f"{PREFIX}{p}{NO_LLM}")]


def read_model(model: Any, served: list[str]) -> tuple[str, bool]:
    """The pipeline and ``no_llm`` a model id names; HTTPProblem 404 for one not served."""
    if not isinstance(model, str) or not model:
        raise HTTPProblem(400, f"model: must be one of {', '.join(model_ids(served))}, got {model!r}")
    if model in EMBEDDING_MODELS:
        raise HTTPProblem(400, f"model: {model!r} is an embedding model (POST /v1/embeddings)")
    name, no_llm = (model[: -len(NO_LLM)], True) if model.endswith(NO_LLM) else (model, False)
    pipeline = name[len(PREFIX):] if name.startswith(PREFIX) else None
    if pipeline not in served:
        raise HTTPProblem(404, f"model: {model!r} is not served here (GET /v1/models lists "
                               f"{', '.join(model_ids(served))})", code="model_not_found")
    return pipeline, no_llm


def message_text(message: Any, i: int) -> tuple[str, str]:
    """A message's role and text (content as a string, or a list of text parts)."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise HTTPProblem(400, f"messages[{i}]: must be an object with a 'role' and a 'content'")
    content = message.get("content")
    if content is None:
        return message["role"], ""
    if isinstance(content, str):
        return message["role"], content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        if any(p.get("type") != "text" or not isinstance(p.get("text"), str) for p in content):
            raise HTTPProblem(400, f"messages[{i}].content: ragkit reads text parts only")
        return message["role"], "".join(p["text"] for p in content)
    raise HTTPProblem(400, f"messages[{i}].content: must be text or a list of text parts, "
                           f"got {type(content).__name__}")


@dataclass
class ChatRequest:
    """A chat completion request as ragkit reads it."""

    model: str
    request: AskRequest
    session: str | None = None
    earlier: list[str] = field(default_factory=list)    # the user's earlier messages, oldest first
    stream: bool = False
    include_usage: bool = False


def parse_chat(data: Any, served: list[str], max_question: int) -> ChatRequest:
    """A ChatRequest from a decoded JSON body; HTTPProblem 400/404 with one line otherwise."""
    if not isinstance(data, dict):
        raise HTTPProblem(400, f"request: must be a JSON object, got {type(data).__name__}")
    if "model" not in data:
        raise HTTPProblem(400, "model: is missing (GET /v1/models lists them)")
    pipeline, no_llm = read_model(data["model"], served)
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise HTTPProblem(400, "messages: must be a non-empty list of {role, content} objects")
    said = [message_text(m, i) for i, m in enumerate(messages)]
    users = [text for role, text in said if role == "user"]
    if not users:
        raise HTTPProblem(400, "messages: has no user message (the last one is the question)")
    if data.get("n", 1) not in (1, None):
        raise HTTPProblem(400, f"n: ragkit writes one answer per question, got {data['n']!r}")
    for name in ("tools", "functions"):
        if data.get(name):
            raise HTTPProblem(400, f"{name}: ragkit answers from its pipelines and calls no tools")
    form = data.get("response_format")
    if form is not None and (not isinstance(form, dict) or form.get("type") != "text"):
        raise HTTPProblem(400, "response_format: ragkit answers in text only ({\"type\": \"text\"})")
    stream = data.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise HTTPProblem(400, f"stream: must be bool, got {type(stream).__name__}")
    stream_options = data.get("stream_options") or {}
    if not isinstance(stream_options, dict):
        raise HTTPProblem(400, f"stream_options: must be an object, got {type(stream_options).__name__}")
    options = data.get(OPTION_FIELDS) or {}
    if not isinstance(options, dict):
        raise HTTPProblem(400, f"{OPTION_FIELDS}: must be an object of /ask options, got {type(options).__name__}")
    for name in ("question", "pipeline"):
        if name in options:
            giver = "model" if name == "pipeline" else "last user message"
            raise HTTPProblem(400, f"{OPTION_FIELDS}.{name}: the {giver} gives it")
    options = dict(options)
    session = options.pop("session", None)
    check_session(session)
    budget = data.get("max_completion_tokens", data.get("max_tokens"))
    ask = {"question": users[-1], "pipeline": pipeline, **options}
    if budget is not None:
        ask["max_tokens"] = budget
    if no_llm:
        ask["no_llm"] = True
    try:
        request = request_type().from_dict(ask)
    except InputError as exc:
        raise HTTPProblem(400, str(exc)) from None
    if len(request.question) > max_question:
        raise HTTPProblem(400, f"question: {len(request.question)} characters, over the "
                               f"{max_question}-character limit")
    earlier = [q for q in users[:-1] if q.strip() and len(q) <= max_question]
    return ChatRequest(model=data["model"], request=request, session=session, earlier=earlier,
                       stream=bool(stream), include_usage=bool(stream_options.get("include_usage")))


def replay(service: Service, pipeline: str, questions: list[str], max_turns: int) -> list[dict]:
    """The turns of ``questions`` asked of ``pipeline`` in order (without the model): the
    history a follow-up refers to, rebuilt from a chat's earlier user messages."""
    turns: list[dict] = []
    for question in questions[-max_turns:]:
        try:
            answered = service.answer(request_type()(question, pipeline, no_llm=True, history=list(turns) or None))
        except InputError:          # a message that is no question (empty, too long): skipped
            continue
        turn = getattr(answered.trace, "turn", None)
        if turn is not None:
            turns = [*turns, turn][-max_turns:]
    return turns


def usage_of(data: dict) -> dict:
    """Tokens the model read and wrote for the answer (zero when no model wrote it)."""
    generation = (data.get("trace") or {}).get("generation") or {}
    prompt, completion = int(generation.get("prompt_tokens") or 0), int(generation.get("completion_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def extras(data: dict) -> dict:
    """What ``/ask`` answers besides the text: the ``ragkit`` field."""
    return {k: v for k, v in data.items() if k != "answer"}


def verdict(data: dict, streamed: list[str]) -> dict:
    """The ``ragkit`` field of a stream's last chunk: ``extras`` plus the checked ``answer``
    and whether it replaced the ``streamed`` text (``replaced``, ``replaced_because``)."""
    replaced = replacement({1: streamed} if streamed else {}, data)
    if replaced["replaced"] and (data.get("trace") or {}).get("reasked"):
        replaced["replaced_because"] = ("the model answered in English and was asked again in Vietnamese; "
                                        "the second answer is the one checked")
    return {**extras(data), "answer": data["answer"], **replaced}


def pieces(text: str) -> list[str]:
    """``text`` in word pieces whose concatenation is ``text``."""
    return re.findall(r"\S+\s*|\s+", text)


def sse(data: dict | str) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)}\n\n".encode()


Answerer = Callable[..., Awaitable[dict]]


def add_openai_routes(app: FastAPI, service: Service, *, answer: Answerer, open_session: Callable,
                      principal_of: Callable, max_question: int, max_turns: int) -> None:
    """Mount ``/v1/models`` and ``/v1/chat/completions`` on ``app``. ``answer`` is the
    server's (in-flight limits, timeout, log line); ``open_session`` checks a session id
    against its owner (``"new"`` opens one)."""
    @app.get("/v1/models")
    async def models():
        created = int(time.time())
        return {"object": "list", "data": [{"id": m, "object": "model", "created": created, "owned_by": "ragkit"}
                                           for m in [*model_ids(service.available()), *EMBEDDING_MODELS]]}

    @app.post("/v1/chat/completions", openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": chat_request_schema()}}}})
    async def chat_completions(request: Request):
        with requires_extra("server"):
            from starlette.requests import ClientDisconnect

        try:
            body = await request.body()
        except ClientDisconnect:
            return Response(status_code=400)
        chat = parse_chat(decode_json(body), service.available(), max_question)
        principal = principal_of(request.scope)
        session = open_session(principal, chat.session)
        ask = chat.request
        prepare = None
        if get_pipeline(ask.pipeline).conversational and session is None and ask.history is None and chat.earlier:
            def prepare(req: AskRequest) -> None:        # runs in the worker, within the timeout
                req.history = replay(service, req.pipeline, chat.earlier, max_turns) or None
        cid, created = f"chatcmpl-{secrets.token_hex(12)}", int(time.time())
        if not chat.stream:
            data = await answer(ask, principal, session, via="v1", prepare=prepare)
            out = {"id": cid, "object": "chat.completion", "created": created, "model": chat.model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": data["answer"]},
                                "finish_reason": "stop"}],
                   "usage": usage_of(data), OPTION_FIELDS: extras(data)}
            return Response(json.dumps(out, ensure_ascii=False), media_type="application/json")

        chunk = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": chat.model}

        return StreamingResponse(chat_events(answer, ask, principal, session, prepare, chunk, chat.include_usage),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def chat_events(answer: Answerer, ask: AskRequest, principal: str, session: str | None, prepare,
                      chunk: dict, include_usage: bool) -> AsyncIterator[bytes]:
    """A streamed chat completion's server-sent events: the role, the answer's tokens as
    the model writes them (keep-alives while it thinks), the check's verdict, the usage when
    asked, then [DONE]; an error as one event."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()

    def on_token(piece: str, call: int, purpose: str) -> None:    # runs in the worker thread
        if purpose == "answer":
            loop.call_soon_threadsafe(queue.put_nowait, (piece, call))

    def content(piece: str) -> bytes:
        return sse({**chunk, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})

    job = asyncio.ensure_future(answer(ask, principal, session, on_token, via="v1", prepare=prepare))
    getter: asyncio.Future | None = None
    streamed: list[str] = []          # the answer's generation as the client got it
    shown = None                      # its call (a second answer generation is not shown)
    try:
        yield sse({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                         "finish_reason": None}]})
        while True:
            if getter is None:
                getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({job, getter}, timeout=KEEP_ALIVE_S,
                                         return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                (piece, call), getter = getter.result(), None
                shown = call if shown is None else shown
                if call == shown:
                    streamed.append(piece)
                    yield content(piece)
            elif job in done:
                break
            else:
                yield b": keep-alive\n\n"
        while not queue.empty():
            piece, call = queue.get_nowait()
            shown = call if shown is None else shown
            if call == shown:
                streamed.append(piece)
                yield content(piece)
        try:
            data = job.result()
        except Exception as exc:
            problem = problem_for(exc)
            yield sse(error_body("/v1/", problem.status, problem.message, problem.code))
            yield sse("[DONE]")
            return
        if not streamed:        # no model wrote it live: the answer in pieces
            for piece in pieces(data["answer"]):
                yield content(piece)
        yield sse({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   OPTION_FIELDS: verdict(data, streamed)})
        if include_usage:
            yield sse({**chunk, "choices": [], "usage": usage_of(data)})
        yield sse("[DONE]")
    finally:
        job.cancel()      # the client left: the answer stops at its next token
        if getter is not None and not getter.done():
            getter.cancel()
        job.add_done_callback(lambda task: task.cancelled() or task.exception())


def chat_request_schema() -> dict:
    """The OpenAPI schema of a chat completion request, as ragkit reads it."""
    from ..service import ask_request_model

    options = ask_request_model().model_json_schema()
    for name in ("question", "pipeline"):
        options["properties"].pop(name, None)
    options["required"] = []
    options["title"] = "RagkitOptions"
    text_part = {"type": "object", "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
                 "required": ["type", "text"]}
    return {"title": "ChatCompletionRequest", "type": "object", "required": ["model", "messages"], "properties": {
        "model": {"type": "string", "description": "ragkit-<pipeline>, or ragkit-<pipeline>-no-llm to answer "
                                                   "from the evidence (GET /v1/models lists them)"},
        "messages": {"type": "array", "minItems": 1, "description": "the last user message is the question; "
                     "earlier user messages feed the kg pipeline's follow-ups",
                     "items": {"type": "object", "required": ["role"], "properties": {
                         "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
                         "content": {"anyOf": [{"type": "string"}, {"type": "array", "items": text_part},
                                               {"type": "null"}]}}}},
        "stream": {"type": "boolean", "default": False},
        "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
        "max_tokens": {"type": "integer", "minimum": 1, "maximum": 4096},
        "max_completion_tokens": {"type": "integer", "minimum": 1, "maximum": 4096},
        "n": {"type": "integer", "enum": [1]},
        OPTION_FIELDS: {**options, "description": "POST /ask's options (and session) for this question"},
    }, "additionalProperties": True}
