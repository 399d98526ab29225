"""Display formatting. Everything inside `sim` is SI (seconds, bytes, FLOPs); convert only here.

Beyond a million of the largest unit a value is shown in scientific form (3 significant figures), so
an extreme input never prints a 30-digit number.
"""

from __future__ import annotations

import math

HUGE = 1e6   # of the largest unit: from here on, scientific form


SECOND_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6))


def fmt_seconds(s: float, digits: int | None = None) -> str:
    """A time in s, ms or µs: 3 significant figures (4 in ms), or `digits` of them, trailing
    zeros kept, where a sum's shown inputs must reproduce its shown result."""
    # thresholds sit just below each unit so that rounding never prints "1e+03 µs"
    if s is None or not math.isfinite(s):
        return "—"
    s = s + 0.0   # -0.0 prints as 0
    if abs(s) >= HUGE:
        return f"{s:.3g} s"
    if digits is not None:
        return _with_digits(s, digits)
    if abs(s) >= 0.9995:
        return f"{s:,.3g} s" if abs(s) < 100 else f"{s:,.0f} s"
    if abs(s) >= 0.9995e-3:
        return f"{s * 1e3:.4g} ms"
    return f"{s * 1e6:.3g} µs"


def _with_digits(s: float, digits: int) -> str:
    below = 1 - 0.5 * 10.0 ** -digits   # a value that rounds up to the unit is shown in it
    name, unit = next(((n, u) for n, u in SECOND_UNITS if abs(s) >= below * u), SECOND_UNITS[-1])
    value = s / unit
    if not value:
        return f"0 {name}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    if abs(round(value, decimals)) >= 10 ** (digits - decimals):   # 9.9996 -> 10.00, not 10.000
        decimals = max(decimals - 1, 0)
    return f"{value:,.{decimals}f} {name}"


def seconds_shown(text: str) -> float:
    """The time (s) a fmt_seconds text shows, as its reader would add it up ("1,250.3 ms":
    1.2503); NaN for "—"."""
    if text == "—":
        return math.nan
    number, name = text.split(" ")
    return float(number.replace(",", "")) * dict(SECOND_UNITS)[name]


def fmt_counted(n: int, noun: str) -> str:
    """A count with its noun, plural where it is not one: "1 iteration", "16 iterations"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


NO_WAIT = "none"


def fmt_wait(s: float) -> str:
    """A wait (time a request spent waiting) as fmt_seconds shows it, or "none" where it did not
    wait at all: "0 µs" would read as a wait too short to show."""
    return NO_WAIT if s == 0 else fmt_seconds(s)


def shown_same(a: float, b: float) -> bool:
    """Two times that read the same on screen: a change too small to report."""
    return fmt_seconds(a) == fmt_seconds(b)


def fmt_change(before: float, after: float, ratio: bool = True, shown=fmt_seconds) -> str:
    """A time's change in words: "falls from 333 ms to 23.04 ms (14.5× shorter)" (without the
    ratio where `ratio` is False or either time is 0), "rises from ...", or "stays at ..." where
    both read alike; each time as `shown` writes it (fmt_wait: "falls from 120 ms to none", "is
    none in both runs")."""
    a, b = shown(before), shown(after)
    if math.isnan(before) or math.isnan(after):
        return f"is {b} (was {a})"
    if a == b:
        return "is none in both runs" if b == NO_WAIT else f"stays at {b}"
    way = "shorter" if after < before else "longer"
    verb = "falls" if after < before else "rises"
    if not ratio or not after or not before:
        size = ""
    else:
        times = before / after if after < before else after / before
        if f"{times:,.3g}" == "1":   # a change "1×" would hide: by how much, in percent
            size = f" ({abs(after / before - 1):.2%} {way})"
        else:
            size = f" ({times:,.3g}× {way})"
    return f"{verb} from {a} to {b}{size}"


def fmt_bytes(b: float) -> str:
    """SI decimal units (kB, MB, GB, TB), as datasheets and the source articles write sizes and
    rates: one unit system everywhere the lab shows a size."""
    units = ("B", "kB", "MB", "GB", "TB", "PB")
    value, unit = float(b), units[0]
    if not math.isfinite(value):
        return "—"
    for unit in units:
        if abs(value) < 1000 or unit == units[-1]:
            break
        value /= 1000
    if abs(value) >= HUGE:
        return f"{value:.3g} {unit}"
    return f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:.3g} {unit}"


def fmt_flops(f: float) -> str:
    if not math.isfinite(f):
        return "—"
    for scale, unit in ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP")):
        if abs(f) >= 0.9995 * scale:
            return f"{f / scale:.3g} {unit}"
    return f"{f:.3g} FLOP"


def fmt_count(n: float) -> str:
    """Thousands separators; scientific beyond 1e15 (no one reads 19 digits)."""
    if not math.isfinite(n):
        return "—"
    return f"{n:,.0f}" if abs(n) < 1e15 else f"{n:.3g}"


def fmt_percent(fraction: float) -> str:
    """A fraction as a percentage to three significant figures, never in scientific form (a
    learner reads "0.00898%", not "8.98e-05%"); thousands separators above 1,000%."""
    if not math.isfinite(fraction):
        return "—"
    percent = fraction * 100
    if percent == 0 or abs(percent) >= 100:
        return f"{percent:,.0f}%"
    decimals = max(0, 2 - math.floor(math.log10(abs(percent))))
    return f"{percent:.{decimals}f}%"
