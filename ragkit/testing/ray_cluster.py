"""A Ray cluster of separate processes on this machine, for the tests and the benchmark of
``index build --engine ray``: a head node and worker nodes, each its own ``ray start``
with its own CPUs, in a temporary folder of their own (no ``/tmp/ray`` shared with other
Ray users), stopped with everything they started.

Ray's servers listen on every interface and have no setting for loopback only, so where
the system allows it (``unshare --net``, as root) the whole cluster, and every command
run with ``cluster.command``, lives in a network namespace of its own whose one
interface is loopback: nothing beyond this machine's processes can reach it, and its
ports cannot collide with anyone's. Elsewhere it runs on this machine's network.

    with running_ray_cluster(nodes=2, cpus=1) as cluster:
        run(cluster.command(["ragkit", "index", "build", ..., "--engine", "ray", "--address", cluster.address]))
        cluster.kill_worker("StageActor")          # SIGKILL one worker process mid-build
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ..config import child_environment
from ..errors import RagkitError
from ..stores.neo4j_launcher import free_port

STARTED = "Ray runtime started"


@dataclass
class RayCluster:
    """A running cluster: its address (``host:port`` of the head), its folder and nodes."""

    address: str
    folder: Path
    nodes: list[subprocess.Popen] = field(default_factory=list)
    network: str | None = None          # the network namespace's path (/proc/<pid>/ns/net); None: the host's

    def command(self, args: Sequence[str]) -> list[str]:
        """``args`` run inside the cluster's network (how a driver reaches it)."""
        return ["nsenter", f"--net={self.network}", *args] if self.network else list(args)

    def worker_pids(self, name: str) -> list[int]:
        """The cluster's worker processes whose title holds ``name`` (a Ray worker's title
        is ``ray::<task or actor>``), for a test that kills one."""
        sessions = {node.pid for node in self.nodes}
        return [pid for pid, sid, title in _processes()
                if sid in sessions and title.startswith("ray::") and name in title]

    def kill_worker(self, name: str) -> int | None:
        """SIGKILL one worker process whose title holds ``name``; its pid, None if none runs."""
        for pid in self.worker_pids(name):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                return pid
        return None

    def stop(self) -> None:
        """Stop every node and what it started (each node is its own process session)."""
        for node in reversed(self.nodes):
            _stop(node)
        self.nodes.clear()


def _ray_command() -> list[str]:
    return [str(Path(sys.executable).with_name("ray"))]


def _network_of_its_own(stack: contextlib.ExitStack) -> str | None:
    """A new network namespace with loopback up, held by a sleeping process (stopped with
    ``stack``); None where the system does not allow one."""
    try:
        holder = subprocess.Popen(["unshare", "--net", "sleep", "86400"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None
    stack.callback(_stop, holder)
    path, ours = f"/proc/{holder.pid}/ns/net", os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and holder.poll() is None:
        with contextlib.suppress(OSError):
            if os.readlink(path) != ours:
                up = subprocess.run(["nsenter", f"--net={path}", "ip", "link", "set", "lo", "up"],
                                    capture_output=True, timeout=30, check=False)
                return path if up.returncode == 0 else None
        time.sleep(0.05)
    return None


def _start_node(cluster: RayCluster, args: Callable[[], list[str]], log: Path, timeout: float,
                attempts: int = 3) -> subprocess.Popen:
    """``ray start --block`` with ``args()``; returns once it says it started (its output to
    ``log``). Ray gives a new node a fixed 30 s to register with the head, which a busy
    machine can miss: such a start is stopped, with what it left running, and tried again
    with fresh arguments (new ports), up to ``attempts`` times."""
    for _ in range(attempts - 1):
        with contextlib.suppress(RagkitError):
            return _start_once(cluster, args(), log, timeout)
    return _start_once(cluster, args(), log, timeout)


def _start_once(cluster: RayCluster, args: list[str], log: Path, timeout: float) -> subprocess.Popen:
    out = log.open("wb")
    node = subprocess.Popen(cluster.command([*_ray_command(), "start", "--block", "--disable-usage-stats", *args]),
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            env=child_environment({"RAY_USAGE_STATS_ENABLED": "0"}))
    out.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if STARTED in text:
            return node
        if node.poll() is not None:
            _stop(node)
            raise RagkitError(f"ray start exited with {node.returncode}: {text.strip().splitlines()[-1:]}")
        time.sleep(0.5)
    _stop(node)
    raise RagkitError(f"ray start: not started within {timeout:.0f} s (log {log})")


def _stop(node: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, sig)
        try:
            node.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):     # what the node started and left behind
        os.killpg(node.pid, signal.SIGKILL)
    for pid in _session(node.pid):                     # workers in process groups of their own
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _processes() -> Iterator[tuple[int, int, str]]:
    """Every live process: its pid, its session and its title (command line)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                yield int(entry.name), os.getsid(int(entry.name)), title


def _session(sid: int) -> list[int]:
    """The live processes of session ``sid``."""
    return [pid for pid, session, _ in _processes() if session == sid]


@contextlib.contextmanager
def running_ray_cluster(nodes: int = 2, cpus: int = 1, *, timeout: float = 180.0,
                        folder: str | Path | None = None) -> Iterator[RayCluster]:
    """A head and ``nodes - 1`` worker nodes of ``cpus`` CPUs each, stopped on exit."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="rk-ray-"))
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        # Ray's own folder holds its sockets, whose paths must fit in 107 bytes: a short one.
        sessions = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rkr-", dir="/tmp",
                                                                    ignore_cleanup_errors=True)))
        cluster = RayCluster("", root, network=_network_of_its_own(stack))
        stack.callback(cluster.stop)

        def head() -> list[str]:
            port = free_port()
            cluster.address = f"127.0.0.1:{port}"
            return ["--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--num-cpus={cpus}",
                    "--include-dashboard=false", f"--ray-client-server-port={free_port()}",
                    f"--dashboard-agent-listen-port={free_port()}", f"--temp-dir={sessions}"]

        def worker() -> list[str]:
            return [f"--address={cluster.address}", "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}",
                    f"--dashboard-agent-listen-port={free_port()}"]

        cluster.nodes.append(_start_node(cluster, head, root / "head.log", timeout))
        for n in range(1, nodes):
            cluster.nodes.append(_start_node(cluster, worker, root / f"node{n}.log", timeout))
        yield cluster
