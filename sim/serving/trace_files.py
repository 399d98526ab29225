"""Arrival traces from CSV: `arrival_s, prompt_tokens, output_tokens`, one request per row.

The file is untrusted (the app passes an upload's bytes), so everything is checked before anything
runs: that a path names a regular file (a FIFO, a device or a directory is refused before it is
opened: reading one could block forever or never end), size (5 MB, 100,000 rows), the three
required columns, each named once, and every value (a finite number; arrival >= 0 s; whole token
counts >= 1); a row may not have a value in a column the header does not name (beyond its end or
under an empty name). Other named columns
are the user's own (notes, ids) and are not read. Errors name the row and the column; rows are
numbered as a spreadsheet shows them (the header is row 1, blank rows count, and a quoted cell that
spans several lines is still one row). Values are only ever parsed with `float`; a value
quoted back in a message is cut short and stripped to letters, digits and `.+-_`, so nothing from
the file can reach a page as markup. Rows need not be sorted: requests are ordered by arrival
(stably), so request ids follow arrival order, not file order.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import stat

import numpy as np

from sim.errors import InputError
from sim.serving.workloads import Workload, make_workload

MAX_BYTES = 5_000_000
MAX_ROWS = 100_000
COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")
MAX_ARRIVAL_S = 1e7          # ~116 days: far beyond any trace worth replaying
MAX_TOKENS = 10_000_000      # the same ceiling as the workload generators' lengths

_UNSAFE = re.compile(r"[^A-Za-z0-9.+\-_ ]")


def _shown(value: str, limit: int = 20) -> str:
    """A file value made safe to quote in a message (plain text, short, no markup characters)."""
    text = _UNSAFE.sub("?", value.strip())
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _read_bytes(source) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        try:
            info = os.stat(source)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"trace {str(source)!r} is {_kind(info.st_mode)}, not a regular "
                                 "file; give the path of a CSV file")
            size = info.st_size
            if size > MAX_BYTES:
                raise InputError(f"trace file is {size:,} bytes; the limit is {MAX_BYTES:,}")
            with open(source, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as e:
            raise InputError(f"cannot read trace file {str(source)!r}: {e.strerror}") from None
    if len(data) > MAX_BYTES:
        raise InputError(f"trace is {len(data):,} bytes; the limit is {MAX_BYTES:,}")
    return data


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _header(row: list[str], line: int) -> dict[str, int]:
    names = [name.strip().lower() for name in row]
    where = f"row {line} (header)"
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        found = ", ".join(_shown(n) for n in names[:10]) or "nothing"
        raise InputError(f"{where}: missing column {', '.join(missing)}; the header needs "
                         f"{', '.join(COLUMNS)} (found {found})")
    for name in {n for n in names if n and names.count(n) > 1}:
        spots = [str(i + 1) for i, n in enumerate(names) if n == name]
        raise InputError(f"{where}: column {_shown(name)} appears {len(spots)} times (columns "
                         f"{', '.join(spots)}); name each column once")
    return {c: names.index(c) for c in COLUMNS}


def _value(row: list[str], line: int, column: str, index: int, *, whole: bool) -> float:
    text = row[index].strip() if index < len(row) else ""
    where = f"row {line}, column {column}"
    if not text:
        raise InputError(f"{where}: empty; expected a number")
    try:
        number = float(text)
    except ValueError:
        raise InputError(f"{where}: {_shown(text)} is not a number") from None
    if not math.isfinite(number):
        raise InputError(f"{where}: {_shown(text)} is not a finite number")
    if whole:
        if number != int(number) or not 1 <= number <= MAX_TOKENS:
            raise InputError(f"{where}: {_shown(text)} must be a whole number of tokens in "
                             f"[1, {MAX_TOKENS:,}]")
    elif not 0 <= number <= MAX_ARRIVAL_S:
        raise InputError(f"{where}: {_shown(text)} must be in [0, {MAX_ARRIVAL_S:g}] seconds")
    return number


def load_trace(source, name: str = "trace") -> Workload:
    """A Workload from CSV `source`: bytes (an upload) or a path. Raises InputError naming the row
    and column of the first bad value."""
    data = _read_bytes(source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"trace is not UTF-8 text (bad byte at offset {e.start:,})") from None
    # spreadsheet rows are CSV records (a quoted cell may span lines), blank ones included
    rows = enumerate(csv.reader(io.StringIO(text, newline="")), start=1)
    line = 1
    try:
        header = next(((n, row) for n, row in rows if any(c.strip() for c in row)), None)
        if header is None:
            raise InputError(f"trace is empty; expected a header row {', '.join(COLUMNS)}")
        line, names = header
        index = _header(names, line)
        arrival, prompt, output = [], [], []
        for line, row in rows:
            if not any(c.strip() for c in row):
                continue
            stray = next((i for i, cell in enumerate(row)
                          if cell.strip() and (i >= len(names) or not names[i].strip())), None)
            if stray is not None:
                raise InputError(f"row {line}: a value in column {stray + 1}, which has no name in "
                                 f"the header (row {header[0]}); remove it or name its column")
            if len(arrival) == MAX_ROWS:
                raise InputError(f"row {line}: the trace has more than {MAX_ROWS:,} requests")
            arrival.append(_value(row, line, "arrival_s", index["arrival_s"], whole=False))
            prompt.append(_value(row, line, "prompt_tokens", index["prompt_tokens"], whole=True))
            output.append(_value(row, line, "output_tokens", index["output_tokens"], whole=True))
    except csv.Error as e:
        raise InputError(f"row {line + 1}: not valid CSV ({e})") from None
    if not arrival:
        raise InputError("trace has a header but no requests")
    return make_workload(np.asarray(arrival), np.asarray(prompt, np.int64),
                         np.asarray(output, np.int64), name=name)
