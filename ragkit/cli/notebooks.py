"""Commands on notebooks: ``run`` (one notebook with papermill) and ``rebuild`` (the KG
and index notebooks, when their inputs changed)."""

from __future__ import annotations

import argparse

from .output import _emit, _progress


def cmd_run(args: argparse.Namespace) -> int:
    from ..workbench.runs import run_notebook

    params = {name: value for name, value in (args.param or [])}
    manifest = run_notebook(args.notebook, params, out_root=args.out, progress=_progress(args))
    _emit(manifest, args.json, f"{manifest['status']}: {manifest['output_notebook']}")
    return 0 if manifest["status"] == "ok" else 1


def cmd_rebuild(args: argparse.Namespace) -> int:
    from ..workbench.rebuild import DEFAULT_NOTEBOOKS, rebuild

    params = {name: value for name, value in (args.param or [])}
    results = rebuild(args.notebooks or DEFAULT_NOTEBOOKS, params, out_root=args.out, force=args.force,
                      progress=_progress(args))
    human = "\n".join(f"{r['notebook']}: {r['status']}" + (f" ({r['reason']})" if r.get("reason") else "")
                      + (f" since {r['last_good_run']}" if r["status"] == "up to date" else "")
                      + (f": {r['error']}" if r.get("error") else "") for r in results)
    _emit({"results": results}, args.json, human)
    return 0 if all(r["status"] in ("ok", "up to date") for r in results) else 1
