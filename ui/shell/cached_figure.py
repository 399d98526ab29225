"""A figure and its spec, cached once per set of inputs: the one helper the pages' figures go
through instead of a hand-written pair of cached functions each.

The Figure is cached as a resource (shared, never copied: its frames can hold thousands of rows,
and the downloads build PNG, SVG and CSV from it); its Vega-Lite spec, what every rerun sends the
browser, is cached as data. Both are keyed on the builder's arguments, except those whose names
start with `_` (traces, results): they follow from the keyed ones and are not hashed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import streamlit as st

from charts.figure import Figure

from . import widgets


class CachedFigure:
    """`figure(*args)`: the builder's Figure, built once; `spec(*args)`: its spec, made once;
    `draw(name, *args)`: the spec drawn with the figure's downloads (files named `name`)."""

    def __init__(self, build: Callable[..., Figure], max_entries: int) -> None:
        self.figure = st.cache_resource(max_entries=max_entries, show_spinner=False)(build)

        # Streamlit keys a cache on the function's module, qualified name and source, and hashes
        # each argument by its parameter's name: wrapped, the spec's cache is the builder's own
        # (not one shared by every CachedFigure's `spec`) and skips the same `_` arguments.
        @functools.wraps(build)
        def spec(*args, **kwargs) -> dict:
            return self.figure(*args, **kwargs).spec()
        self.spec = st.cache_data(max_entries=max_entries, show_spinner=False)(spec)

    def draw(self, name: str, *args, tools: bool = True) -> None:
        figure = self.figure(*args)
        widgets.chart(self.spec(*args), lambda: figure, name, tools=tools)


def cached_figure(max_entries: int = 16) -> Callable[[Callable[..., Figure]], CachedFigure]:
    """Decorate a figure builder: `@cached_figure()` over `def kv(t, s, look, _traces) -> Figure`."""
    return functools.partial(CachedFigure, max_entries=max_entries)
