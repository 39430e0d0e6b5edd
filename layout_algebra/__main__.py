"""``python -m layout_algebra`` runs the command line."""

import sys

from layout_algebra.cli import main

sys.exit(main())
