"""``ragkit run``: papermill runs into ``outputs/runs/<notebook>/<timestamp>/`` with a
manifest that says what ran, on what, with which code, and how it ended.

Parameters are checked against the notebook's tagged ``parameters`` cell before anything
runs: a name the notebook does not declare, or a value of the wrong type, is refused.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError, NotebookError, RagkitError, RunTerminated
from ..runtime.extras import requires_extra
from ..runtime.faults import fault_point
from ..stores.files import atomic_write_json, clean_leftovers, pid_alive, remove_path, swap_into_place

KERNEL = "python3"
_PACKAGES = ("numpy", "scipy", "papermill", "llama-cpp-python", "rank-bm25", "bm25s",
             "networkx", "chromadb", "sentence-transformers", "torch")
_TYPES: dict[str, type | tuple[type, ...]] = {"int": int, "float": (int, float), "bool": bool, "str": str}


def declared_parameters(notebook: str | Path) -> dict[str, dict]:
    """The notebook's parameters cell, as papermill reads it: {name: {type, default, help}}."""
    with requires_extra("notebooks"):
        import papermill

    path = Path(notebook)
    if not path.is_file():
        raise InputError(f"notebook {path}: no such file")
    try:
        found = papermill.inspect_notebook(str(path))
    except Exception as exc:  # papermill raises several types for unreadable notebooks
        raise InputError(f"notebook {path}: cannot be read ({exc})") from None
    if not found:
        raise NotebookError(f"notebook {path}: has no cell tagged 'parameters'")
    return found


def coerce(value: Any) -> Any:
    """A CLI string as the value it spells: int, float, bool, None, else the string."""
    if not isinstance(value, str):
        return value
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _declared_type(decl: dict) -> str:
    """The annotated type, else the type of the default's literal."""
    if decl.get("inferred_type_name") in _TYPES:
        return decl["inferred_type_name"]
    try:
        return type(ast.literal_eval(decl.get("default", ""))).__name__
    except (ValueError, SyntaxError):
        return ""


def check_parameters(notebook: str | Path, params: Mapping[str, Any]) -> dict[str, Any]:
    """Coerce ``params`` and check every one against the notebook's declarations."""
    declared = declared_parameters(notebook)
    checked = {}
    for name, raw in params.items():
        if name not in declared:
            raise InputError(f"parameter {name}: notebook {Path(notebook).name} does not declare it "
                             f"(declared: {', '.join(declared)})")
        kind = _TYPES.get(_declared_type(declared[name]))
        value = str(raw) if kind is str and raw is not None else coerce(raw)
        wrong_type = kind is not None and value is not None and not isinstance(value, kind)
        if wrong_type or (kind is int and isinstance(value, bool)):
            raise InputError(f"parameter {name}: expected {_declared_type(declared[name])}, "
                             f"got {raw!r}")
        checked[name] = value
    return checked


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _path_digest(path: Path) -> str:
    """sha256 of a file, or of a folder over its sorted files' names and contents."""
    if path.is_file():
        return sha256_file(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode())
        digest.update(sha256_file(file).encode())
    return digest.hexdigest()


def input_hashes(notebook: Path, params: Mapping[str, Any]) -> dict[str, str]:
    """sha256 of every file or folder a parameter names (relative to the notebook). A
    comma-separated value (01's ``specs``) is hashed over each path it lists; values that
    name nothing local ('' , URIs, words) are not inputs."""
    hashes = {}
    for name, value in params.items():
        if not isinstance(value, str):
            continue
        paths = [p for part in value.split(",") if (p := local_path(notebook, part.strip())) is not None]
        if paths and all(p.exists() for p in paths):
            hashes[name] = (_path_digest(paths[0]) if len(paths) == 1 else
                            hashlib.sha256("".join(_path_digest(p) for p in paths).encode()).hexdigest())
    return hashes


def run_inputs(notebook: Path, effective: Mapping[str, Any]) -> dict[str, str]:
    """The input hashes of a run: every parameter but the ``[artifact]`` ones it writes."""
    artifacts = artifact_parameters(declared_parameters(notebook))
    return input_hashes(notebook, {k: v for k, v in effective.items() if k not in artifacts})


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _versions() -> dict[str, str]:
    from .. import __version__

    versions = {"python": sys.version.split()[0], "ragkit": __version__}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


ARTIFACT = "[artifact]"   # in a parameter's comment: the run writes this path


def artifact_parameters(declared: Mapping[str, dict]) -> list[str]:
    """The parameters whose comment marks them ``[artifact]``: paths the notebook writes."""
    return [name for name, decl in declared.items() if ARTIFACT in (decl.get("help") or "")]


