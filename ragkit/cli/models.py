"""``ragkit model``: install, path, list and bench the GGUF models of the catalog."""

from __future__ import annotations

import argparse

from ..errors import RagkitError
from .output import _emit, _progress


def _measured(figures: dict | None) -> str:
    if not figures:
        return "not measured here"
    speeds = ", ".join(f"{what} {figures[key]} tokens/s" for what, key in
                       (("prompt", "prompt_tokens_per_s"), ("generation", "generation_tokens_per_s"))
                       if figures.get(key) is not None)
    return (f"{figures.get('seconds_per_answer')} s per answer measured here ({figures.get('answers')} "
            f"answers{', ' + speeds if speeds else ''}; {str(figures.get('measured_at', ''))[:10]})")


def cmd_model(args: argparse.Namespace) -> int:
    from ..llm import catalog as models

    if args.action == "install":
        path = models.install(args.name, progress=_progress(args))
        _emit({"name": args.name, "path": str(path), "bytes": path.stat().st_size}, args.json, str(path))
        return 0
    if args.action == "path":
        if args.name is None:           # the model that answers when none is named
            answers = models.choose_model()
            _emit(answers.to_dict(), args.json, str(answers.path))
            return 0
        resolved = models.resolve_model(models.model_spec(args.name).name)
        _emit({"name": args.name, "path": resolved}, args.json, resolved)
        return 0
    if args.action == "bench":
        from ..eval.model_speed import bench

        data = bench(args.name, args.answers, progress=_progress(args))
        _emit(data, args.json, f"{data['name']}: {_measured(data)}; load {data['load_s']} s; "
                               f"{data['accepted']} of {data['answers']} answers passed the check; "
                               f"written to {data['benchmarks']}")
        return 0
    choice: models.ModelChoice | None
    try:
        choice = models.choose_model()
        chosen = choice.to_dict()
    except RagkitError as exc:
        choice, chosen = None, {"error": str(exc)}
    rows = []
    for m in models.CATALOG.values():
        installed = models.installed_path(m.name)
        rows.append({"name": m.name, "installed": installed is not None, "path": str(installed) if installed else None,
                     "bytes": installed.stat().st_size if installed else m.size, "about": m.about,
                     "chosen": choice is not None and choice.name == m.name and choice.path == installed,
                     "measured": models.measured_here(m.name), "install": models.install_hint(m.name)})

    def line(r: dict) -> str:
        where = (f"installed, {r['path']} ({r['bytes'] / 1e6:,.0f} MB)" if r["installed"] else
                 f"not installed ({r['install']})")
        return (f"{r['name']}: {where}; {_measured(r['measured'])}; {r['about']}"
                + ("  <- answers now" if r["chosen"] else ""))

    why = {"given": "given", "RAGKIT_GGUF": "RAGKIT_GGUF chooses it",
           "installed": "the first installed; --model or RAGKIT_GGUF chooses another"}
    footer = (f"answers now: {chosen.get('name') or chosen['path']} ({why[chosen['source']]})" if "path" in chosen
              else f"answers now: none ({chosen['error']})")
    _emit({"models": rows, "chosen": chosen, "models_dir": str(models.models_dir()),
           "benchmarks": str(models.benchmarks_path())}, args.json,
          "\n".join([*map(line, rows), footer]))
    return 0
