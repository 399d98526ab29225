"""The command line on top of `sim` and `charts`: `python -m sim <command>`."""
