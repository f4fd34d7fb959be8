"""``ragkit pick KEY...``: print a few keys of one JSON object read from stdin, one
``key: value`` line each, so that an example shows the parts of a ``--json`` answer that
matter to it:

    ragkit ask QUESTION --index DIR --json | ragkit pick trace.answer_source trace.check.passed

A key is a dotted path: object keys, list positions (``citations.0.title``) or ``*`` for
every item of a list (``citations.*.doc_id``). Values are printed as compact JSON; a key
that is not there prints ``(missing)``. ``tools/pick.py`` in a checkout runs this command.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InputError

MISSING = object()

KEYS_HELP = ("a dotted path into the object: object keys, list positions (citations.0.title) or * "
             "for every item of a list (citations.*.doc_id); a key that is not there prints (missing)")


def pick(data, path: str):
    """The value at dotted ``path`` in ``data`` (``MISSING`` when a step is absent)."""
    value = data
    parts = path.split(".")
    for i, part in enumerate(parts):
        if part == "*" and isinstance(value, list):
            rest = ".".join(parts[i + 1:])
            items = [pick(item, rest) if rest else item for item in value]
            return [None if item is MISSING else item for item in items]
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return MISSING
    return value


def picked_lines(data, keys: list[str]) -> list[str]:
    """``key: value`` for each key, the value as compact JSON or ``(missing)``."""
    shown = [pick(data, key) for key in keys]
    return [f"{key}: {'(missing)' if value is MISSING else json.dumps(value, ensure_ascii=False)}"
            for key, value in zip(keys, shown)]


def cmd_pick(args: argparse.Namespace) -> int:
    text = sys.stdin.read()
    if not text.strip():
        raise InputError("stdin: empty (pipe a command's --json output into ragkit pick)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"stdin: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                         f"it starts {text[:80]!r}") from None
    sys.stdout.write("".join(f"{line}\n" for line in picked_lines(data, args.keys)))
    return 0
