"""Display formatting: the unit changes where rounding would print 1,000 of the smaller one."""

import math

import pytest

from sim.units import fmt_bytes, fmt_flops, fmt_seconds


@pytest.mark.parametrize("value, shown", [
    (0.02304, "23.04 ms"), (0.00099996, "1 ms"), (0.9999, "1 s"), (5.33e-6, "5.33 µs"),
    (-0.0, "0 µs"), (math.nan, "—"), (math.inf, "—"), (368.64, "369 s")])
def test_fmt_seconds(value, shown):
    assert fmt_seconds(value) == shown


def test_fmt_bytes_and_flops():
    assert fmt_bytes(128 * 1024) == "131 kB" and fmt_bytes(16e9) == "16 GB"   # SI, never KiB
    assert fmt_bytes(7.5 * 2**30) == "8.05 GB" and fmt_bytes(math.nan) == "—"
    assert fmt_flops(999.7e9) == "1 TFLOP" and fmt_flops(16e9) == "16 GFLOP"
