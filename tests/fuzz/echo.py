"""Fuzzing what a message echoes: text holding control characters (a newline, a carriage return,
escape sequences, a bell, a backspace, C1 controls, a bidi override or isolate, the Unicode line
separator) typed where a command echoes what it was given: an unknown flag or argument, the
command's name, an abbreviation of several flags, a number's or a choice's value (`--flag V` and
`--flag=V`), a trace to read, an output in a folder that is not there, an output written.

Clean: a refusal or a run as tests/fuzz/cli.py classifies them (one line on stderr, no raw control
character in anything printed: what was typed is shown escaped).
"""

from __future__ import annotations

import os
import shlex
import threading
import unicodedata

from hypothesis import strategies as st

from harness.bounded import run_sim

from . import cli
from .report import Result, over_budget

SUITE = "argument echo"
TIMEOUT_S = 120.0
HOSTILE = ("\n", "\r", "\x1b[31m", "\x1b]0;title\x07", "\x07", "\t", "\x08", "\x7f", "\x9b2J",
           "\x85", "\u2028", "\u202e", "\u2066", "\x1b[2J\x1b[H")
EVERY = ("simulate", "sweep", "capacity", "export", "cost", "worked-example", "validate",
         "reproduce")
RUNS = ("simulate", "capacity", "export")       # they take --budget, --policy and --max-*
# where the text goes: (the commands that take it, the arguments after the command)
PLACES = {
    "unknown flag": (EVERY, lambda t: [f"--x{t}"]),
    "unknown argument": (EVERY, lambda t: [f"a{t}b"]),
    "abbreviation": (RUNS, lambda t: [f"--max={t}"]),
    "abbreviated flag": (RUNS, lambda t: [f"--max{t}", "1"]),
    "number": (RUNS, lambda t: ["--budget", f"5{t}"]),
    "number=": (RUNS, lambda t: [f"--budget=5{t}"]),
    "choice": (RUNS, lambda t: ["--policy", f"sarathi{t}"]),
    "choice=": (RUNS, lambda t: [f"--policy=sarathi{t}"]),
    "trace": (("simulate", "sweep"), lambda t: ["--trace-in", f"@missing{t}.csv"]),
    "output in no folder": (("simulate",), lambda t: ["--trace-out", f"@no{t}/x.csv"]),
    "output written": (("simulate",), lambda t: ["--trace-out", f"@new{t}.csv"]),
    "figure written": (("export",), lambda t: ["--view", "roofline", "--mode", "simple", "--out",
                                               f"@new{t}.svg"]),
    "command": ((), lambda t: [f"simulate{t}"]),
}


@st.composite
def cases(draw) -> tuple[str, str, str]:
    place = draw(st.sampled_from(sorted(PLACES)))
    commands = PLACES[place][0]
    command = draw(st.sampled_from(commands)) if commands else ""
    return command, place, draw(st.sampled_from(HOSTILE))


def generate(count: int, seed: int = 0) -> list[tuple[str, str, str]]:
    return cli.distinct(cases(), count, seed)


def make_scratch(folder: str) -> None:
    cli.make_scratch(folder)


def shell_word(arg: str) -> str:
    """`arg` as bash reads it back, its control characters spelled out: $'a\\nb' for a newline
    (the report itself prints no raw control character)."""
    if not any(unicodedata.category(c) in cli.RAW for c in arg):
        return shlex.quote(arg)
    return "$'" + "".join(c if c.isascii() and c.isprintable() and c not in "\\'" else
                          f"\\x{ord(c):02x}" if ord(c) < 0x80 else f"\\u{ord(c):04x}"
                          for c in arg) + "'"


def run(case: tuple[str, str, str], folder: str) -> Result:
    command, place, text = case
    argv = [command] * bool(command) + PLACES[place][1](text)
    resolved = cli._resolve(argv, folder)
    line = "python -m sim " + " ".join(map(shell_word, resolved))
    outcome = run_sim(*resolved, timeout_s=TIMEOUT_S,
                      peak_file=os.path.join(folder, f"peak-{threading.get_ident()}"))
    verdict, detail = cli.classify(outcome.code, outcome.stdout, outcome.stderr, json_out=False,
                                   wide=False)
    broke = over_budget(outcome.cpu_seconds, outcome.peak_bytes)
    if broke and verdict in ("clean run", "clean refusal"):
        verdict, detail = "over budget", broke
    return Result(SUITE, line, verdict, outcome.seconds, outcome.cpu_seconds, outcome.peak_bytes,
                  detail)
