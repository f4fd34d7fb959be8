"""``ragkit serve``: the sources and limits checked, then the HTTP and WebSocket server."""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError


def _require_store_files(sources) -> None:
    """Each store given as a file path must exist: only its build command (``kg build``,
    ``kg import``) creates one."""
    from ..pipelines import sources as declared
    from ..stores.files import require_file
    from ..stores.neo4j import is_neo4j_uri

    for source in declared().values():
        where = getattr(sources, source.field)
        if source.store and where and not is_neo4j_uri(where):
            hint = f"{'import' if ' import' in source.how else 'build'} one with '{source.how}'"
            try:
                require_file(where, hint)
            except InputError as exc:
                raise InputError(f"{source.served_by}: {exc}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    from ..config import LLMConfig
    from ..server.access import check_allowed_hosts, check_exposure, check_keys
    from ..server import ServeLimits, serve
    from ..service import Service, Sources, build_demo_sources

    from ..config import Settings

    settings = Settings.from_env()
    env_key = settings.api_key
    keys = check_keys(args.api_key or ([env_key] if env_key else []))
    check_exposure(args.host, keys)      # before any source is built
    hosts = check_allowed_hosts(args.allowed_host or list(settings.allowed_hosts))
    from ..pipelines import pipelines

    flags = {s.field: s.served_by for p in pipelines() for s in p.sources}
    given = ["--demo"] * bool(args.demo) + [flags[f] for f in flags if getattr(args, f"source_{f}")]
    if args.embeddings_only and given:
        raise InputError(f"--embeddings-only: serves the embedding models alone; drop {given[0]}")
    if args.demo:
        sources = build_demo_sources(args.demo, progress=sys.stderr.isatty())
    else:
        sources = Sources(**{f: getattr(args, f"source_{f}") for f in flags})
    needed = [p.sources[0] for p in pipelines()]
    if not args.embeddings_only and not any(getattr(sources, s.field) for s in needed):
        raise InputError(f"serve: no source given ({', '.join(s.served_by for s in needed)}, or --demo DIR; "
                         "or --embeddings-only)")
    _require_store_files(sources)        # a mistyped path fails now, not as a "ready" empty store
    for flag, value in (("--port", args.port), ("--workers", args.workers), ("--max-body", args.max_body),
                        ("--sessions-per-key", args.sessions_per_key), ("--questions-per-key", args.questions_per_key),
                        ("--websockets-per-key", args.websockets_per_key), ("--websockets", args.websockets)):
        if value < (0 if flag == "--port" else 1):
            raise InputError(f"{flag}: must be positive, got {value}")
    for flag, value in (("--timeout", args.timeout), ("--read-timeout", args.read_timeout)):
        if value is not None and value <= 0:
            raise InputError(f"{flag}: must be positive, got {value}")
    service = Service(sources, LLMConfig.from_env(model_path=args.model),
                      flags={s.field: s.served_by for p in pipelines() for s in p.sources})
    limits = ServeLimits(max_body=args.max_body, timeout_s=args.timeout, workers=args.workers,
                         sessions_per_key=args.sessions_per_key, questions_per_key=args.questions_per_key,
                         read_timeout_s=args.read_timeout, websockets_per_key=args.websockets_per_key,
                         websockets=args.websockets)
    serve(service, host=args.host, port=args.port, limits=limits, log_level=args.log_level, keys=keys,
          cors_origins=args.cors_origin or [], log_questions=args.log_questions,
          embeddings_only=args.embeddings_only, allowed_host=hosts)
    return 0