def effective_parameters(notebook: str | Path, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every declared parameter's default, overridden by ``params`` (checked and coerced)."""
    declared = declared_parameters(notebook)
    return {name: ast.literal_eval(d["default"]) for name, d in declared.items()
            if _declared_type(d)} | check_parameters(notebook, params or {})


def local_path(notebook: Path, value: Any) -> Path | None:
    """A parameter value as a local path (relative to the notebook), None for a URI or ''."""
    if not isinstance(value, str) or not value or "://" in value:
        return None
    path = Path(value)
    path = path if path.is_absolute() else notebook.parent / path
    # The folder resolved, not the name: a folder artifact is a symlink to its current
    # version, and the run replaces the link, never the version behind it.
    return path.parent.resolve() / path.name


def model_info() -> dict:
    """The GGUF the notebooks use (``models.choose_model``: RAGKIT_GGUF, else the best
    installed catalog model): path, catalog name, size and sha256 (an assembled catalog model's
    is the catalog's, which ``ragkit model install`` checked: 1.1 GB is not hashed per run)."""
    from ..llm.catalog import CATALOG, choose_model

    try:
        choice = choose_model()
        path = choice.path
        known = getattr(CATALOG.get(choice.name), "sha256", None) if choice.name else None
        return {"path": str(path), "name": choice.name, "bytes": path.stat().st_size,
                "sha256": known or sha256_file(path)}
    except (RagkitError, OSError) as exc:
        return {"error": str(exc)}


def code_hash() -> str:
    """sha256 over ragkit's own source files: a code change is a reason to rebuild."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for file in sorted(package.rglob("*.py")):
        digest.update(file.relative_to(package).as_posix().encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def cell_timings(output: Path) -> list[dict]:
    """Seconds per executed cell (papermill's metadata), with the cell's first line."""
    with requires_extra("notebooks"):
        import nbformat

    if not output.exists():
        return []
    try:
        nb = nbformat.read(output, as_version=4)
    except Exception:  # a notebook cut off mid-write has no timings to give
        return []
    rows = []
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("papermill", {})
        if cell.cell_type == "code" and meta.get("duration") is not None:
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            rows.append({"cell": i, "seconds": round(meta["duration"], 3), "source": first[:80]})
    return rows


def _running_cell(output: Path) -> str:
    """The last cell papermill started in ``output`` (the one a timeout stopped): "cell N:
    its first line"."""
    with requires_extra("notebooks"):
        import nbformat

    with contextlib.suppress(Exception):       # a notebook cut off mid-write: say less
        started = [(i, cell) for i, cell in enumerate(nbformat.read(output, as_version=4).cells)
                   if cell.get("metadata", {}).get("papermill", {}).get("start_time")]
        if started:
            i, cell = started[-1]
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            return f"cell {i}: {first[:80]}"
    return "the cell that was running"


class Terminated(BaseException):
    """SIGTERM arrived during a run (a scheduler stopping it, a user's kill)."""


def _execute(notebook: Path, output: Path, parameters: dict, progress: bool, cell_timeout: float | None) -> None:
    """papermill runs ``notebook`` into ``output`` in this environment's kernel, in the
    notebook's folder."""
    with requires_extra("notebooks"):
        import papermill

    papermill.execute_notebook(str(notebook), str(output), parameters=parameters, kernel_name=KERNEL,
                               progress_bar=progress,
                               kernel_manager_class="ragkit.workbench.kernels.LocalKernelManager",
                               cwd=str(notebook.parent),
                               execution_timeout=None if cell_timeout is None else max(1, math.ceil(cell_timeout)))


def _staged(targets: Mapping[str, Path], stamp: str) -> dict[str, Path]:
    """Each artifact's staging path, beside it: its name keeps the suffixes (.json.gz),
    which stores read their format from, and carries the pid, so the next run removes what
    a killed one left (``clean_leftovers``). A folder artifact starts as a copy of the
    current one, so incremental builds (03's chunk vectors) reuse what is there."""
    staging = {name: path.with_name(f".staging-{os.getpid()}-{stamp}-{path.name}")
               for name, path in targets.items()}
    for name, staged in staging.items():
        if targets[name].is_dir():
            shutil.copytree(targets[name], staged)
    return staging


def run_notebook(notebook: str | Path, params: Mapping[str, Any] | None = None, *,
                 out_root: str | Path = "outputs/runs", progress: bool = True,
                 cell_timeout: float | None = None) -> dict:
    """Execute ``notebook`` with papermill; return (and save) the run's manifest. A cell that
    runs longer than ``cell_timeout`` seconds (None: no limit) fails the run.

    Paths the notebook writes (parameters marked ``[artifact]``) are written under a
    staging name and moved into place only when the whole run succeeded, so a failed or
    killed run leaves the previous artifacts as they were and a manifest marked failed.
    """
    import signal

    with requires_extra("notebooks"):
        import papermill

    notebook = Path(notebook)
    if cell_timeout is not None and not cell_timeout > 0:
        raise InputError(f"--cell-timeout: must be more than 0 seconds, got {cell_timeout:g}")
    checked = check_parameters(notebook, params or {})
    declared = declared_parameters(notebook)
    effective = effective_parameters(notebook, checked)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    run_dir = Path(out_root) / notebook.stem / stamp
    run_dir.mkdir(parents=True, exist_ok=True)
    output = run_dir / notebook.name
    targets = {name: path for name in artifact_parameters(declared)
               if (path := local_path(notebook, effective.get(name))) is not None}
    for path in targets.values():
        clean_leftovers(path)
    settle_dead_runs(Path(out_root) / notebook.stem)
    manifest: dict[str, Any] = {"notebook": str(notebook), "output_notebook": str(output),
                "parameters": checked, "effective_parameters": effective,
                "inputs": run_inputs(notebook, effective),
                "notebook_sha256": sha256_file(notebook), "code_sha256": code_hash(),
                "artifacts": {name: str(path) for name, path in targets.items()},
                "model": model_info(), "started": stamp, "git_commit": _git_commit(),
                "versions": _versions(), "status": "running", "pid": os.getpid(),
                "host": socket.gethostname()}
    atomic_write_json(run_dir / "manifest.json", manifest)
    staging = _staged(targets, stamp)

    def on_sigterm(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_sigterm) if _main_thread() else None
    started = time.perf_counter()
    try:
        _execute(notebook, output, checked | {k: str(v) for k, v in staging.items()}, progress, cell_timeout)
        for name, staged in staging.items():
            fault_point("run.swap")
            swap_into_place(staged, targets[name])
        manifest["status"] = "ok"
    except papermill.PapermillExecutionError as exc:
        manifest.update(status="failed", error=f"cell {exc.exec_count}: {exc.ename}: {exc.evalue}")
    except TimeoutError as exc:   # nbclient's CellTimeoutError: a cell ran past cell_timeout
        if cell_timeout is None:
            manifest.update(status="failed", error=f"{type(exc).__name__}: {' '.join(str(exc).split())}")
            raise
        manifest.update(status="failed", error=f"a cell ran longer than --cell-timeout {cell_timeout:g} s "
                                               f"({_running_cell(output)})")
    except (Terminated, KeyboardInterrupt) as exc:
        manifest.update(status="failed", error="terminated by SIGTERM" if isinstance(exc, Terminated)
                        else "interrupted")
        raise RunTerminated(f"notebook {notebook.name}: {manifest['error']}; the previous artifacts "
                            f"are unchanged ({run_dir / 'manifest.json'})") from None
    except Exception as exc:     # a dead kernel, a cell timeout, a full disk: failed, not "running"
        manifest.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        for staged in staging.values():
            remove_path(staged)
        manifest["duration_s"] = round(time.perf_counter() - started, 3)
        manifest["cells"] = cell_timings(output)
        atomic_write_json(run_dir / "manifest.json", manifest)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return manifest


def read_manifest(path: str | Path) -> dict:
    """A run's manifest. One still ``running`` whose process is gone (it was killed, or the
    machine went down: its pid no longer runs on the host that wrote it) is marked failed,
    here and in the file, so a dead run never reads as one in progress."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if (isinstance(data, dict) and data.get("status") == "running" and data.get("pid")
            and data.get("host") == socket.gethostname() and not pid_alive(int(data["pid"]))):
        data.update(status="failed", error=f"the run's process (pid {data['pid']} on {data['host']}) "
                                           "died before it finished (killed, or out of memory)")
        with contextlib.suppress(OSError):
            atomic_write_json(path, data)
    return data


def settle_dead_runs(folder: str | Path) -> list[dict]:
    """Every manifest under ``folder`` (one notebook's runs), dead ``running`` ones marked
    failed (``read_manifest``); newest first."""
    out = []
    for path in sorted(Path(folder).glob("*/manifest.json"), reverse=True):
        with contextlib.suppress(OSError, ValueError):
            out.append(read_manifest(path))
    return out


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
