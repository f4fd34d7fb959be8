"""Fault injection for the fault tests (``tests/test_faults.py``): with
``RAGKIT_KILL_AT=<point>:<n>`` in the environment, the process kills itself with SIGKILL the
``n``-th time it reaches ``fault_point(<point>)``, as a power cut or the OOM killer would.
Unset (always, outside those tests) a fault point costs one cached lookup."""

from __future__ import annotations

import functools
import os
import signal

_seen: dict[str, int] = {}


@functools.cache
def _wanted() -> tuple[str, int] | None:
    from ..config import Settings

    wanted = Settings.from_env().kill_at
    if not wanted:
        return None
    point, _, count = wanted.partition(":")
    return point, int(count or 1)


def fault_point(name: str) -> None:
    """SIGKILL this process here when ``RAGKIT_KILL_AT`` names this point and count."""
    wanted = _wanted()
    if wanted is None or wanted[0] != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] >= wanted[1]:
        os.kill(os.getpid(), signal.SIGKILL)
