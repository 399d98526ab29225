"""Traces compared field by field, as the tests that pin "the same run" need them."""

from dataclasses import fields

import numpy as np

from sim.serving.trace import Trace


def same_trace(a: Trace, b: Trace) -> None:
    """Every field of `a` equals `b`'s: arrays in dtype and every value."""
    for f in fields(Trace):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name
