"""Atomic file and folder writes: build under a temporary name, then rename, so a failed
run never leaves a half-written index, store or output behind.

A temporary name is private (``mkstemp`` makes 0600 files, ``mkdtemp`` 0700 folders); what
is renamed into place gets the mode the process umask gives any new file or folder (0644
and 0755 under umask 022), so a store rebuilt by one user's cron job is readable by the
others the umask lets in, and stays private under umask 077.

A folder artifact (an index, a graph folder) is a symlink to a versioned folder beside it
(``<name>`` → ``.<name>.v-<ns>-<pid>``): a new version is written in full under a work name
(``.<name>.w-<ns>-<pid>``), renamed to its version name once complete, then the symlink is
switched with one ``os.replace``, so a reader always finds a complete folder, the old one or
the new one. The version before the current one is kept for the readers that opened it a
moment ago; older ones are removed. Every temporary name carries the pid of the process that
made it, and ``clean_leftovers`` removes those whose process is gone (a run killed by
SIGKILL, a full disk), on the next write beside them; a ``.w-`` folder is never mistaken for
a complete version.

Each rename is durable: what it moves is on disk first (every file and folder of a version is
fsynced), and after it the folder holding the new name is fsynced, so a power cut or a kernel
crash after a write returned cannot bring back the old file or lose the new one
(``replace_durably``)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..errors import InputError, output_error
from ..runtime.faults import fault_point
from .writers import writer_lock

if TYPE_CHECKING:
    import networkx as nx


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh folder beside ``target`` (its next version); on success ``target``
    points to it (``swap_into_place``).

    On an exception the new folder is removed and ``target`` is left as it was. Leftovers of
    dead runs beside ``target`` are removed first (``clean_leftovers``).
    """
    target = Path(target)
    with writer_lock(target):
        with _new_version(target) as tmp:
            yield tmp


