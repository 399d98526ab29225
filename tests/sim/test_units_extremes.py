"""Display formatting at the ends of every range: never a 30-digit number, never nan."""

import math

import pytest

from sim.units import fmt_bytes, fmt_count, fmt_seconds


@pytest.mark.parametrize("value, shown", [
    (4e15, "4e+15 s"), (999_999.0, "999,999 s"), (-2e7, "-2e+07 s")])
def test_fmt_seconds_turns_scientific_past_a_million_seconds(value, shown):
    assert fmt_seconds(value) == shown


def test_fmt_bytes_and_counts_stay_short_at_any_size():
    assert fmt_bytes(6.4e46) == "6.4e+31 PB"
    assert fmt_bytes(1e15 * 999) == "999 PB"
    assert fmt_count(1_234_567) == "1,234,567" and fmt_count(5e17) == "5e+17"
    assert fmt_count(math.nan) == "—" and fmt_count(math.inf) == "—"
