"""``python tools/pick.py KEY...`` in a checkout is ``ragkit pick KEY...``, the command that
ships with the package: it prints a few keys of one JSON object read from stdin, one
``key: value`` line each (``ragkit/cli/pick.py`` says how a key is written). Run it with
ragkit's Python (the venv's).

    ragkit ask QUESTION --index DIR --json | python tools/pick.py trace.answer_source trace.check.passed
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.append(str(Path(__file__).resolve().parents[1]))    # this checkout, if ragkit is not installed
    from ragkit.cli import main

    sys.exit(main(["pick", *sys.argv[1:]]))
