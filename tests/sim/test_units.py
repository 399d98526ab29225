"""Display formatting: the unit changes where rounding would print 1,000 of the smaller one."""

import math

import pytest

from sim.units import fmt_bytes, fmt_change, fmt_flops, fmt_seconds, fmt_wait, seconds_shown


@pytest.mark.parametrize("value, shown", [
    (0.02304, "23.04 ms"), (0.00099996, "1 ms"), (0.9999, "1 s"), (5.33e-6, "5.33 µs"),
    (-0.0, "0 µs"), (math.nan, "—"), (math.inf, "—"), (368.64, "369 s")])
def test_fmt_seconds(value, shown):
    assert fmt_seconds(value) == shown


@pytest.mark.parametrize("value, digits, shown", [
    (1.2503456, 6, "1.25035 s"), (12.6, 4, "12.60 s"), (0.99999, 4, "1.000 s"),
    (0.99999, 6, "999.990 ms"), (9.99996, 4, "10.00 s"), (1234.5, 6, "1,234.50 s"),
    (1.5e-5, 4, "15.00 µs"), (0.0, 4, "0 µs")])
def test_fmt_seconds_to_more_figures_keeps_its_zeros_and_reads_back(value, digits, shown):
    """A sum's inputs with `digits` figures, trailing zeros kept (they are figures too), read
    back as a learner adds them."""
    assert fmt_seconds(value, digits) == shown
    assert seconds_shown(shown) == pytest.approx(round(value, 12), rel=0.5 * 10.0 ** (1 - digits))


def test_fmt_bytes_and_flops():
    assert fmt_bytes(128 * 1024) == "131 kB" and fmt_bytes(16e9) == "16 GB"   # SI, never KiB
    assert fmt_bytes(7.5 * 2**30) == "8.05 GB" and fmt_bytes(math.nan) == "—"
    assert fmt_flops(999.7e9) == "1 TFLOP" and fmt_flops(16e9) == "16 GFLOP"


def test_a_wait_of_nothing_reads_none_and_a_change_to_or_from_it_in_words():
    assert (fmt_wait(0.0), fmt_wait(-0.0), fmt_wait(2.5e-3), fmt_wait(1e-9)) == (
        "none", "none", "2.5 ms", "0.001 µs")
    assert fmt_change(0.12, 0.0, shown=fmt_wait) == "falls from 120 ms to none"
    assert fmt_change(0.0, 0.03, shown=fmt_wait) == "rises from none to 30 ms"
    assert fmt_change(0.0, 0.0, shown=fmt_wait) == "is none in both runs"
    # a change to or from 0 has no ratio (it was a division by zero)
    assert fmt_change(0.0, 0.1) == "rises from 0 µs to 100 ms"
    assert fmt_change(0.333, 0.02304) == "falls from 333 ms to 23.04 ms (14.5× shorter)"
