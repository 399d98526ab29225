"""Arrival traces from CSV: `arrival_s, prompt_tokens, output_tokens`, one request per row.

The file is untrusted (the app passes an upload's bytes), so everything is checked before anything
runs: size (5 MB, 100,000 rows), the three required columns, and every value (a finite number;
arrival >= 0 s; whole token counts >= 1). Errors name the row and the column; rows are numbered as
a spreadsheet shows them (the header is row 1). Values are only ever parsed with `float`; a value
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
            size = os.path.getsize(source)
            if size > MAX_BYTES:
                raise InputError(f"trace file is {size:,} bytes; the limit is {MAX_BYTES:,}")
            with open(source, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as e:
            raise InputError(f"cannot read trace file {str(source)!r}: {e.strerror}") from None
    if len(data) > MAX_BYTES:
        raise InputError(f"trace is {len(data):,} bytes; the limit is {MAX_BYTES:,}")
    return data


def _header(row: list[str]) -> dict[str, int]:
    names = [name.strip().lower() for name in row]
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        found = ", ".join(_shown(n) for n in names[:10]) or "nothing"
        raise InputError(f"row 1 (header): missing column {', '.join(missing)}; the header needs "
                         f"{', '.join(COLUMNS)} (found {found})")
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
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next((row for row in reader if any(c.strip() for c in row)), None)
        if header is None:
            raise InputError(f"trace is empty; expected a header row {', '.join(COLUMNS)}")
        index = _header(header)
        arrival, prompt, output = [], [], []
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            line = reader.line_num
            if len(arrival) == MAX_ROWS:
                raise InputError(f"row {line}: the trace has more than {MAX_ROWS:,} requests")
            arrival.append(_value(row, line, "arrival_s", index["arrival_s"], whole=False))
            prompt.append(_value(row, line, "prompt_tokens", index["prompt_tokens"], whole=True))
            output.append(_value(row, line, "output_tokens", index["output_tokens"], whole=True))
    except csv.Error as e:
        raise InputError(f"row {reader.line_num}: not valid CSV ({e})") from None
    if not arrival:
        raise InputError("trace has a header but no requests")
    return make_workload(np.asarray(arrival), np.asarray(prompt, np.int64),
                         np.asarray(output, np.int64), name=name)
