"""`python -m cli`: the same as `python -m sim`."""
import sys

from .main import main

sys.exit(main())
