"""An index build's per-chunk work on a Ray cluster: ``ragkit index build --engine ray``.

Reading and chunking the files, tokenizing, the chunk vectors and the concept extraction
run as Ray Data stages; the driver (the process that called ``build_index``) keeps the
corpus's order and assembles the same artifacts a local build writes, in its staging
version, so the index is the local build's to the last bit (``retrieval.build``). Each
stage sends batches of items: a batch is one row of a Ray dataset, mapped by a task (a
pure function: reading, tokenizing, extraction) or by an actor of a pool (the embedder,
whose model each actor loads once). The stages' outputs are held in Ray's object store
until the driver has read them all, in order.

    with RayEngine("127.0.0.1:6379") as engine:      # None: RAY_ADDRESS, else a local cluster
        report = build_index(spec, engine=engine)
    engine.report()    # address, dashboard, CPUs, nodes, and per stage: items, seconds, items/s

Ray retries a task whose worker died and restarts a pool's actor; a stage that still
fails (the cluster gone, the driver cut off) raises ``ClusterError`` naming the stage, and
the index folder stays as it was (the build wrote only its staging version).

The files of a folder corpus are read by the workers at the path the driver gives, so on a
cluster of several machines that path must be on storage every node sees.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import queue
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Callable, Iterator, Sequence, TypeVar

from ..config import Settings, worker_environment
from ..errors import ClusterError, ClusterLost, RagkitError
from .extras import requires_extra

T = TypeVar("T")
R = TypeVar("R")

BATCH = 64                  # items per row of a stage's dataset (one call of the stage's function)
LOST_S = 10.0               # a head that takes no connection this long is a lost cluster
WATCH_S = 1.0               # how often the head is tried during a build
CONNECT_S = 5.0             # how long a cluster's address may take to accept a connection
MAX_BLOCKS = 256            # rows are grouped into at most this many blocks (tasks) per stage


@dataclass(frozen=True)
class StageTiming:
    """One stage of a cluster build: what it did, to how many items, in how long."""

    stage: str
    items: int
    unit: str
    seconds: float

    @property
    def per_s(self) -> float:
        return round(self.items / self.seconds, 1) if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "per_s": self.per_s}


def _rows(items: Sequence, batch: int) -> list[dict[str, Any]]:
    return [{"i": n, "x": pickle.dumps(list(items[start:start + batch]), protocol=pickle.HIGHEST_PROTOCOL)}
            for n, start in enumerate(range(0, len(items), batch))]


@dataclass(frozen=True)
class _Failed:
    """A batch whose function raised: the driver raises ``error`` again (a ``RagkitError``
    as it was, anything else as a ``ClusterError`` naming the stage). An exception of the
    function is the same on every try, so it is not left to Ray's retries, which are for
    workers that died."""

    error: BaseException


def _applied(fn: Callable[[list], list], rows: dict) -> dict:
    import numpy as np

    out = []
    for x in rows["x"]:
        try:
            result: Any = fn(pickle.loads(x))
        except Exception as exc:
            result = _Failed(exc if isinstance(exc, RagkitError) else RuntimeError(f"{type(exc).__name__}: {exc}"))
        out.append(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    return {"i": rows["i"], "y": np.array(out, dtype=object)}


def _actor(factory: Callable[[], Callable[[list], list]]) -> type:
    """A class for Ray Data's actor pool: each actor makes its function once (a model loaded
    once per actor). The factory is the class's own attribute, not a constructor argument,
    so a restarted actor needs nothing from the object store."""
    class StageActor:
        make = staticmethod(factory)

        def __init__(self) -> None:
            self.fn = self.make()

        def __call__(self, rows: dict) -> dict:
            return _applied(self.fn, rows)

    StageActor.__name__ = StageActor.__qualname__ = f"StageActor_{getattr(factory, '__name__', 'fn')}"
    return StageActor


class RayEngine:
    """A connection to a Ray cluster that runs an index build's stages (see the module's
    docstring). ``address``: a cluster's ``host:port`` (or ``auto``); None takes
    ``RAY_ADDRESS`` and, without it, starts a cluster on this machine for the build.
    ``actors``: the embedding pool's size (None: one per CPU of the cluster)."""

    name = "ray"

    def __init__(self, address: str | None = None, *, progress: bool | None = None,
                 actors: int | None = None) -> None:
        self.address = address or Settings.from_env().ray_address
        self.progress = progress
        self.actors = actors
        self.stages: list[StageTiming] = []
        self.dashboard: str | None = None
        self.cpus = 0
        self.nodes = 0
        self._started_here = False
        self._show = False
        self.lost = False
        self._stopped: threading.Event | None = None

    # ------------------------------------------------------------------ the connection
    def __enter__(self) -> "RayEngine":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        with requires_extra("ray"):
            import ray
            import ray.data    # here, so that a missing pyarrow is named now
        from .progress import show_progress

        # Ray calls ray.init() itself when a call finds no connection: a stage's thread still
        # running after its cluster was lost would start a new cluster on this machine.
        with contextlib.suppress(ImportError, AttributeError):
            import ray._private.auto_init_hook as auto_init

            auto_init.enable_auto_connect = False
        where = self.address or "a local cluster"
        if self.address:
            _answering(self.address)
        if ray.is_initialized():
            ray.shutdown()
        try:
            context = ray.init(address=self.address, logging_level=logging.WARNING, log_to_driver=False,
                               include_dashboard=None if self.address else False,
                               runtime_env={"env_vars": worker_environment()})
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(f"--address {where}: no Ray cluster reachable there "
                               f"({type(exc).__name__}: {_last_line(exc)})") from None
        self._started_here = True
        self.dashboard = getattr(context, "dashboard_url", None) or None
        self.address = getattr(context, "address_info", {}).get("gcs_address") or self.address
        self._watch()
        self.cpus = int(ray.cluster_resources().get("CPU", 0))
        self.nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        data = ray.data.DataContext.get_current()
        self._show = show_progress(self.progress)
        data.enable_progress_bars = self._show
        # Ray Data's own log lines (plans, "progress bars disabled") only when bars are shown.
        logging.getLogger("ray.data").setLevel(logging.WARNING if self._show else logging.ERROR)
        if self._show:
            dashboard = f"dashboard http://{self.dashboard}" if self.dashboard else "no dashboard"
            print(f"ray: cluster {self.address}, {self.cpus} CPUs on {self.nodes} nodes, {dashboard}",
                  file=sys.stderr)

    def _watch(self) -> None:
        """Watch the cluster from a thread: when its head takes no connection for ``LOST_S``
        the stage running fails naming itself (Ray alone would end this process a minute
        later with a message of its own)."""
        self.lost = False
        head = _head(self.address) if self.address else None
        if head is None:
            return
        stopped = self._stopped = threading.Event()

        def watch() -> None:
            silent_since = None
            while not stopped.wait(WATCH_S):
                if _refusal(head) is None:
                    silent_since = None
                    continue
                silent_since = silent_since or time.monotonic()
                if time.monotonic() - silent_since >= LOST_S and not stopped.is_set():
                    self.lost = True
                    return

        threading.Thread(target=watch, name="ragkit-ray-watch", daemon=True).start()

    def close(self) -> None:
        if self._stopped is not None:
            self._stopped.set()
        if self._started_here and not self.lost:      # a lost cluster has nothing to shut down
            import ray

            ray.shutdown()
        self._started_here = False

    # ------------------------------------------------------------------ the stages
    def map(self, fn: Callable[[list[T]], list[R]], items: Sequence[T], *, stage: str, unit: str = "chunk",
            batch: int = BATCH) -> list[R]:
        """``fn`` over ``items`` a batch at a time, by Ray tasks; the results in the items'
        order. ``fn`` takes a list and returns one result per item (a module-level function
        or a ``functools.partial`` of one, so that the workers can import it)."""
        return self._run(items, stage, unit, batch, lambda ds: ds.map_batches(
            partial(_applied, fn), batch_size=1, batch_format="numpy"))

    def map_with(self, factory: Callable[[], Callable[[list[T]], list[R]]], items: Sequence[T], *,
                 stage: str, unit: str = "chunk", batch: int = BATCH) -> list[R]:
        """As ``map``, by a pool of actors, each calling ``factory()`` once for the function
        it applies (a model loaded once per actor)."""
        import ray.data

        rows = -(-len(items) // batch)
        size = max(1, min(self.actors or self.cpus, rows))
        return self._run(items, stage, unit, batch, lambda ds: ds.map_batches(
            _actor(factory), batch_size=1, batch_format="numpy", num_cpus=1,
            compute=ray.data.ActorPoolStrategy(size=size)))

    def _run(self, items: Sequence, stage: str, unit: str, batch: int, mapped: Callable) -> list:
        import ray.data

        started = time.perf_counter()
        rows = _rows(items, batch)
        results: list[Any] = [None] * len(rows)
        if rows:
            dataset = mapped(ray.data.from_items(rows, override_num_blocks=min(len(rows), MAX_BLOCKS)))
            for part in self._batches(dataset, stage):
                for n, out in zip(part["i"].tolist(), part["y"]):
                    results[n] = pickle.loads(out)
        for part in results:
            if isinstance(part, _Failed):
                if isinstance(part.error, RagkitError):
                    raise part.error
                raise ClusterError(f"ray stage {stage}: {part.error}")
        missing = sum(1 for part in results if part is None)
        if missing:
            raise ClusterError(f"ray stage {stage}: {missing} of {len(rows)} batches came back empty")
        timing = StageTiming(stage, len(items), unit, round(time.perf_counter() - started, 3))
        self.stages.append(timing)
        if self._show:
            print(f"ray stage {stage}: {timing.items} {unit}s in {timing.seconds} s ({timing.per_s} {unit}s/s)",
                  file=sys.stderr)
        return [result for part in results for result in part]

    def _batches(self, dataset: Any, stage: str) -> Iterator[dict]:
        """The dataset's batches as they come, read by a thread: this one waits where the
        watch's news of a lost cluster reaches it (Ray's own wait would not return)."""
        handed: queue.Queue = queue.Queue(maxsize=4)
        done = object()

        def read() -> None:
            try:
                for part in dataset.iter_batches(batch_format="numpy", batch_size=None):
                    handed.put(part)
                handed.put(done)
            except BaseException as exc:      # handed to the waiting thread, raised there
                handed.put(exc)

        threading.Thread(target=read, name=f"ragkit-ray-{stage}", daemon=True).start()
        while True:
            try:
                part = handed.get(timeout=WATCH_S)
            except queue.Empty:
                if self.lost:
                    raise ClusterLost(f"ray stage {stage}: the cluster at {self.address} stopped answering "
                                       f"(no connection for {LOST_S:.0f} s)") from None
                continue
            if part is done:
                return
            if isinstance(part, BaseException):   # a worker that died past its retries, a lost cluster
                raise ClusterError(f"ray stage {stage}: {type(part).__name__}: {_last_line(part)}") from part
            yield part

    def report(self) -> dict[str, Any]:
        """What ``ragkit index build --json`` prints under ``engine``."""
        return {"name": self.name, "address": self.address, "dashboard": self.dashboard, "cpus": self.cpus,
                "nodes": self.nodes, "stages": [timing.to_dict() for timing in self.stages]}


def _head(address: str) -> tuple[str, int] | None:
    """The (host, port) of a cluster's ``host:port`` or ``ray://host:port``; None for "auto"
    or another form Ray reads itself."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    return (host.strip("[]"), int(port)) if host and port.isdigit() else None


def _refusal(head: tuple[str, int]) -> OSError | None:
    """Why the head takes no connection within ``CONNECT_S``; None when it takes one."""
    try:
        socket.create_connection(head, timeout=CONNECT_S).close()
    except OSError as exc:
        return exc
    return None


def _answering(address: str) -> None:
    """A cluster's address whose head takes no connection is a one-line error: Ray itself
    would keep trying for minutes."""
    head = _head(address)
    refused = _refusal(head) if head is not None else None
    if refused is not None:
        raise ClusterError(f"--address {address}: no Ray cluster answers there "
                           f"({refused.strerror or type(refused).__name__}; start one with 'ray start --head')")


def _last_line(exc: BaseException) -> str:
    """The exception's last line: a Ray task error's message comes after the worker's traceback."""
    text = str(exc).strip()
    return text.splitlines()[-1].strip() if text else type(exc).__name__
