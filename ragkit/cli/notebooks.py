"""Commands on notebooks: ``run`` (one notebook with papermill) and ``rebuild`` (the KG
and index notebooks, when their inputs changed)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .output import _emit, _progress


def _relative(path: str | None) -> str:
    """``path`` from the current folder when it lies under it (what a user types), else as is."""
    if not path:
        return "-"
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def run_line(notebook: str, result: dict) -> str:
    """One line per notebook: what ran, how it ended and how long it took, where the executed
    notebook is (``03_index_build.ipynb: ok in 21.4 s: outputs/runs/...``)."""
    status = result["status"]
    head = f"{notebook}: {status}"
    if "duration_s" in result:
        head += f" in {result['duration_s']:.1f} s"
    if result.get("reason"):
        head += f" ({result['reason']})"
    if status == "up to date" and result.get("last_good_run"):
        head += f" since {result['last_good_run']}"
    if result.get("error"):
        return f"{head}: {result['error']}"
    return f"{head}: {_relative(result.get('output_notebook'))}"


def cmd_run(args: argparse.Namespace) -> int:
    from ..workbench.runs import run_notebook

    params = {name: value for name, value in (args.param or [])}
    manifest = run_notebook(args.notebook, params, out_root=args.out, progress=_progress(args),
                            cell_timeout=args.cell_timeout)
    _emit(manifest, args.json, run_line(Path(args.notebook).name, manifest))
    return 0 if manifest["status"] == "ok" else 1


def cmd_rebuild(args: argparse.Namespace) -> int:
    from ..workbench.rebuild import DEFAULT_NOTEBOOKS, rebuild

    params = {name: value for name, value in (args.param or [])}
    results = rebuild(args.notebooks or DEFAULT_NOTEBOOKS, params, out_root=args.out, force=args.force,
                      progress=_progress(args), cell_timeout=args.cell_timeout)
    _emit({"results": results}, args.json, "\n".join(run_line(r["notebook"], r) for r in results))
    return 0 if all(r["status"] in ("ok", "up to date") for r in results) else 1
