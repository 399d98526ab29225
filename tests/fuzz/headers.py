"""Fuzzing trace headers: hypothesis draws a header (the three columns each 0 to 2 times, at any
place, in any case and spacing; names repeated, distinct, empty, quoted with commas and line
breaks; a byte-order mark; widths from none to 100,000 columns, mostly near the 100-column limit)
and a few rows with values under the three columns, and `simulate --trace-in` reads it in a child process.

Clean: a run or a one-line refusal within the command budget; a header over the limit must be
refused naming the limit, one within it never for its width.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import shlex
import threading

from hypothesis import strategies as st

from harness.bounded import run_sim
from sim.serving.trace_files import COLUMNS, MAX_COLUMNS

from . import cli
from .report import Result, over_budget

SUITE = "wide headers"
TIMEOUT_S = 300.0
FILLERS = ["x", "", " ", "note", '"a,b"', '"line\nbreak"', "ARRIVAL_S", " prompt_tokens ",
           "output_tokens"]
WIDTHS = st.one_of(st.integers(0, 20), st.integers(MAX_COLUMNS - 5, MAX_COLUMNS + 5),
                   st.sampled_from([1_000, 20_000, 60_000, 100_000]))


@st.composite
def traces(draw) -> tuple[str, int]:
    """(the file's text, its header's width in columns)."""
    width = draw(WIDTHS)
    kind = draw(st.sampled_from(["repeated", "distinct", "distinct", "mixed"]))
    if kind == "repeated":
        names = [draw(st.sampled_from(FILLERS))] * width
    elif kind == "distinct":
        names = [f"c{i}" for i in range(width)]
    else:
        names = draw(st.lists(st.sampled_from(FILLERS), min_size=min(width, 30),
                              max_size=min(width, 30))) + [f"c{i}" for i in range(width - 30)]
    for column in COLUMNS:
        for _ in range(draw(st.sampled_from([1, 1, 1, 0, 2]))):
            names.insert(draw(st.integers(0, len(names))), column)
    header = ("\ufeff" if draw(st.integers(0, 9)) == 0 else "") + ",".join(names)
    # the header as the reader sees it: after the byte-order mark, quoted cells whole
    read = next(csv.reader(io.StringIO(header.lstrip("\ufeff"), newline="")), [])
    where = {c: [n.strip().lower() for n in read].index(c) for c in COLUMNS
             if c in (n.strip().lower() for n in read)}
    rows = []
    for values in draw(st.lists(st.tuples(st.integers(0, 100), st.integers(1, 500),
                                          st.integers(1, 20)), max_size=3)):
        cells = [""] * max(where.values(), default=0)
        cells.append("")
        for column, value in zip(COLUMNS, values):
            if column in where:
                cells[where[column]] = str(value)
        rows.append(",".join(cells) + "\n")
    return header + "\n" + "".join(rows), len(read)


def generate(count: int, seed: int = 0) -> list[tuple[str, int]]:
    return cli.distinct(traces(), count, seed)


def make_scratch(folder: str) -> None:
    """Each case writes its own file."""


def run(case: tuple[str, int], folder: str) -> Result:
    text, width = case
    path = os.path.join(folder, hashlib.sha256(text.encode()).hexdigest()[:16] + ".csv")
    with open(path, "w", newline="") as f:
        f.write(text)
    argv = ["simulate", "--trace-in", path, "--json"]
    line = f"python -m sim {shlex.join(argv)}  # a header of about {width:,} columns"
    outcome = run_sim(*argv, timeout_s=TIMEOUT_S,
                      peak_file=os.path.join(folder, f"peak-{threading.get_ident()}"))
    verdict, detail = cli.classify(outcome.code, outcome.stdout, outcome.stderr, json_out=True,
                                   wide=False)
    wide = "a trace may have at most" in outcome.stderr
    if verdict == "clean run" and width > MAX_COLUMNS:
        verdict, detail = "too wide accepted", f"{width:,} columns"
    elif verdict == "clean refusal" and wide and width <= MAX_COLUMNS:
        verdict, detail = "refused for its width", outcome.stderr.strip()
    broke = over_budget(outcome.cpu_seconds, outcome.peak_bytes)
    if broke and verdict in ("clean run", "clean refusal"):
        verdict, detail = "over budget", broke
    os.unlink(path)
    return Result(SUITE, line, verdict, outcome.seconds, outcome.cpu_seconds, outcome.peak_bytes,
                  detail)
