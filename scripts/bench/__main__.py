"""`python3 scripts/bench …` (as `make bench` runs it), or `python3 -m bench` with scripts/ on the path."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

if not __package__:  # run as a folder: import the package from its parent, not its modules as top-level ones
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.path.dirname(here))

from bench.cli import main  # noqa: E402

sys.exit(main())
