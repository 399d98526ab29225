"""One error type for bad input, so the CLI and the app can show a message instead of a traceback.

Messages name the value and the bound it broke, in the words a user reads: "--prompt must be ≥ 1,
got −1000", "peak TFLOP/s must be ≤ 100,000, got 1e+06".
"""

from __future__ import annotations

import math


class InputError(ValueError):
    """A user-supplied value is out of range; the message names the value and the allowed range."""


def fmt_bound(x: float) -> str:
    """A range's end as the message shows it: whole numbers with thousands separators (up to
    1e15), others in the shortest form Python prints; minus as U+2212."""
    text = f"{int(x):,}" if x == int(x) and abs(x) < 1e15 else f"{x:g}"
    return text.replace("-", "\u2212", 1) if text.startswith("-") else text


def fmt_given(x: float) -> str:
    """The user's value echoed back exactly: whole numbers in full without separators (what was
    typed, e.g. −1000 for -1e3), others as Python's shortest repr (5e-324, 0.1)."""
    text = str(int(x)) if math.isfinite(x) and x == int(x) and abs(x) < 1e16 else repr(x)
    return text.replace("-", "\u2212", 1) if text.startswith("-") else text


def range_problem(number: float, *, low: float = 0.0, high: float = math.inf,
                  low_inclusive: bool = False, integer: bool = False) -> str | None:
    """What is wrong with `number` ("must be ≥ 1, got −1000"), or None when it is in range. For
    whole numbers an exclusive lower bound reads as the next whole number (low=0: "≥ 1")."""
    if not math.isfinite(number):
        return f"must be a finite number, got {fmt_given(number)}"
    if number < low if low_inclusive else number <= low:
        if integer and not low_inclusive and low == int(low):
            bound = f"≥ {fmt_bound(low + 1)}"
        else:
            bound = f"{'≥' if low_inclusive else '>'} {fmt_bound(low)}"
        return f"must be {bound}, got {fmt_given(number)}"
    if number > high:
        return f"must be ≤ {fmt_bound(high)}, got {fmt_given(number)}"
    if integer and number != int(number):
        return f"must be a whole number, got {fmt_given(number)}"
    return None


def check_number(name: str, value, *, low: float = 0.0, high: float = math.inf,
                 low_inclusive: bool = False, integer: bool = False) -> float:
    """Return `value` if it is a finite number in range, else raise InputError naming it and the
    bound it broke."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    problem = range_problem(number, low=low, high=high, low_inclusive=low_inclusive,
                            integer=integer)
    if problem:
        raise InputError(f"{name} {problem}")
    return int(number) if integer else number
