"""ui.shell.cached_figure: a figure and its spec cached once per set of inputs, each builder's caches its
own (builders of the same signature never share entries), the `_` arguments never hashed."""

import threading

import altair as alt
import pandas as pd
import pytest
import streamlit as st

from charts.figure import Figure
from charts.theme import Look
from ui.shell.cached_figure import cached_figure

LOOK = Look()
built: list[str] = []


def _bars(title: str, height: int, look: Look) -> Figure:
    frame = pd.DataFrame({"x": ["a", "b"], "y": [1, height]})
    return Figure(alt.Chart(alt.NamedData("bars")).mark_bar().encode(x="x:N", y="y:Q")
                  .properties(title=title), look, data={"bars": frame})


@cached_figure()
def tall(height: int, look: Look, _lock: threading.Lock) -> Figure:
    built.append("tall")
    return _bars("tall", height, look)


@cached_figure()
def wide(height: int, look: Look, _lock: threading.Lock) -> Figure:   # tall's very signature
    built.append("wide")
    return _bars("wide", height, look)


@pytest.fixture(autouse=True)
def empty_caches():
    st.cache_data.clear()
    st.cache_resource.clear()
    built.clear()


def test_the_spec_is_the_figures_and_each_is_built_once():
    lock = threading.Lock()   # unhashable: the spec's cache must skip it as the figure's does
    spec = tall.spec(3, LOOK, lock)
    assert spec == tall.figure(3, LOOK, lock).spec()
    assert tall.spec(3, LOOK, threading.Lock()) == spec and built == ["tall"]
    tall.spec(4, LOOK, lock)
    assert built == ["tall", "tall"]


def test_two_builders_of_the_same_signature_keep_their_own_entries():
    lock = None   # hashable, so that only the builders tell the entries apart
    assert tall.spec(3, LOOK, lock)["title"] == "tall"
    assert wide.spec(3, LOOK, lock)["title"] == "wide"
    assert tall.figure(3, LOOK, lock) is not wide.figure(3, LOOK, lock)
