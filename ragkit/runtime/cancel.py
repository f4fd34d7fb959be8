"""One deadline for a whole request: a check the server sets for the question a worker thread
is answering (``cancellable``), which every stage and every model call makes first
(``checkpoint``). When the request has timed out or its client has gone, the check raises,
and the worker is free at the next stage or model call (a reranker's next candidate, the
judge's next claim), not when the pipeline would have finished. Outside a server no check is
set and ``checkpoint`` does nothing."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable, Iterator

_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("ragkit_cancel_check", default=None)


def checkpoint() -> None:
    """Raise what the current request's check raises if it must stop now; nothing otherwise."""
    check = _CHECK.get()
    if check is not None:
        check()


@contextlib.contextmanager
def cancellable(check: Callable[[], None]) -> Iterator[None]:
    """Make ``check`` the checkpoint of the work done inside (in this thread, or a context
    copied from it)."""
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)


__all__ = ["cancellable", "checkpoint"]
