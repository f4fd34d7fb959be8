"""``python -m ragkit.cli ...``: the ``ragkit`` command line."""

import sys

from . import main

sys.exit(main())
