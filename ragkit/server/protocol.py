"""What every route of ``ragkit serve`` shares: an error as an HTTP status and a one-line
message (``HTTPProblem``, ``problem_for``), a request body read as JSON (``decode_json``),
the form of a conversation id (``check_session``), and whether a streamed answer was
replaced by the checked one (``replacement``)."""

from __future__ import annotations

import json
import logging
import re

from ..errors import IndexFormatError, InputError, ModelError, RagkitError, StoreUnavailableError
from ..service import SESSION_PATTERN

log = logging.getLogger("ragkit.server")
SESSION_ID = re.compile(SESSION_PATTERN)


class HTTPProblem(Exception):
    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


# An absolute path of two or more parts ("/srv/ragkit/kg/biomed.json.gz"), not a URL's ("http://h:1/v1")
_SERVER_PATH = re.compile(r"(?<![\w:/.~])/(?:[^/\s'\"(),:;=]+/)+([^/\s'\"(),:;=]+)")


def without_paths(message: str) -> str:
    """``message`` with each absolute path on the server cut to its last part ("store
    biomed.json.gz: ..."): a client learns which source, not where the server keeps it."""
    return _SERVER_PATH.sub(r"\1", message)


def problem_for(exc: BaseException) -> HTTPProblem:
    """The HTTP status and one-line message for an error raised while answering; the message
    names no path on the server (``without_paths``; the log has it whole)."""
    if isinstance(exc, HTTPProblem):
        return exc
    if isinstance(exc, RagkitError) and _SERVER_PATH.search(str(exc)):
        log.info("error with server paths: %s", exc)
    if isinstance(exc, InputError):
        return HTTPProblem(400, without_paths(str(exc)))
    if isinstance(exc, (IndexFormatError, StoreUnavailableError)):
        return HTTPProblem(503, without_paths(str(exc)))
    if isinstance(exc, ModelError):
        return HTTPProblem(502, without_paths(str(exc)))
    if isinstance(exc, RagkitError):
        return HTTPProblem(503, without_paths(str(exc)))
    log.exception("unexpected error", exc_info=exc)
    return HTTPProblem(500, f"internal error ({type(exc).__name__}); see the server log")


def decode_json(raw: bytes | str, max_body: int | None = None):
    """A request body's JSON; HTTPProblem 400 (or 413 over ``max_body`` bytes) otherwise."""
    size = len(raw.encode("utf-8") if isinstance(raw, str) else raw)
    if max_body is not None and size > max_body:
        raise HTTPProblem(413, f"request: {size} bytes, over the {max_body}-byte limit")
    try:
        data = json.loads(raw)
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise HTTPProblem(400, "request: holds text that is not valid Unicode (a lone surrogate)") from None
    except (ValueError, RecursionError) as exc:   # JSONDecodeError, huge integers, deep nesting
        raise HTTPProblem(400, f"request: not valid JSON ({' '.join(str(exc).split())[:200]})") from None
    return data


def check_session(session) -> None:
    if session is not None and (not isinstance(session, str) or not SESSION_ID.fullmatch(session)):
        raise HTTPProblem(400, "session: must be 1-64 letters, digits or _.:-")


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


__all__ = ["HTTPProblem", "SESSION_ID", "check_session", "decode_json", "problem_for", "replacement", "without_paths"]
