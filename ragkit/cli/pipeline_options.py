"""The flags each pipeline declares (``ragkit.pipelines``), for ``ask`` and ``eval
answers``: added to a command's parser, and read back as the ``Sources`` and request
options they give."""

from __future__ import annotations

import argparse


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _add_pipeline_arguments(p: argparse.ArgumentParser) -> None:
    """The pipeline, the flags that name each pipeline's source, and every pipeline's
    options, as the registry declares them (``ragkit.pipelines``)."""
    from ..pipelines import DEFAULT_PIPELINE, PIPELINES, option_users, options, source_flags

    p.add_argument("--pipeline", choices=PIPELINES, default=DEFAULT_PIPELINE)
    for flag, users in source_flags().items():
        p.add_argument(flag, dest=_dest(flag), help="; ".join(f"{name}: {s.what}" for name, s in users))
    for option in options().values():
        used_by = ", ".join(option_users(option.name))
        if option.kind is bool:
            p.add_argument(option.flag, action="store_true", help=f"{used_by}: {option.help}")
        elif option.read is not None:
            p.add_argument(option.flag, dest=option.name, help=f"{used_by}: {option.help}")
        else:
            default = f" (default {option.default})" if option.default is not None else ""
            p.add_argument(option.flag, dest=option.name, type=option.kind, default=option.default,
                           choices=option.choices or None, help=f"{used_by}: {option.help}{default}")


def _pipeline_arguments(args: argparse.Namespace) -> tuple:
    """The ``Sources`` and the request options a command line gave (flags made by
    ``_add_pipeline_arguments``)."""
    from ..pipelines import options, source_flags, sources_from_flags
    from ..service import Sources

    given = {flag: getattr(args, _dest(flag)) for flag in source_flags()}
    values = {}
    for option in options().values():
        value = getattr(args, option.name)
        values[option.name] = option.read(value) if option.read is not None and value is not None else value
    return Sources(**sources_from_flags(given, args.pipeline)), values
