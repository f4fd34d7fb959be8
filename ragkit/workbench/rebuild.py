"""``ragkit rebuild``: scheduled rebuilds of the KG and the index (cron, Airflow, make).

A notebook is rebuilt only when something it depends on changed since its last good run:
its parameters, the hashes of its input files, the notebook itself or ragkit's code. Only
one rebuild runs at a time (a lock file beside the runs). Every run stages its artifacts
and moves them into place on success (``runs.run_notebook``), so a question answered
during a rebuild reads the previous artifacts, and a failed or killed rebuild leaves them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import InputError, RagkitError
from .runs import (artifact_parameters, code_hash, declared_parameters, effective_parameters, local_path,
                   run_inputs, run_notebook, sha256_file)

DEFAULT_NOTEBOOKS = ("notebooks/01_kg_builder.ipynb", "notebooks/03_index_build.ipynb")
LOCK_NAME = ".rebuild.lock"


class RebuildBusy(RagkitError):
    """Another rebuild holds the lock."""


@contextlib.contextmanager
def rebuild_lock(out_root: str | Path) -> Iterator[Path]:
    """Hold the rebuild lock (``out_root/.rebuild.lock``, through ``filelock``: POSIX and
    Windows alike) or fail at once, saying who has it (``out_root/.rebuild.holder``). The OS
    releases it when the holder exits, however it exits."""
    from filelock import FileLock, Timeout

    path = Path(out_root) / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    holder_file = path.with_name(".rebuild.holder")
    lock = FileLock(str(path), thread_local=False, fallback_to_soft=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        try:
            holder = holder_file.read_text().strip() or "another process"
        except OSError:
            holder = "another process"
        raise RebuildBusy(f"rebuild: another rebuild is running ({holder}); lock {path}") from None
    try:
        holder_file.write_text(f"pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%S')}")
        yield path
    finally:
        with contextlib.suppress(OSError):
            holder_file.unlink()
        lock.release()


def last_good_run(out_root: str | Path, notebook: Path) -> dict | None:
    """The newest manifest of ``notebook`` whose status is ok."""
    folder = Path(out_root) / notebook.stem
    from .runs import settle_dead_runs

    for data in settle_dead_runs(folder):
        if isinstance(data, dict) and data.get("status") == "ok":
            return data
    return None


def why_rebuild(notebook: Path, params: Mapping[str, Any], out_root: str | Path) -> str | None:
    """Why ``notebook`` needs running again, or None when its last good run still holds."""
    last = last_good_run(out_root, notebook)
    if last is None:
        return "no good run yet"
    effective = effective_parameters(notebook, params)
    if last.get("effective_parameters") != json.loads(json.dumps(effective)):
        return "parameters changed"
    if last.get("inputs") != run_inputs(notebook, effective):
        return "inputs changed"
    if last.get("notebook_sha256") != sha256_file(notebook):
        return "notebook changed"
    if last.get("code_sha256") != code_hash():
        return "ragkit code changed"
    for name in artifact_parameters(declared_parameters(notebook)):
        path = local_path(notebook, effective.get(name))
        if path is not None and not path.exists():
            return f"artifact {name} ({path}) is missing"
    return None


def rebuild(notebooks: Sequence[str | Path] = DEFAULT_NOTEBOOKS, params: Mapping[str, Any] | None = None, *,
            out_root: str | Path = "outputs/runs", force: bool = False, progress: bool = False,
            cell_timeout: float | None = None) -> list[dict]:
    """Run each notebook whose inputs changed (all with ``force``), in order, under the lock.
    ``params`` go to every notebook that declares them. Stops at the first failure; a cell
    longer than ``cell_timeout`` seconds is one."""
    paths = [Path(n) for n in notebooks]
    params = dict(params or {})
    declared = {n: declared_parameters(n) for n in paths}
    unknown = [name for name in params if not any(name in d for d in declared.values())]
    if unknown:
        raise InputError(f"parameter {unknown[0]}: none of {', '.join(n.name for n in paths)} declares it")
    results = []
    with rebuild_lock(out_root):
        for notebook in paths:
            mine = {k: v for k, v in params.items() if k in declared[notebook]}
            reason = "forced" if force else why_rebuild(notebook, mine, out_root)
            if reason is None:
                last = last_good_run(out_root, notebook) or {}
                results.append({"notebook": notebook.name, "status": "up to date",
                                "last_good_run": last.get("started"), "output_notebook": last.get("output_notebook")})
                continue
            manifest = run_notebook(notebook, mine, out_root=out_root, progress=progress, cell_timeout=cell_timeout)
            results.append({"notebook": notebook.name, "status": manifest["status"], "reason": reason,
                            "output_notebook": manifest["output_notebook"], "duration_s": manifest["duration_s"],
                            **({"error": manifest["error"]} if "error" in manifest else {})})
            if manifest["status"] != "ok":
                break
    return results
