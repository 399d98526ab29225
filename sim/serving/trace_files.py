"""Arrival traces from CSV: `arrival_s, prompt_tokens, output_tokens`, one request per row, and
optionally `class`: each request's class name (mixed traffic; every row then names one, at most
16 classes, each 1 to 32 letters, digits, '_', '.' or '-').

The file is untrusted (the app passes an upload's bytes), so everything is checked before anything
runs: that a path names a regular file on a real filesystem (a FIFO, a device, a socket, a
directory or a file of the kernel's pseudo-filesystems, /proc and /sys, is refused by what it is,
not by what its metadata claims: /proc/kmsg says it is an empty regular file and blocks forever
when read), size (5 MB), the header (at most 100 columns, the three required ones each named once:
the header is checked in one pass before any row is parsed), at most 100,000 rows, and every value
(a finite number; arrival >= 0 s; whole token counts >= 1); a row may not have a value in a column
the header does not name (beyond its end or under an empty name). Other named columns
are the user's own (notes, ids) and are not read. Errors name the row and the column; rows are
numbered as a spreadsheet shows them (the header is row 1, blank rows count, and a quoted cell that
spans several lines is still one row). Values are only ever parsed with `float`; a value
quoted back in a message is cut short and stripped to letters, digits and `.+-_`, so nothing from
the file can reach a page as markup. Rows need not be sorted: requests are ordered by arrival
(stably), so request ids follow arrival order, not file order. Every step is linear in the file's
size, and a caller may pass `report(share)`, called every few thousand rows, to show progress or to
stop the parse (the app's does, so a closed tab stops its parse).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import stat
from collections.abc import Callable

import numpy as np

from sim.ceilings import MAX_TOKENS
from sim.errors import InputError
from sim.serving.workloads import (
    CLASS_NAME_RULE,
    MAX_ARRIVAL_S,
    MAX_CLASSES,
    Workload,
    check_class_name,
    make_workload,
)

MAX_BYTES = 5_000_000
MAX_ROWS = 100_000
MAX_COLUMNS = 100            # the three the trace needs and the user's own (notes, ids)
REPORT_ROWS = 2_000          # rows between two calls of load_trace's `report`
COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")
CLASS_COLUMN = "class"       # optional: each request's class
# optional, together: the prompts' shared starts (Workload.prefix_group, prefix_tokens)
PREFIX_COLUMNS = ("prefix_group", "prefix_tokens")
# What a trace holds, in the words of the command line's --trace-in help and the app's upload help.
TRACE_COLUMNS_WORDS = (
    f"columns {', '.join(COLUMNS)} (seconds, tokens, tokens), one request per row, and optionally "
    f"{CLASS_COLUMN}, each request's class name for mixed traffic ({CLASS_NAME_RULE}; at most "
    f"{MAX_CLASSES} classes), and {' and '.join(PREFIX_COLUMNS)}, the group of requests whose "
    "prompts start alike (a whole number, -1 for none) and how many of its tokens (prompt, then "
    "output) are the group's, read by prefix caching; other columns are not read")

_UNSAFE = re.compile(r"[^A-Za-z0-9.+\-_ ]")


def _shown(value: str, limit: int = 20) -> str:
    """A file value made safe to quote in a message (plain text, short, no markup characters)."""
    text = _UNSAFE.sub("?", value.strip())
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _read_bytes(source) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        data = _read_file(str(source))
    check_size(data)
    return data


def check_size(data: bytes) -> None:
    """Refuse a trace over MAX_BYTES, before anything decodes or parses it."""
    if len(data) > MAX_BYTES:
        raise InputError(f"trace is {len(data):,} bytes; the limit is {MAX_BYTES:,}")


def _read_file(path: str) -> bytes:
    """The file's bytes, once it is known to be a regular file on a real filesystem: opened
    without blocking (a FIFO with no writer would wait forever), then judged by the open file
    itself, so a file swapped after a check cannot slip through."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise InputError(f"cannot read trace file {path!r}: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        what = special_file(path, info)
        if what:
            raise InputError(f"trace {path!r} is {what}, not a regular file of data; give the "
                             "path of a CSV file")
        if info.st_size > MAX_BYTES:
            raise InputError(f"trace file is {info.st_size:,} bytes; the limit is {MAX_BYTES:,}")
        chunks, size = [], 0
        while size <= MAX_BYTES and (chunk := os.read(fd, MAX_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"cannot read trace file {path!r}: {e.strerror}") from None
    finally:
        os.close(fd)


# Filesystems whose files are the kernel's, not data: reading one may block, never end, or
# change the machine (writing).
PSEUDO_FILESYSTEMS = {"proc", "sysfs", "devtmpfs", "devpts", "debugfs", "tracefs", "securityfs",
                      "configfs", "cgroup", "cgroup2", "bpf", "pstore", "efivarfs", "fusectl",
                      "mqueue", "binfmt_misc", "autofs", "hugetlbfs", "rpc_pipefs", "nsfs"}
PSEUDO_ROOTS = ("/proc", "/sys")


def special_file(path: str, info: os.stat_result) -> str:
    """What `path` (stat `info`) is when it is not a regular file of data ("a FIFO (named pipe)",
    "a file of the kernel's proc filesystem"), else ''."""
    if not stat.S_ISREG(info.st_mode):
        return _kind(info.st_mode)
    kernel = kernel_filesystem(path, info)
    return f"a file of the kernel's {kernel}" if kernel else ""


def kernel_filesystem(path: str, info: os.stat_result) -> str:
    """The kernel's pseudo-filesystem `path` (stat `info`) lives on ("proc filesystem", "/sys"),
    or '' for a real one: by its type in the mount table, its device, or its real path."""
    fs = filesystem_of(path)
    if fs in PSEUDO_FILESYSTEMS:
        return f"{fs} filesystem"
    real = os.path.realpath(path)
    for root in (*PSEUDO_ROOTS, "/dev"):
        if _same_device(info, root) or (root in PSEUDO_ROOTS and real.startswith(root + "/")):
            return root
    return ""


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _same_device(info: os.stat_result, root: str) -> bool:
    try:
        return os.stat(root).st_dev == info.st_dev
    except OSError:
        return False


def filesystem_of(path: str) -> str:
    """The type of the filesystem `path` lives on, from /proc/self/mountinfo (the mount whose
    mount point is the longest prefix of the real path); '' where that cannot be read."""
    real = os.path.realpath(path)
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                sep = fields.index("-")
                point = fields[4].encode().decode("unicode_escape")   # "\040" for a space
                if (real == point or real.startswith(point.rstrip("/") + "/")) and \
                        len(point) >= len(best):
                    best, kind = point, fields[sep + 1]
    except (OSError, ValueError, IndexError):
        return ""
    return kind


def _header(row: list[str], line: int) -> dict[str, int]:
    """The index of each required column and of the class column where there is one, in one pass
    over the names (a wide header must not cost its width squared); at most MAX_COLUMNS of
    them."""
    where = f"row {line} (header)"
    if len(row) > MAX_COLUMNS:
        raise InputError(f"{where}: {len(row):,} columns; a trace may have at most "
                         f"{MAX_COLUMNS:,} ({', '.join(COLUMNS)} and your own)")
    spots: dict[str, list[int]] = {}
    for i, cell in enumerate(row):
        name = cell.strip().lower()
        if name:
            spots.setdefault(name, []).append(i)
    missing = [c for c in COLUMNS if c not in spots]
    if missing:
        found = ", ".join(_shown(n.strip().lower()) for n in row[:10]) or "nothing"
        raise InputError(f"{where}: missing column {', '.join(missing)}; the header needs "
                         f"{', '.join(COLUMNS)} (found {found})")
    for name, where_found in spots.items():
        if len(where_found) > 1:
            raise InputError(f"{where}: column {_shown(name)} appears {len(where_found)} times "
                             f"(columns {', '.join(str(i + 1) for i in where_found)}); name each "
                             "column once")
    if (PREFIX_COLUMNS[0] in spots) != (PREFIX_COLUMNS[1] in spots):
        raise InputError(f"{where}: columns {' and '.join(PREFIX_COLUMNS)} go together; give "
                         "both, or neither")
    return {c: spots[c][0] for c in (*COLUMNS, CLASS_COLUMN, *PREFIX_COLUMNS) if c in spots}


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


def _whole(row: list[str], line: int, column: str, index: int, low: int, high: int) -> int:
    """A whole number in [low, high] (a prefix column's cell)."""
    text = row[index].strip() if index < len(row) else ""
    where = f"row {line}, column {column}"
    try:
        number = float(text)
    except ValueError:
        raise InputError(f"{where}: {_shown(text) if text else 'empty'} is not a whole "
                         f"number") from None
    if not math.isfinite(number) or number != int(number) or not low <= number <= high:
        raise InputError(f"{where}: {_shown(text)} must be a whole number in [{low:,}, "
                         f"{high:,}]")
    return int(number)


def _class(row: list[str], line: int, index: int, seen: dict[str, None]) -> str:
    """The request's class name; a new one joins `seen` (at most MAX_CLASSES)."""
    text = row[index].strip() if index < len(row) else ""
    where = f"row {line}, column {CLASS_COLUMN}"
    if not text:
        raise InputError(f"{where}: empty; a trace with a {CLASS_COLUMN} column names every "
                         "request's class")
    if text not in seen:
        check_class_name(text, where)
        if len(seen) == MAX_CLASSES:
            raise InputError(f"{where}: {_shown(text)} would be class {MAX_CLASSES + 1}; a "
                             f"trace may have at most {MAX_CLASSES}")
        seen[text] = None
    return text


def load_trace(source, name: str = "trace",
               report: Callable[[float], None] | None = None) -> Workload:
    """A Workload from CSV `source`: bytes (an upload) or a path. Raises InputError naming the row
    and column of the first bad value. `report(share of the file read)` is called every
    REPORT_ROWS rows; whatever it raises ends the parse."""
    data = _read_bytes(source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"trace is not UTF-8 text (bad byte at offset {e.start:,})") from None
    # spreadsheet rows are CSV records (a quoted cell may span lines), blank ones included
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = enumerate(reader, start=1)
    lines = text.count("\n") + 1
    line = 1
    try:
        header = next(((n, row) for n, row in rows if any(c.strip() for c in row)), None)
        if header is None:
            raise InputError(f"trace is empty; expected a header row {', '.join(COLUMNS)}")
        line, names = header
        index = _header(names, line)
        arrival, prompt, output, classes, groups, shared = [], [], [], [], [], []
        seen: dict[str, None] = {}
        for line, row in rows:
            if not any(c.strip() for c in row):
                continue
            stray = next((i for i, cell in enumerate(row)
                          if cell.strip() and (i >= len(names) or not names[i].strip())), None)
            if stray is not None:
                raise InputError(f"row {line}: a value in column {stray + 1}, which has no name in "
                                 f"the header (row {header[0]}); remove it or name its column")
            if report is not None and line % REPORT_ROWS == 0:
                report(min(1.0, reader.line_num / lines))
            if len(arrival) == MAX_ROWS:
                raise InputError(f"row {line}: the trace has more than {MAX_ROWS:,} requests")
            arrival.append(_value(row, line, "arrival_s", index["arrival_s"], whole=False))
            prompt.append(_value(row, line, "prompt_tokens", index["prompt_tokens"], whole=True))
            output.append(_value(row, line, "output_tokens", index["output_tokens"], whole=True))
            if CLASS_COLUMN in index:
                classes.append(_class(row, line, index[CLASS_COLUMN], seen))
            if PREFIX_COLUMNS[0] in index:
                groups.append(_whole(row, line, PREFIX_COLUMNS[0], index[PREFIX_COLUMNS[0]],
                                     -1, MAX_ROWS * 10))
                shared.append(_whole(row, line, PREFIX_COLUMNS[1], index[PREFIX_COLUMNS[1]], 0,
                                     int(prompt[-1] + output[-1])))
    except csv.Error as e:
        raise InputError(f"row {line + 1}: not valid CSV ({e})") from None
    if not arrival:
        raise InputError("trace has a header but no requests")
    return make_workload(np.asarray(arrival), np.asarray(prompt, np.int64),
                         np.asarray(output, np.int64), name=name,
                         request_class=classes if CLASS_COLUMN in index else None,
                         prefix_group=groups if PREFIX_COLUMNS[0] in index else None,
                         prefix_tokens=shared if PREFIX_COLUMNS[0] in index else None)
