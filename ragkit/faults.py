"""Fault injection for the fault tests (``tests/test_faults.py``): with
``RAGKIT_KILL_AT=<point>:<n>`` in the environment, the process kills itself with SIGKILL the
``n``-th time it reaches ``fault_point(<point>)``, as a power cut or the OOM killer would.
Unset (always, outside those tests) a fault point costs one dictionary lookup."""

from __future__ import annotations

import os
import signal

_seen: dict[str, int] = {}


def fault_point(name: str) -> None:
    """SIGKILL this process here when ``RAGKIT_KILL_AT`` names this point and count."""
    wanted = os.environ.get("RAGKIT_KILL_AT")
    if not wanted:
        return
    point, _, count = wanted.partition(":")
    if point != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] >= int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
