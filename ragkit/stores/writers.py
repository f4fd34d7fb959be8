"""One writer per artifact, across processes: every build of an index, a graph folder or a
store file holds an inter-process lock on its output (``writer_lock``) from the moment it
reads what is there to the moment its new version is in place.

The lock is a file beside the artifact, ``.<name>.lock``, taken with the ``filelock``
package (``flock`` on POSIX, ``msvcrt`` on Windows), so the operating system releases it when
its holder exits, however it exits: a builder killed by SIGKILL leaves no lock held (its
empty lock file stays until the next writer's release). The holder removes the lock file
before it releases it; a waiter that had opened it finds it unlinked once it holds it, and
takes a new one (``filelock`` checks the link count after ``flock``), so two processes never
hold it at once and nothing is left beside the artifact. A run's private staging names
(``.staging-<pid>-...``, one writer by design) take no lock. Beside
it, ``.<name>.writer.json`` says who holds it (pid, command, since when), for the message a
second writer gets. A second writer waits for the first (``RAGKIT_WRITER_WAIT_S``, default
600 s), saying once on stderr whom it waits for; past that it stops with one line naming the
holder. Within one thread the lock is re-entrant: a build that writes its folder through
``atomic_dir`` and then moves it into place holds it once; another thread waits as another
process would.

Holding it, a writer is the only process that renames versions beside the artifact or
removes old ones (``files.clean_leftovers``), so no cleanup can delete a version another
writer has renamed but not yet switched the link to.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

from ..config import Settings
from ..errors import OutputError, output_error

_HELD: dict[tuple[str, int], int] = {}      # (lock path, thread) -> how deep it is held, in this process
_GUARD = threading.Lock()


def lock_path(target: str | os.PathLike) -> Path:
    """The lock file of ``target``: ``.<name>.lock`` beside it (links not followed: a folder
    artifact's link is what is switched)."""
    target = Path(os.path.abspath(target))
    return target.with_name(f".{target.name}.lock")


def _writer_file(path: Path) -> Path:
    """``.<name>.writer.json`` beside the lock file ``.<name>.lock``: who holds it."""
    return path.with_name(path.name.removesuffix(".lock") + ".writer.json")


def _holder(path: Path) -> str:
    """Who holds the lock at ``path``, as its writer file says ("pid 4242, 'ragkit index build
    ...', since 12:00:03"), or "another process"."""
    try:
        who = json.loads(_writer_file(path).read_text())
        return f"pid {who['pid']}, {who['command']!r}, since {who['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def _command() -> str:
    """This process's command line, short ("ragkit index build --corpus ... --out ...")."""
    first = os.path.basename(sys.argv[0]) if sys.argv else "python"
    argv = ["ragkit" if first in ("__main__.py", "ragkit") else first, *sys.argv[1:]]
    text = " ".join(argv)
    return text if len(text) <= 120 else text[:117] + "..."


@contextlib.contextmanager
def writer_lock(target: str | os.PathLike, wait_s: float | None = None) -> Iterator[Path]:
    """Hold the writer lock of ``target`` (see the module); ``wait_s``: how long to wait for
    another writer (default ``RAGKIT_WRITER_WAIT_S``, else 600 s). OutputError naming the
    holder when it is still busy after that."""
    from filelock import FileLock, Timeout

    if Path(target).name.startswith(".staging-"):    # a run's private staging name: one writer by design
        yield lock_path(target)
        return
    path = lock_path(target)
    key = (str(path), threading.get_ident())     # re-entrant in a thread; another thread waits
    with _GUARD:
        held = key in _HELD
        if held:
            _HELD[key] += 1
    if held:
        try:
            yield path
        finally:
            with _GUARD:
                _HELD[key] -= 1
        return
    if wait_s is None:
        wait_s = Settings.from_env().writer_wait_s
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass                        # the write that follows says why it cannot
    # an OS lock only: no "soft" lock file that a killed holder would leave locked
    lock = FileLock(key[0], thread_local=False, fallback_to_soft=False)
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            print(f"ragkit: waiting for {_holder(path)} to finish writing {Path(target)}", file=sys.stderr, flush=True)
            lock.acquire(timeout=wait_s)
    except Timeout:
        raise OutputError(f"{Path(target)}: another build is writing it ({_holder(path)}); still busy after "
                          f"{wait_s:g} s (RAGKIT_WRITER_WAIT_S)") from None
    except OSError as exc:          # a folder where no lock can be made: no write could be either
        raise output_error(Path(target), exc) from None
    who = _writer_file(path)
    with contextlib.suppress(OSError):
        who.write_text(json.dumps({"pid": os.getpid(), "command": _command(),
                                   "since": time.strftime("%Y-%m-%dT%H:%M:%S")}))
    with _GUARD:
        _HELD[key] = 1
    try:
        yield path
    finally:
        with _GUARD:
            del _HELD[key]          # the outermost hold ends here
        with contextlib.suppress(OSError):
            who.unlink()
        with contextlib.suppress(OSError):
            # removed while still held: a waiter that opened this file finds it unlinked once it
            # has the lock and takes a new one (filelock checks), so nothing is left beside the
            # artifact and no two processes hold it at once
            path.unlink()
        lock.release()


def output_lock(output: str | os.PathLike) -> contextlib.AbstractContextManager:
    """The writer lock of a command's output: a path's (``writer_lock``); a Neo4j URI has
    none here (the database orders its own transactions)."""
    from .neo4j import is_neo4j_uri

    if is_neo4j_uri(str(output)):
        return contextlib.nullcontext()
    return writer_lock(output)


__all__ = ["lock_path", "output_lock", "writer_lock"]
