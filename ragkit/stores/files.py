"""Atomic file and folder writes: build under a temporary name, then rename, so a failed
run never leaves a half-written index, store or output behind.

A temporary name is private (``mkstemp`` makes 0600 files, ``mkdtemp`` 0700 folders); what
is renamed into place gets the mode the process umask gives any new file or folder (0644
and 0755 under umask 022), so a store rebuilt by one user's cron job is readable by the
others the umask lets in, and stays private under umask 077."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from ..errors import InputError


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``target``; on success it replaces ``target``.

    On an exception the temporary folder is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    swap_into_place(tmp, target)


def current_umask() -> int:
    """The process umask (read from /proc where it can be, which changes nothing; else set
    and restored)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def publish_mode(path: str | os.PathLike, umask: int | None = None) -> None:
    """Give ``path`` (and, for a folder, everything below it) the mode a new file (0666) or
    folder (0777) gets under the umask; executable files keep their executable bits."""
    path = Path(path)
    mask = current_umask() if umask is None else umask

    def fix(entry: Path, is_dir: bool) -> None:
        if entry.is_symlink():
            return
        executable = not is_dir and entry.stat().st_mode & 0o111
        os.chmod(entry, (0o777 if is_dir or executable else 0o666) & ~mask)

    if path.is_dir() and not path.is_symlink():
        fix(path, True)
        for root, dirs, files in os.walk(path):
            for name in dirs:
                fix(Path(root, name), True)
            for name in files:
                fix(Path(root, name), False)
    elif path.exists():
        fix(path, False)


def swap_into_place(staged: str | os.PathLike, target: str | os.PathLike) -> bool:
    """Move a finished file or folder ``staged`` to ``target``, replacing what was there
    (a folder through a rename aside, so readers never see a half-written one), with the
    modes the umask gives new files (``publish_mode``). False when nothing was staged."""
    staged, target = Path(staged), Path(target)
    if not staged.exists():
        return False
    publish_mode(staged)
    target.parent.mkdir(parents=True, exist_ok=True)
    if staged.is_dir() and target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(target, old)
        os.replace(staged, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staged, target)
    return True


def remove_path(path: str | os.PathLike) -> None:
    """Delete a file or folder if it is there."""
    path = Path(path)
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def require_file(path: str | os.PathLike, hint: str) -> None:
    """A one-line error naming ``path`` when it is not an existing store file; ``hint``
    says how to make one."""
    path = Path(path)
    if not path.is_file():
        what = "a folder, not a store file" if path.is_dir() else "no such store"
        raise InputError(f"store {path}: {what} ({hint})")


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | os.PathLike, data) -> None:
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def read_graph(path: str | os.PathLike, what: str = "ragkit graph file") -> tuple[dict, "nx.MultiDiGraph"]:
    """A networkx MultiDiGraph and the header saved with it by ``write_graph``; a file that
    is not one gets a one-line error naming it."""
    import gzip

    import networkx as nx

    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
        graph = nx.node_link_graph(data.pop("graph"), directed=True, multigraph=True, edges="edges")
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"store {path}: not a {what} ({exc})") from None
    return data, graph


def write_graph(path: str | os.PathLike, graph, header: dict) -> None:
    """``graph`` and ``header`` (format and version keys) as gzip'd JSON, atomically."""
    import gzip

    import networkx as nx

    data = {**header, "graph": nx.node_link_data(graph, edges="edges")}
    atomic_write_bytes(path, gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8")))
