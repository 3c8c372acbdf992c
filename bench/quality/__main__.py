"""`python -m bench.quality`: see bench/quality/cli.py."""

import sys

from bench.quality.cli import main

sys.exit(main())
