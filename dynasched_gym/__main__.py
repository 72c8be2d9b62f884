"""``python -m dynasched_gym``: the command line (see :mod:`dynasched_gym.cli`)."""

import sys

from dynasched_gym.cli import main

sys.exit(main())
