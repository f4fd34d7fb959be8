"""Sending HTTP requests to a model or store server: a request the server refuses for now
(429, 500, 502, 503, 504) or whose connection it resets is tried again after an exponential
backoff with jitter, or after the server's ``Retry-After``, until a deadline; a refusal and
a connection error are one-line errors that name the server. The chat client
(``ragkit.llm.remote``), the remote embedder and the Chroma store send through here."""

from __future__ import annotations

import contextlib
import email.utils
import random
import time
from typing import Callable, Iterator

from ..errors import ModelError, RagkitError
from .extras import requires_extra

with requires_extra("llm"):
    import httpx

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})    # the server may answer a later try
# The server dropped the connection (reset, or closed it without a response): worth a new try.
# A refused connection (ConnectError) is not: nothing listens there.
RESETS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.5, 8.0


def backoff_s(tries: int, rng: random.Random) -> float:
    """The wait before try ``tries + 1``: exponential (0.5 s doubling, at most 8 s), with
    "equal jitter" (between half and all of it) so clients refused together spread out."""
    full = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (tries - 1))
    return full / 2 + rng.uniform(0, full / 2)


def retry_after_s(response: httpx.Response) -> float | None:
    """The server's ``Retry-After``, in seconds from now (a number, or an HTTP date)."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@contextlib.contextmanager
def transport_errors(what: str, timeout: float, error: type[RagkitError] = ModelError,
                     hint: str = "") -> Iterator[None]:
    """httpx's timeouts and connection errors as one-line ``error``s that start with ``what``
    (``llm server http://...``); ``hint`` (what to do) ends the not-reachable line."""
    try:
        yield
    except httpx.TimeoutException:
        raise error(f"{what}: no reply within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise error(f"{what}: not reachable ({type(exc).__name__}: {' '.join(str(exc).split())}){hint}") from None


def refusal(response: httpx.Response, what: str, error: type[RagkitError] = ModelError) -> RagkitError:
    """A refused request as one line: ``what``, the status, and the server's own message."""
    try:
        detail = response.json()
        detail = detail.get("error", detail) if isinstance(detail, dict) else detail
        detail = detail.get("message", detail) if isinstance(detail, dict) else detail
    except ValueError:
        detail = response.text
    detail = " ".join(str(detail).split())[:300]
    return error(f"{what}: HTTP {response.status_code} ({detail})")


def send_retrying(http: httpx.Client, request: Callable[[], httpx.Request], *, what: str, timeout: float,
                  deadline: float, rng: random.Random, error: type[RagkitError] = ModelError,
                  stream: bool = False, final: Callable[[httpx.Response], bool] | None = None) -> httpx.Response:
    """The server's response to ``request()``, tried again while the server refuses it for
    now (``RETRY_STATUSES``, a reset connection) and no new try would start ``deadline``
    seconds after the first; then a one-line ``error`` starting with ``what``. ``final(response)``
    may say a refusal is not worth a new try. With ``stream``, the response is open: the
    caller closes it. ServerLLM and RemoteEmbedder send every request through here."""
    started, tries = time.monotonic(), 0
    while True:
        tries += 1
        response, why = None, ""
        with transport_errors(what, timeout, error):
            try:
                response = http.send(request(), stream=stream)
            except RESETS as exc:
                why = f"connection reset ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"
        if response is not None:
            if response.status_code not in RETRY_STATUSES:
                return response
            if stream:
                with transport_errors(what, timeout, error):
                    response.read()
                response.close()
            if final is not None and final(response):
                return response
        wait = backoff_s(tries, rng)
        asked = retry_after_s(response) if response is not None else None
        if asked is not None:
            wait = asked
        spent = time.monotonic() - started
        if spent + wait > deadline:
            gave_up = (f"; gave up after {tries} {'try' if tries == 1 else 'tries'} in {spent:.1f} s "
                       f"(RAGKIT_LLM_RETRY_S {deadline:g} s"
                       + (f", Retry-After {asked:g} s)" if asked is not None else ")"))
            if response is None:
                raise error(f"{what}: {why}{gave_up}")
            raise error(f"{refusal(response, what, error)}{gave_up}")
        time.sleep(wait)
