"""A trace file's parse is bounded before it starts and linear in the file: a header's width is
capped and checked in one pass, files of the kernel's pseudo-filesystems are refused by what they
are, and a caller can follow (and stop) a long parse."""

from __future__ import annotations

import os

import pytest

from harness.bounded import run_sim
from sim.errors import InputError
from sim.serving import trace_files
from sim.serving.trace_files import MAX_COLUMNS, REPORT_ROWS, load_trace

HEADER = "arrival_s,prompt_tokens,output_tokens"


class CountedName(str):
    """A column name that counts every comparison and hash made with it (shared tally)."""
    tally = [0]

    def __eq__(self, other):
        self.tally[0] += 1
        return str.__eq__(self, other)

    def __hash__(self):
        self.tally[0] += 1
        return str.__hash__(self)

    def strip(self, *args):
        return CountedName(str.strip(self, *args))

    def lower(self):
        return CountedName(str.lower(self))


def header_operations(names: list[str]) -> int:
    CountedName.tally[0] = 0
    try:
        trace_files._header([CountedName(n) for n in names], 1)
    except InputError:
        pass
    return CountedName.tally[0]


@pytest.mark.parametrize("repeated", [True, False])
def test_the_header_check_grows_linearly_with_its_width(repeated):
    """It counted each name against the whole list: 20,000 repeated columns took 3.4 s, 100,000
    took 84 s. Doubling the width may at most double the comparisons."""
    def names(width):
        extra = ["x"] * width if repeated else [f"c{i}" for i in range(width)]
        return [*HEADER.split(","), *extra]
    half, full = (header_operations(names(w)) for w in (MAX_COLUMNS // 2 - 3, MAX_COLUMNS - 3))
    assert full <= 2 * half + 10
    assert full <= 10 * MAX_COLUMNS


@pytest.mark.parametrize("extra", [["x"] * 100_000, [f"c{i}" for i in range(60_000)]])
def test_a_wide_header_is_refused_before_any_row_is_read(extra, monkeypatch):
    """60,000 distinct columns were accepted after 25 s; now the width is refused, naming the
    limit, before a single row's value is parsed."""
    def no_rows(*args, **kwargs):
        raise AssertionError("a row was parsed")
    monkeypatch.setattr(trace_files, "_value", no_rows)
    body = ",".join([HEADER, *extra]) + "\n0,10,2\n"
    with pytest.raises(InputError, match=f"row 1 \\(header\\): {len(extra) + 3:,} columns; a "
                                         f"trace may have at most {MAX_COLUMNS:,}"):
        load_trace(body.encode())


def test_a_header_at_the_column_limit_is_read():
    names = [*HEADER.split(","), *(f"note{i}" for i in range(MAX_COLUMNS - 3))]
    workload = load_trace((",".join(names) + "\n0,10,2\n").encode())
    assert len(workload) == 1


@pytest.mark.parametrize("path", ["/proc/self/status", "/proc/self/cmdline",
                                  "/sys/kernel/mm/transparent_hugepage/enabled"])
def test_a_pseudo_file_is_refused_though_it_claims_to_be_regular(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} is not on this machine")
    with pytest.raises(InputError, match="kernel's .*not a regular file of data"):
        load_trace(path)


def test_proc_kmsg_is_refused_instead_of_hanging():
    """/proc/kmsg reports itself an empty regular file, and reading it blocks until the kernel
    logs something: the command hung."""
    if not os.path.exists("/proc/kmsg"):
        pytest.skip("no /proc/kmsg here")
    outcome = run_sim("simulate", "--trace-in", "/proc/kmsg", timeout_s=30)
    assert not outcome.timed_out, "still reading /proc/kmsg after 30 s"
    assert outcome.code == 2 and "kernel's proc filesystem" in outcome.stderr


def test_a_long_parse_reports_its_progress_and_can_be_stopped():
    rows = 5 * REPORT_ROWS
    body = (HEADER + "\n" + "0,10,2\n" * rows).encode()
    shares = []
    assert len(load_trace(body, report=shares.append)) == rows
    assert len(shares) == rows // REPORT_ROWS and shares == sorted(shares) and shares[-1] <= 1

    class Closed(Exception):
        pass

    def closed_tab(share):
        raise Closed
    with pytest.raises(Closed):
        load_trace(body, report=closed_tab)
