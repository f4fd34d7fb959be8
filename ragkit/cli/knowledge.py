"""Commands on knowledge graphs and the term dictionary: ``kg build`` (3GPP specs),
``kg import`` (a typed KG), ``terms resolve`` and ``terms define``."""

from __future__ import annotations

import argparse

from ..errors import InputError
from .output import _emit, _progress


def cmd_kg_build(args: argparse.Namespace) -> int:
    from ..specs import open_store
    from ..specs.build import build_kg
    from ..stores.writers import output_lock

    # one writer at a time: the store is read, then written back with this build's specs
    with output_lock(args.store), open_store(args.store) as store:  # every spec is read before anything is written
        info = build_kg(args.specs, store, progress=_progress(args))
    replaced = f" (replacing the stored {', '.join(info['replaced'])})" if info["replaced"] else ""
    _emit(info, args.json, f"built {', '.join(info['specs'])} into {info['store']}{replaced}: "
                           f"{info['chunks']} chunks, {info['terms']} terms; graph {info['counts']}")
    return 0


def cmd_kg_import(args: argparse.Namespace) -> int:
    from ..kgqa.importer import import_kg
    from ..kgqa.store import open_typed_store
    from ..stores.writers import output_lock

    with output_lock(args.store), open_typed_store(args.store) as store:   # both files checked before a write
        info = import_kg(args.nodes, args.edges, store, dedupe=args.dedupe, progress=_progress(args))
        info["counts"] = store.counts()
    removed = (f" (replacing the stored graph: {info['nodes_removed']} nodes and {info['edges_removed']} "
               f"edges are gone)" if info["nodes_removed"] or info["edges_removed"] else "")
    _emit(info, args.json, f"imported {info['nodes']} nodes, {info['edges']} edges into {info['store']}{removed} "
                           f"in {info['seconds']} s; schema:\n" +
          "\n".join(f"  {s['source_type']} -[{s['relation']}]-> {s['target_type']}: {s['count']}"
                    for s in info["schema"]))
    return 0


def cmd_terms_resolve(args: argparse.Namespace) -> int:
    from ..specs import open_store
    from ..specs.evidence import resolve_term

    term = _check_term(args.term)
    with open_store(args.store, must_exist=True) as store:
        matches = [t for t in resolve_term(store, term) if t.term_type == "abbreviation"]
    rows = [{"abbreviation": t.abbreviation, "full_name": t.full_name, "term_type": t.term_type,
             "source_specs": t.source_specs, "primary_spec": t.primary_spec} for t in matches]
    human = "\n".join(f"{r['abbreviation']}: {r['full_name']}  ({', '.join(r['source_specs'])}; "
                      f"primary {r['primary_spec']})" for r in rows) or f"{term}: not in the term dictionary"
    _emit({"query": term, "matches": rows}, args.json, human)
    return 0


def cmd_terms_define(args: argparse.Namespace) -> int:
    from ..specs import open_store
    from ..specs.store import rank_terms

    term = _check_term(args.term)
    with open_store(args.store, must_exist=True) as store:
        matches = store.terms_by_name(term, "definition") or \
            store.terms_containing(term, "definition", limit=10)
    rows = [{"term": t.full_name, "definition": t.definition, "source_specs": t.source_specs}
            for t in rank_terms(matches)]
    human = "\n\n".join(f"{r['term']} ({', '.join(r['source_specs'])}):\n  {r['definition']}"
                         for r in rows) or f"{term}: no definition in the term dictionary"
    _emit({"query": term, "matches": rows}, args.json, human)
    return 0


def _check_term(term: str) -> str:
    if not term or not term.strip():
        raise InputError("term: is empty")
    return term.strip()
