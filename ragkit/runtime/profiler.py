"""One shared stage timer: every pipeline stage runs inside ``profiler.stage(name)`` and
its wall time (milliseconds) lands in the answer's ``timings_ms``."""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

from .cancel import checkpoint


class Profiler:
    """Accumulates wall time per named stage, in the order stages first ran."""

    def __init__(self) -> None:
        self._ms: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        checkpoint()            # a request that has run out of time stops before the next stage
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - started) * 1000.0)

    def add(self, name: str, ms: float) -> None:
        self._ms[name] = self._ms.get(name, 0.0) + ms

    def as_dict(self, ndigits: int = 3) -> dict[str, float]:
        out = {k: round(v, ndigits) for k, v in self._ms.items()}
        out["total"] = round(sum(self._ms.values()), ndigits)
        return out
