"""The command line's parser and flags: every usage error is one line (exit code 2), every number is
checked against its range where it is parsed, negative numbers are values, and the parser records
which flags were given so a flag that does not apply can be refused instead of ignored.

A numeric flag is declared once with `number(...)`: what it is, its unit, default and range. Its
help line is built from those ("each new prompt's length (tokens; default 8,192; 1 to
10,000,000)"), so the help can never disagree with the check.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Mapping

from sim.errors import InputError, fmt_bound, range_problem
from sim.knobs import Knob

from .output import writing

# "-1e3", "-.5", "-inf": values, not flags (argparse alone takes only "-5" and "-0.5" as numbers)
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$",
                             re.IGNORECASE)
HELP_WIDTH = 100
# argparse's message for an abbreviation of several flags: what was typed, then the flags (ours)
AMBIGUOUS = re.compile(r"ambiguous option: (?P<typed>.*) could match (?P<flags>[-\w=, ]*)\Z",
                       re.DOTALL)


def _recording(base: type[argparse.Action]) -> type[argparse.Action]:
    """`base` that also notes its flag's dest in `namespace.given` when the flag is used."""
    class Recorded(base):
        def __call__(self, parser, namespace, values, option_string=None):
            given = set(getattr(namespace, "given", ()))
            given.add(self.dest)
            namespace.given = given
            super().__call__(parser, namespace, values, option_string)
    Recorded.__name__ = f"Recorded{base.__name__}"
    return Recorded


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions keep their paragraphs; flags are listed in a 100-column terminal; a flag whose
    help does not state its default gets "(default: ...)" (on/off switches are off)."""

    def __init__(self, prog):
        super().__init__(prog, width=HELP_WIDTH, max_help_position=30)

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or not action.option_strings or action.default in (
                None, False, argparse.SUPPRESS) or action.dest == "help":
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2 (an InputError), a
    negative number is a value, and `args.given` holds the dests of the flags the user gave."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER
        for name, base in ((None, argparse._StoreAction), ("store", argparse._StoreAction),
                           ("store_true", argparse._StoreTrueAction)):
            self.register("action", name, _recording(base))
        self.set_defaults(given=frozenset())

    def parse_args(self, args=None, namespace=None):
        # argparse joins the arguments it did not recognise as they were typed: a newline or an
        # escape sequence in one would reach the terminal
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(map(repr, unknown))}")
        return parsed

    def error(self, message):
        raise InputError(self._plain(message))

    def _print_message(self, message, file=None):
        # argparse swallows a failed write of --help (a full disk would exit 0, printing nothing)
        if message:
            with writing():
                (file or sys.stderr).write(message)

    def _get_values(self, action, arg_strings):
        # Python 3.11's argparse drops a "--" given as a flag's value (`--max-seqs=--`) and hands
        # the action an empty list, never calling its type check.
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            raise argparse.ArgumentError(action, "expected a value, got '--'")
        return super()._get_values(action, arg_strings)

    def _plain(self, message: str) -> str:
        """argparse's wording made to read like this CLI's other messages."""
        required = "the following arguments are required: "
        if message.startswith(required):
            missing = message[len(required):]
            if missing in ("command", "COMMAND"):
                commands = ", ".join(self._subparsers._group_actions[0].choices)
                return f"give a command: {commands} (`{self.prog} COMMAND --help` lists its flags)"
            return f"{self.prog} needs {missing} (see `{self.prog} --help`)"
        ambiguous = AMBIGUOUS.match(message)
        if ambiguous:       # the option as typed, quoted (argparse echoes it raw)
            return f"ambiguous option {ambiguous['typed']!r}: it could be {ambiguous['flags']}"
        message = re.sub(r"^argument (\S+?)(/\S+)?: ((must|needs) )", r"\1 \3", message)
        return re.sub(r"^argument (\S+?)(/\S+)?: ", r"\1: ", message)


def number(parser: argparse.ArgumentParser, flag: str, what: str, *, unit: str, default,
           low: float, high: float, whole: bool = False, low_inclusive: bool = True,
           shown_default: str | None = None, dest: str | None = None,
           aliases: tuple[str, ...] = ()) -> None:
    """A numeric flag: `what` it is, in `unit`, checked against [low, high] (whole numbers if
    `whole`) when parsed. `default` None means "not set" (its meaning goes in `shown_default`).
    `aliases`: earlier spellings of the flag, still accepted."""
    def parse(text: str):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        problem = range_problem(value, low=low, high=high, low_inclusive=low_inclusive,
                                integer=whole)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return int(value) if whole else value
    parse.__name__ = "number"
    shown = shown_default if shown_default is not None else (
        "none" if default is None else fmt_bound(default))
    above = "≥" if low_inclusive else ">"
    span = f"{fmt_bound(low)} to {fmt_bound(high)}" if low_inclusive else \
        f"{above} {fmt_bound(low)}, ≤ {fmt_bound(high)}"
    unit_text = f"{unit}; " if unit else ""
    parser.add_argument(flag, *aliases, type=parse, default=default,
                        dest=dest or flag[2:].replace("-", "_"),
                        metavar="N" if whole else "X",
                        help=f"{what} ({unit_text}default {shown}; {span})")


def choice(parser: argparse.ArgumentParser, flag: str, what: str, choices, *, default,
           shown_default: str | None = None, old: Mapping[str, str] | None = None) -> None:
    """A flag taking one of `choices` (checked by argparse, which names them on error), or one
    of the `old` names a choice had before (read as that choice, named in the help)."""
    shown = shown_default or (default if default is not None else "none")
    earlier = "".join(f"; {was} still means {now}" for was, now in (old or {}).items())
    parser.add_argument(flag, choices=tuple(choices), default=default, metavar="NAME",
                        type=(lambda name: old.get(name, name)) if old else None,
                        help=f"{what}: {', '.join(choices)} (default {shown}{earlier})")


def knob_flag(parser: argparse.ArgumentParser, knob: Knob, **changes) -> None:
    """The flag of a knob of the table (sim/knobs.py), its help, default and range the table's;
    `changes` for a command whose default differs (capacity's --budget)."""
    fields = dict(default=knob.default, shown_default=knob.shown_default) | changes
    if knob.kind == "switch":   # its words say what it does and that it is off by default
        parser.add_argument(knob.flag, action="store_true", help=knob.what)
    elif knob.choices:
        choice(parser, knob.flag, knob.what, knob.choices, **fields)
    else:
        number(parser, knob.flag, knob.what, unit=knob.unit, low=knob.low, high=knob.high,
               whole=knob.whole, aliases=knob.old_flags, **fields)


def paragraph(text: str) -> str:
    """A subcommand's description: one paragraph, wrapped for the help screen."""
    return textwrap.fill(" ".join(text.split()), HELP_WIDTH)


def given(args, *dests: str) -> list[str]:
    """Of `dests`, those the user gave on the command line, as flags (--max-seqs)."""
    return [flag_name(d) for d in dests if d in args.given]


def flag_name(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def refuse(args, dests, *, why: str) -> None:
    """An InputError when any of `dests` was given: they do not apply, and `why` says so."""
    unused = given(args, *dests)
    if unused:
        verb = "does" if len(unused) == 1 else "do"
        raise InputError(f"{' and '.join(unused)} {verb} not apply here: {why}")


def number_list(parser: argparse.ArgumentParser, flag: str, what: str, *, unit: str,
                default: tuple, low: float, high: float, most: int) -> None:
    """A comma-separated list of whole numbers in [low, high], at most `most` of them."""
    def parse(text: str) -> tuple[int, ...]:
        values = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            try:
                value = float(part)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"expected comma-separated numbers, got {part!r} in {text!r}") from None
            problem = range_problem(value, low=low, high=high, low_inclusive=True, integer=True)
            if problem:
                raise argparse.ArgumentTypeError(f"each value {problem}")
            values.append(int(value))
        if not values:
            raise argparse.ArgumentTypeError(f"needs at least one number, got {text!r}")
        if len(values) > most:
            raise argparse.ArgumentTypeError(f"takes at most {most} values, got {len(values)}")
        return tuple(values)
    parse.__name__ = "list"
    parser.add_argument(flag, type=parse, default=tuple(default), metavar="N,N,...",
                        help=f"{what}, comma-separated ({unit}; default "
                             f"{','.join(str(d) for d in default)}; each {fmt_bound(low)} to "
                             f"{fmt_bound(high)}, at most {most})")
