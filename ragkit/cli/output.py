"""What every command writes: its result, as one JSON object (``--json``) or as lines for
people, and whether it shows progress bars."""

from __future__ import annotations

import argparse
import json
import sys


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars for people at a terminal; never in --json mode or when stderr is
    captured, so an error stays the one line on stderr."""
    return not args.json and sys.stderr.isatty()


def _emit(data: dict, as_json: bool, human: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(human.rstrip() + "\n")
