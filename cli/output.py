"""What a command prints: a table (fitted to 120 columns unless --wide) or JSON (--json)."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
import textwrap

import numpy as np

WIDTH = 120           # the widest line printed without --wide
MIN_COLUMN = 10       # a wrapped column keeps at least this many characters
GAP = "  "


class OutputError(Exception):
    """Standard output cannot be written (closed, a full disk): the command fails with exit 1."""


CLOSED = ("standard output is closed; give the command somewhere to print (a file, a pipe or the "
          "terminal)")


def check_stdout() -> None:
    """Refuse to start when there is no standard output to print to (`>&-` closes it)."""
    if sys.stdout is None:
        raise OutputError(CLOSED)
    try:
        os.fstat(sys.stdout.fileno())
    except (io.UnsupportedOperation, AttributeError):   # no descriptor: tests capture stdout
        return
    except (OSError, ValueError):
        raise OutputError(CLOSED) from None


@contextlib.contextmanager
def writing():
    """A failure to write stdout as an OutputError (a broken pipe stays itself: the reader left,
    which is no error)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError(f"cannot write the output: {e.strerror}") from None


def flush_stdout() -> None:
    with writing():
        sys.stdout.flush()


def emit(args, payload, text: str) -> None:
    """`payload` as JSON with --json (undefined values left out: `finite`), else `text` with its
    long lines wrapped (unless --wide, which commands without tables do not take)."""
    if args.json:
        text = json.dumps(finite(payload), indent=2, allow_nan=False, default=_jsonable)
    elif not getattr(args, "wide", False):
        text = wrap(text)
    with writing():
        print(text)


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def wrap(text: str, width: int = WIDTH) -> str:
    """Lines longer than `width` wrapped at spaces, continuation lines indented by two."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        lines.extend(textwrap.wrap(line, width, initial_indent="", subsequent_indent=indent + "  ",
                                   break_on_hyphens=False))
    return "\n".join(lines)


def table(rows: list[tuple], header: tuple, wide: bool = False, width: int = WIDTH) -> str:
    """Left-aligned text columns under a header and a rule. Unless `wide`, the widest columns
    are narrowed (their cells wrapped onto more lines) until the table fits `width`."""
    cells = [[str(c) for c in r] for r in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    if not wide:
        widths = _fit(widths, width)
    lines = []
    for n, row in enumerate(cells):
        parts = [textwrap.wrap(c, w, break_on_hyphens=False) or [""] for c, w in zip(row, widths)]
        for k in range(max(len(p) for p in parts)):
            lines.append(GAP.join((p[k] if k < len(p) else "").ljust(w)
                                  for p, w in zip(parts, widths)).rstrip())
        if n == 0:
            lines.append(GAP.join("-" * w for w in widths))
    return "\n".join(lines)


def _fit(widths: list[int], width: int) -> list[int]:
    """Narrow the widest columns, one character at a time, until the row fits; the first column
    (the row's name) only when the others are down to MIN_COLUMN."""
    widths = list(widths)
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - width
    while excess > 0:
        narrowable = [i for i in range(1, len(widths)) if widths[i] > MIN_COLUMN] or \
            [i for i in range(len(widths)) if widths[i] > MIN_COLUMN]
        if not narrowable:
            break
        widest = max(narrowable, key=widths.__getitem__)
        widths[widest] -= 1
        excess -= 1
    return widths


def finite(value):
    """`value` as JSON without NaN or null: an undefined number (NaN, infinity, None), and a
    group left empty by them, is left out of its object or list; the command's notes say why
    (NO_SECOND_TOKEN)."""
    if isinstance(value, dict):
        kept = {k: finite(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if not _undefined(v)}
    if isinstance(value, (list, tuple)):
        return [v for v in map(finite, value) if not _undefined(v)]
    if isinstance(value, np.generic):
        value = value.item()
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _undefined(value) -> bool:
    return value is None or value == {}


NO_SECOND_TOKEN = ("no request emitted a second token, so there is no gap between tokens: TBT, "
                   "TPOT and the largest gap are undefined (shown as —, left out of --json)")
