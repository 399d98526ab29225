"""The timeline's counters: one way to write a time in the browser and in Python, and at the end
of the clock what happened (how many streams froze, the longest freeze), not the streams' state
at that instant; in the chart, its static exports and the GIF."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
import vl_convert as vlc
from PIL import Image

from charts import export, film
from charts.frames import froze_text
from charts.theme import Look
from charts.timeline import first_token_text, largest_text, seconds_expr, view_name
from charts.views import timeline
from sim.studies.stalls import STALL_S, stalls
from sim.units import fmt_seconds
from ui.learn.words import FROZEN, GAP, lane_cards
from ui.shell.scenario import scenario_from

# times in ms: each unit's edges, the lab's own numbers (23.04, 333.0133, 5.333), values that
# round up to the next unit, and long ones
TIMES_MS = [0.0, 1e-6, 0.000213, 0.0213, 0.5, 0.99949, 0.9995, 1.0, 5.333333, 23.04, 99.99,
            100.0, 223.94, 223.85, 223.9, 333.0133, 346.4999, 999.4, 999.5, 999.9, 1000.0, 1234.5,
            16_300.0, 99_949.0, 99_950.0, 100_000.0, 123_456.7, 3.6e6, 1e9, 2.5e12, 1.5e20,
            3e-7, 2.13e-11, 1e-11, 9.9e-11, -2.5e-12, -223.94, -1234.5]


@pytest.fixture(scope="module")
def seed():
    s = scenario_from({})
    unchunked, chunked = s.run("vllm-v0", 50_000), s.run("sarathi", 50_000)
    return timeline(unchunked, chunked), (unchunked, chunked), s


def texts(spec: dict) -> dict[str, list[str]]:
    """The text each named mark draws, by its name (a Vega-Lite view's `<name>_marks`), from
    Vega's own scene graph (vl-convert runs Vega, its format included)."""
    found: dict[str, list[str]] = {}

    def walk(mark):
        name = re.sub(r"(_\d+)?_marks$", "", mark.get("name") or "")
        for item in mark.get("items", []):
            if mark.get("marktype") == "text":
                found.setdefault(name, []).append(item["text"])
            for child in item.get("items", []):
                walk(child)
    walk(vlc.vegalite_to_scenegraph(spec)["scenegraph"])
    return found


def test_the_browser_writes_a_time_as_python_does():
    """`seconds_expr`, evaluated by Vega, reads as sim.units.fmt_seconds on every time here:
    the counters the browser computes and the words Python writes share one format."""
    spec = {"data": {"values": [{"ms": ms, "i": i} for i, ms in enumerate(TIMES_MS)]},
            "transform": [{"calculate": seconds_expr("datum.ms"), "as": "label"}],
            "mark": {"type": "text", "name": "times"},
            "encoding": {"y": {"field": "i", "type": "ordinal"}, "text": {"field": "label"}},
            "name": "times"}
    drawn = texts(spec)["times"]
    assert drawn == [fmt_seconds(ms / 1e3) for ms in TIMES_MS]
    assert drawn[TIMES_MS.index(223.94)] == "223.9 ms" and drawn[TIMES_MS.index(1234.5)] == "1.23 s"


def test_a_live_counter_and_the_largest_gap_write_one_time_alike(seed):
    """At 223.94 ms into the stall the freeze counter and the largest gap both read 223.9 ms,
    not "224 ms" beside "223.9 ms"; the new request's wait too."""
    lanes, _, _ = seed
    drawn = texts(lanes.figure(Look(), width=900).spec(t=0.22394))
    assert drawn["unchunked_frozen"] == ["streams frozen for 223.9 ms"]
    assert drawn["unchunked_largest"] == ["largest gap so far 223.9 ms"] == [largest_text(223.94)]
    assert "waiting for its first token: 223.9 ms" in (t for v in drawn.values() for t in v)
    assert first_token_text(0.0, 330.0, 223.94) == "waiting for its first token: 223.9 ms"


def test_at_the_end_the_counter_says_how_many_froze_and_for_how_long(seed):
    """At the end of the clock (a static export, the player's last frame) the unchunked lane
    says "64 streams froze, up to 333 ms", the metric cards' numbers, where the streams' state at
    that instant read "no stream frozen" beside 64 red rows; the chunked lane, no freeze, says so.
    Before the end the live counter stays."""
    lanes, traces, s = seed
    figure = lanes.figure(Look(), width=900)
    end = texts(figure.spec())
    cards = {c.label: c.value for c in lane_cards(traces[0], s.mode, s.tp)}
    froze = stalls(traces[0], STALL_S, traces[0].prefilled)
    assert cards[FROZEN] == "64 of 64" and froze.frozen_streams == 64
    assert end["unchunked_end_counter"] == [f"64 streams froze, up to {cards[GAP]}"] == \
        ["64 streams froze, up to 333 ms"]
    assert end["chunked_end_counter"] == ["no stream froze"]
    assert "unchunked_frozen" not in end and "no stream frozen" not in str(end)
    before = texts(figure.spec(t=lanes.t_max * 0.99))
    assert "unchunked_end_counter" not in before and before["unchunked_frozen"] == ["no stream frozen"]


def test_froze_text_counts_and_names_the_longest_freeze():
    s = scenario_from({"decodes": 1})
    trace = s.run("vllm-v0", 50_000)
    assert froze_text(stalls(trace, STALL_S, trace.prefilled)) == "1 stream froze, up to 333 ms"
    assert froze_text(None) == "no streams running"
    quiet = scenario_from({"prompt": 100}).run("vllm-v0", 50_000)
    assert froze_text(stalls(quiet, STALL_S, quiet.prefilled)) == "no stream froze"


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_static_exports_say_what_happened(seed, fmt):
    """A static export draws the clock at the end: its counter is the whole run's."""
    lanes, _, _ = seed
    figure = lanes.figure(Look(), width=900)
    data = export.convert(vlc.vegalite_to_svg if fmt == "svg" else vlc.vegalite_to_png,
                          figure.spec(), **({} if fmt == "svg" else {"scale": 1}))
    if fmt == "svg":
        assert "64 streams froze, up to 333 ms" in data and "no stream frozen" not in data
    else:
        assert Image.open(io.BytesIO(data)).size[0] > 0


def test_the_gifs_last_frame_is_the_end_state_counters_included(seed):
    """The GIF ends on the whole figure at the end of the clock, so its counter line is the one
    that says what happened; the frames before read the live counters in the browser's words."""
    lanes, _, _ = seed
    figure = lanes.figure(Look(), width=500)
    gif = Image.open(io.BytesIO(film.gif(figure, lanes.t_max, frames=3)))
    gif.seek(gif.n_frames - 1)
    last = np.asarray(gif.convert("RGB"), int)
    whole = np.asarray(Image.open(io.BytesIO(vlc.vegalite_to_png(figure.spec(), scale=1)))
                       .convert("RGB"), int)
    rows, columns = whole.shape[:2]
    assert (np.abs(last[:rows, :columns] - whole).max(axis=2) > 60).mean() < 0.01
    movie = film._Film(figure, [0.22394], 1.0)
    said = {w.view: w.text for w in movie.words[0] if w.x == 0}
    assert said[view_name("unchunked", "counters")] == "streams frozen for 223.9 ms"