@contextlib.contextmanager
def _new_version(target: Path) -> Iterator[Path]:
    """``atomic_dir``'s body, under the writer lock."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_leftovers(target)
        tmp = new_version_dir(target)
    except OSError as exc:
        raise output_error(target, exc) from None
    try:
        yield tmp
    except OSError as exc:          # a full disk or a folder gone read-only while writing
        _discard_version(tmp)
        raise output_error(target, exc) from None
    except BaseException:
        _discard_version(tmp)
        raise
    try:
        swap_into_place(tmp, target)
    except OSError as exc:
        _discard_version(tmp)
        raise output_error(target, exc) from None


def _discard_version(path: Path) -> None:
    """Remove a version this process was writing and will not finish."""
    _WRITING.discard(str(path.resolve()))
    shutil.rmtree(path, ignore_errors=True)


_WRITING: set[str] = set()     # work folders this process is writing now (not leftovers)


def new_version_dir(target: str | os.PathLike) -> Path:
    """An empty private work folder ``.<name>.w-<ns>-<pid>`` beside ``target``, for its next
    version (``swap_into_place`` gives it its version name)."""
    target = Path(target)
    for _ in range(100):
        path = target.with_name(f".{target.name}.w-{time.time_ns()}-{os.getpid()}")
        try:
            path.mkdir(mode=0o700)
            _WRITING.add(str(path.resolve()))
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{target}: no free version name")


_WORK = re.compile(r"\.w-(\d+-\d+)(?=/|$)")


def final_path(path: str | os.PathLike) -> str:
    """``path`` (absolute, links resolved) as it will be once the version being written
    under it is complete: a work folder ``.<name>.w-<ns>-<pid>`` becomes ``.<name>.v-<ns>-<pid>``.
    What names data by its folder (a Chroma server's collections) names it by this."""
    return _WORK.sub(r".v-\1", str(Path(path).resolve()))


def _version_name(target: Path, work: Path | None = None) -> Path:
    """The name for a complete version of ``target``: the work folder's own, ``.w-`` made
    ``.v-``, or a free ``.<name>.v-<ns>-<pid>``."""
    if work is not None and re.fullmatch(rf"\.{re.escape(target.name)}\.w-\d+-\d+", work.name) \
            and work.parent.resolve() == target.parent.resolve():
        path = target.with_name(work.name.replace(".w-", ".v-", 1))
        if not os.path.lexists(path):
            return path
    while True:
        path = target.with_name(f".{target.name}.v-{time.time_ns()}-{os.getpid()}")
        if not os.path.lexists(path):
            return path


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (signal 0 checks without sending)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # someone else's process: alive
        return True
    return True


def _leftover_pid(name: str, target: str) -> int | None:
    """The pid in one of our temporary names made for ``target`` (None when it is not one)."""
    patterns = (rf"\.{re.escape(target)}\.(?:tmp|link|old)-(\d+)(?:-.*)?",
                rf"\.{re.escape(target)}\.[vw]-\d+-(\d+)",
                rf"\.staging-(\d+)-[^-]+-{re.escape(target)}",
                # what a notebook wrote beside its staged artifact (its versions, its link)
                rf"\.\.staging-(\d+)-[^-]+-{re.escape(target)}\.(?:[vw]-\d+-\d+|link-\d+|tmp-\d+-.*)")
    for pattern in patterns:
        match = re.fullmatch(pattern, name)
        if match:
            return int(match.group(1))
    return None


def clean_leftovers(target: str | os.PathLike, previous: str | None = None) -> list[Path]:
    """Remove the temporary files and folders beside ``target`` that a process now gone made
    for it (their names carry its pid), half-written versions included, and the complete
    versions of a folder artifact other than the current one and the one before it
    (``previous``, the version a switch just replaced; else the newest), and a version newer
    than the current one whose writer still runs (named, not yet switched to); the paths
    removed."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    current = os.readlink(target) if target.is_symlink() else None
    removed, versions = [], []

    def gone(name: str, pid: int) -> bool:
        if name.startswith(f".{target.name}.w-") and str((target.parent / name).resolve()) in _WRITING:
            return False              # a version this process is writing now
        return not pid_alive(pid) or (pid == os.getpid() and name.startswith(f".{target.name}.w-"))

    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            pid = _leftover_pid(entry.name, target.name)
            if pid is None or entry.name == current:
                continue
            if entry.name.startswith(f".{target.name}.v-"):
                versions.append(entry.name)
            elif gone(entry.name, pid):
                remove_path(Path(entry.path))
                removed.append(Path(entry.path))
    versions.sort(key=lambda n: int(n.rsplit("-", 2)[-2]))
    keep = previous if previous in versions else (versions[-1] if versions and current else None)
    newest_live = int(current.rsplit("-", 2)[-2]) if current and re.search(r"\.v-\d+-\d+$", current) else 0
    for name in versions:
        ns, pid = (int(x) for x in name.rsplit("-", 2)[-2:])
        if name == keep or (ns > newest_live and pid != os.getpid() and pid_alive(pid)):
            continue        # a writer's new version it has not switched the link to yet
        remove_path(target.parent / name)
        removed.append(target.parent / name)
    return removed


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
    """Move a finished file or folder ``staged`` to ``target``, replacing what was there,
    with the modes the umask gives new files (``publish_mode``). False when nothing was
    staged.

    A file is renamed over ``target``. A folder becomes ``target``'s new version: ``target``
    is a symlink switched to it with one ``os.replace``, so there is no moment without a
    complete folder at ``target``; the version it replaced stays one more round for the
    readers that resolved it, older ones are removed. A real folder at ``target`` (written
    by an older ragkit) is turned into a version once, which is the one moment it is gone."""
    staged, target = Path(staged), Path(target)
    if not staged.exists():
        return False
    with writer_lock(target):
        return _swap(staged, target)


def _swap(staged: Path, target: Path) -> bool:
    """``swap_into_place``'s body, under the writer lock."""
    publish_mode(staged)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not staged.is_dir():
        fault_point("swap")
        replace_durably(staged, target)
        return True
    # The complete folder gets its version name (a staged link, written by a notebook
    # through ``atomic_dir``, gives the version behind it and goes).
    source = staged.resolve()
    version = _version_name(target, source)
    replace_durably(source, version)
    _WRITING.discard(str(source))
    if staged.is_symlink():
        remove_path(staged)
    previous = os.readlink(target) if target.is_symlink() else None
    if previous is None and target.exists():
        if target.is_dir():            # a real folder (an older ragkit's): becomes a version
            previous = _version_name(target).name
            replace_durably(target, target.parent / previous, synced=True)
        else:
            target.unlink()
    fault_point("swap")
    link = target.with_name(f".{target.name}.link-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    os.symlink(version.name, link)
    replace_durably(link, target)
    clean_leftovers(target, previous)
    return True


def remove_path(path: str | os.PathLike) -> None:
    """Delete a file or folder if it is there (a symlinked folder artifact: the link and its
    versions)."""
    path = Path(path)
    if path.is_symlink():
        link = path
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        for entry in [*link.parent.glob(f".{link.name}.v-*"), *link.parent.glob(f".{link.name}.w-*")]:
            shutil.rmtree(entry, ignore_errors=True)
    elif path.is_dir():
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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        clean_leftovers(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-{os.getpid()}-", dir=path.parent)
    except OSError as exc:
        raise output_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            fault_point("write")
            handle.flush()
            os.chmod(tmp, 0o666 & ~current_umask())
            os.fsync(handle.fileno())              # the data and the mode, before the rename
        replace_durably(tmp, path, synced=True)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise output_error(path, exc) from None
        raise


def sha256_of(path: str | os.PathLike, bar=None) -> str:
    """The file's sha256, read in 1 MiB blocks (``bar``, a progress bar, advanced by bytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            if bar is not None:
                bar.update(len(block))
    return digest.hexdigest()


# What fsync of a folder (or, on Windows, of a file opened read-only) answers where the platform
# or the filesystem cannot do it: the rename stands, only its durability is not promised. Any
# other error (EIO, ENOSPC) is raised: the data may not be on disk.
_CANNOT_SYNC = frozenset({errno.EINVAL, errno.EBADF, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTSUP,
                          errno.EOPNOTSUPP, errno.ENOSYS})


def _fsync(path: str | os.PathLike, folder: bool) -> None:
    """fsync one file or folder, opened read-only; nothing where it cannot be done."""
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if folder else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if folder or exc.errno in _CANNOT_SYNC:   # a folder Windows will not open
            return
        raise
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _CANNOT_SYNC:
            raise
    finally:
        os.close(fd)


def fsync_dir(folder: str | os.PathLike) -> None:
    """Flush ``folder``'s entries to disk, so a rename or a new name in it survives a crash
    (nothing where the platform or filesystem cannot fsync a folder)."""
    _fsync(folder, folder=True)


def sync_tree(path: str | os.PathLike) -> None:
    """Flush a file, or every file and folder below a folder (the folder too), to disk.
    Symlinks are not followed (a link is a name in its folder, flushed with it)."""
    path = Path(path)
    if path.is_symlink():
        return
    if not path.is_dir():
        _fsync(path, folder=False)
        return
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            entry = os.path.join(root, name)
            if stat.S_ISREG(os.lstat(entry).st_mode):
                _fsync(entry, folder=False)
        for name in dirs:
            if not os.path.islink(os.path.join(root, name)):
                fsync_dir(os.path.join(root, name))
    fsync_dir(path)


def replace_durably(source: str | os.PathLike, target: str | os.PathLike, synced: bool = False) -> None:
    """``os.replace(source, target)`` that survives a crash: ``source`` (a file, a folder and
    everything below it) is flushed to disk first unless ``synced`` says it already is, and
    the folder of ``target`` (and of ``source``, when another) after."""
    if not synced:
        sync_tree(source)
    os.replace(source, target)
    parent = Path(target).parent
    fsync_dir(parent)
    if os.path.abspath(Path(source).parent) != os.path.abspath(parent):
        fsync_dir(Path(source).parent)


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
