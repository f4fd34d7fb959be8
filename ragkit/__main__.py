"""``python -m ragkit``: the ``ragkit`` command line."""

import sys

from .cli import main

sys.exit(main())
