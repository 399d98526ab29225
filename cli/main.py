"""`python -m sim <command>`: human-readable tables by default, `--json` for scripts.

Also `python -m cli`. Bad input exits with code 2 and a one-line message that names the value;
standard output that cannot be written (closed, or on a full disk) exits with code 1 and a
one-line message on stderr (when stderr itself can be written); a reader that leaves early (`| head -1`)
ends the command quietly with 141, as SIGPIPE would. Never a traceback. Before any work: the
number of arguments is capped (argparse's work grows faster than their number), and every file a
command would write is checked (cli/paths.py). Each group of subcommands lives in its own module
with its `register_*` functions, listed in COMMANDS."""

from __future__ import annotations

import argparse
import os
import sys

from sim.errors import InputError
from sim.serving.engine import SimulationLimitError
from sim.serving.policies import POLICIES

from . import exactness, explain, export, reproduce, simulate, sweeps, validate
from .common import limit_message
from .flags import Parser, paragraph
from .output import OutputError, check_stdout, flush_stdout
from .paths import check_outputs

COMMANDS = [explain.register_worked_example, explain.register_cost, simulate.register_simulate,
            sweeps.register_sweep, sweeps.register_capacity, validate.register_validate,
            reproduce.register_reproduce, export.register_export, exactness.register_exactness]
BROKEN_PIPE = 141   # what a shell reports for a process ended by SIGPIPE (128 + 13)
OUTPUT_FAILED = 1
# The longest command line worth parsing: every flag of the largest command, each with a value,
# several times over. argparse's work grows faster than the count (100,000 repeated flags took
# 137 s), so a longer one is refused before argparse sees it.
MAX_ARGUMENTS = 400
NO_TABLES = ("export",)   # commands that print no table, so take no --wide


def build_parser() -> argparse.ArgumentParser:
    engines = ", ".join(p.engine for p in POLICIES.values())
    parser = Parser(prog="python -m sim", description=paragraph(f"""
        Chunked Prefill Lab on the command line: the source articles' worked example, the cost
        of one iteration, whole workloads under the real schedulers ({engines}), budget sweeps,
        capacity under SLOs, the cost model's validation and the app's figures as files. Every
        command prints a table (fitted to 120 columns; --wide for full lines) or, with --json,
        JSON. Bad input exits with code 2 and a one-line message naming the flag and the allowed
        range."""))
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser,
                                metavar="COMMAND")
    for register in COMMANDS:
        register(sub)
    for name, p in sub.choices.items():
        p.add_argument("--json", action="store_true", help="print JSON instead of a table "
                                                          "(default off)")
        if name not in NO_TABLES:
            p.add_argument("--wide", action="store_true",
                           help="print tables at full width instead of fitting 120 columns "
                                "(default off)")
    return parser


def main(argv=None) -> int:
    args = None
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        check_stdout()
        if len(argv) > MAX_ARGUMENTS:
            raise InputError(f"{len(argv):,} arguments; a command takes at most {MAX_ARGUMENTS:,} "
                             "(give each flag once)")
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:          # --help printed: it too must reach its reader
            flush_stdout()
            raise
        if args.json and getattr(args, "wide", False):
            raise InputError("--wide widens tables, and --json prints none; drop one of them")
        check_outputs(args)
        args.func(args)
        flush_stdout()
    except SimulationLimitError as e:
        return _fail(f"error: {limit_message(args, e.cap)}", 2)
    except InputError as e:
        return _fail(f"error: {e}", 2)
    except BrokenPipeError:
        _quiet_stdout()
        return BROKEN_PIPE
    except OutputError as e:
        _quiet_stdout()
        return _fail(f"error: {e}", OUTPUT_FAILED)
    return 0


def _fail(message: str, code: int) -> int:
    """`message` on stderr, if there is one that can be written (never on stdout: print's
    fallback when stderr is closed), and the exit code."""
    if sys.stderr is not None:
        try:
            print(message, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
    return code


def _quiet_stdout() -> None:
    """The reader went away (`python -m sim validate --json | head -1`) or the output failed:
    point stdout at /dev/null so the interpreter's last flush at exit cannot fail and print a
    traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # stdout is not a file (tests capture it)
        pass
