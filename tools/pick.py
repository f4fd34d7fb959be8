"""Print a few keys of one JSON object read from stdin, one ``key: value`` line each.

The docs use it to show the parts of a ``--json`` answer that matter to an example:

    ragkit ask QUESTION --index DIR --json | python tools/pick.py trace.answer_source trace.check.passed

A key is a dotted path: object keys, list positions (``citations.0.title``) or ``*`` for
every item of a list (``citations.*.doc_id``). Values are printed as compact JSON; a key
that is not there prints ``(missing)``.
"""

from __future__ import annotations

import json
import sys

MISSING = object()


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


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python tools/pick.py KEY [KEY ...] < answer.json", file=sys.stderr)
        return 2
    text = sys.stdin.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"pick: stdin: not JSON ({exc}); got {text[:200]!r}", file=sys.stderr)
        return 2
    for path in argv:
        value = pick(data, path)
        shown = "(missing)" if value is MISSING else json.dumps(value, ensure_ascii=False)
        print(f"{path}: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
