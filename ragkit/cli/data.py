"""``ragkit data check``: are the public datasets that ragkit's tests and benchmarks read
where they should be, whole and unchanged?

The manifest (``ragkit/eval/datasets_manifest.json``, shipped with the package) names each
dataset (its folder), where it comes from, and the files of it that ragkit reads, with their
size and sha256; docs/datasets.md describes the same datasets for people. Paths are relative
to the datasets folder: ``--root``, else ``$RAGKIT_SHARED/datasets``, else
``../shared/datasets`` from the current folder (a checkout's root, with ``shared/`` beside it).

Only the files ragkit reads are hashed, and a file whose size differs is not hashed at all.
Exit status 0 when every file checked is there and identical, 1 when one is missing or
differs; a bad ``--root`` or ``--dataset`` is a one-line error (3).
"""

from __future__ import annotations

import argparse
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import InputError, OTHER
from ..stores.files import sha256_of
from .output import _emit, _progress

DOC = "docs/datasets.md"


@lru_cache(maxsize=1)
def _manifest_text() -> str:
    return resources.files("ragkit.eval").joinpath("datasets_manifest.json").read_text(encoding="utf-8")


def load_manifest() -> dict[str, dict]:
    """Every public dataset by name (its folder): title, source, version, licence and the
    ``files`` ragkit reads (``path`` relative to the datasets folder, ``bytes``, ``sha256``)."""
    return json.loads(_manifest_text())["datasets"]


def default_root() -> Path:
    """``$RAGKIT_SHARED/datasets`` when RAGKIT_SHARED is set, else ``../shared/datasets``."""
    from ..config import Settings

    shared = Settings.from_env().shared
    return Path(shared) / "datasets" if shared else Path("..") / "shared" / "datasets"


def check_files(root: Path, names: list[str] | None = None, progress: bool | None = False) -> list[dict]:
    """One row per file of the datasets ``names`` (default: all): dataset, path, status
    (``ok``, ``missing``, ``size differs``, ``sha256 differs``), the expected and found
    size and sha256 (``None`` where not looked at)."""
    from ..runtime.progress import progress_bar

    manifest = load_manifest()
    rows = []
    for name in names or list(manifest):
        for entry in manifest[name]["files"]:
            path = root / entry["path"]
            found = path.stat().st_size if path.is_file() else None
            rows.append({"dataset": name, "path": entry["path"], "status": None,
                         "bytes": entry["bytes"], "found_bytes": found,
                         "sha256": entry["sha256"], "found_sha256": None})
    to_hash = [r for r in rows if r["found_bytes"] is not None and r["found_bytes"] == r["bytes"]]
    with progress_bar(total=sum(r["bytes"] for r in to_hash), unit="B", unit_scale=True, desc="sha256",
                      progress=progress) as bar:
        for row in to_hash:
            row["found_sha256"] = sha256_of(root / row["path"], bar)
    for row in rows:
        if row["found_bytes"] is None:
            row["status"] = "missing"
        elif row["found_bytes"] != row["bytes"]:
            row["status"] = "size differs"
        elif row["found_sha256"] != row["sha256"]:
            row["status"] = "sha256 differs"
        else:
            row["status"] = "ok"
    return rows


def _table(rows: list[dict]) -> list[str]:
    def status(r: dict) -> str:
        if r["status"] == "size differs":
            return f"size differs ({r['found_bytes']:,} bytes)"
        return r["status"]

    cells = [(r["dataset"], r["path"], f"{r['bytes']:,}", status(r)) for r in rows]
    head = ("dataset", "file", "bytes", "status")
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(4)]

    def line(c) -> str:
        return f"{c[0]:<{widths[0]}}  {c[1]:<{widths[1]}}  {c[2]:>{widths[2]}}  {c[3]}".rstrip()

    return [line(head), *map(line, cells)]


def cmd_data(args: argparse.Namespace) -> int:
    manifest = load_manifest()
    names = list(dict.fromkeys(args.dataset or manifest))
    unknown = [n for n in names if n not in manifest]
    if unknown:
        raise InputError(f"--dataset {unknown[0]}: not a dataset ragkit reads (one of {', '.join(manifest)})")
    root = Path(args.root) if args.root else default_root()
    if not root.is_dir():
        where = "--root" if args.root else "datasets folder"
        raise InputError(f"{where} {root}: {'not a folder' if root.exists() else 'not found'} "
                         f"(--root DIR or RAGKIT_SHARED=DIR with DIR/datasets; {DOC} says where to get each dataset)")
    rows = check_files(root, names, progress=_progress(args))
    bad = [r for r in rows if r["status"] != "ok"]
    datasets = {n: {"title": manifest[n]["title"], "source": manifest[n]["source"],
                    "ok": all(r["status"] == "ok" for r in rows if r["dataset"] == n)} for n in names}
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "missing", "size differs", "sha256 differs")}
    summary = (f"{len(rows)} files of {len(names)} datasets under {root}: "
               + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    lines = [*_table(rows), "", summary]
    if bad:
        lines += [f"{n} ({d['title']}): get it from {d['source']}" for n, d in datasets.items() if not d["ok"]]
        lines.append(f"{DOC} says which version and where each file goes")
    _emit({"root": str(root), "ok": not bad, "counts": counts, "datasets": datasets, "files": rows},
          args.json, "\n".join(lines))
    return OTHER if bad else 0
