"""`python -m sim <command>`: human-readable tables by default, `--json` for scripts.

Also `python -m cli`. Bad input exits with code 2 and a one-line message that names the value;
never a traceback. Each group of subcommands lives in its own module with its `register_*`
functions, listed in COMMANDS."""

from __future__ import annotations

import argparse
import sys

from sim.errors import InputError

from . import explain, export, simulate, traffic, validate
from .common import Parser

COMMANDS = [explain.register_worked_example, explain.register_cost, simulate.register_simulate,
            traffic.register_sweep, traffic.register_capacity, validate.register_validate,
            export.register_export]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m sim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for register in COMMANDS:
        register(sub)
    for p in sub.choices.values():
        p.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.func(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


