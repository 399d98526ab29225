"""One error type for bad input, so the CLI and the app can show a message instead of a traceback."""

from __future__ import annotations

import math


class InputError(ValueError):
    """A user-supplied value is out of range; the message names the value and the allowed range."""


def check_number(name: str, value, *, low: float = 0.0, high: float = math.inf,
                 low_inclusive: bool = False, integer: bool = False) -> float:
    """Return `value` if it is a finite number in range, else raise InputError naming it."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    if integer and number != int(number):
        raise InputError(f"{name} must be a whole number, got {value!r}")
    too_low = number < low if low_inclusive else number <= low
    if too_low or number > high:
        left = "[" if low_inclusive else "("
        right = f"{high:g}]" if math.isfinite(high) else "inf)"
        raise InputError(f"{name} must be in {left}{low:g}, {right}, got {value!r}")
    return int(number) if integer else number
