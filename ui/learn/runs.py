"""Cached calls into `sim` and `charts` for the pages: the two lanes, their cards and timeline,
the roofline plan, the worked example and the fidelity report.

Every simulation and figure is cached, keyed on plain inputs (the Scenario dataclass holds frozen
Gpu and Model dataclasses), so a rerun that changes nothing costs nothing and a changed control
recomputes only what depends on it. Traces, frames and figures are only ever read, so they are
shared, never copied (a trace with a million tokens would cost more to unpickle on every rerun
than to use): traces in the server's store bounded in bytes (ui/shell/store.py), frames and figures as
resources; small results and the specs handed to the browser are cached as data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from charts import fidelity
from charts.figure import CLOCK, Figure
from charts.player import player_html
from charts.theme import Look
from charts.views import (
    BudgetPlan,
    RooflineFigures,
    Timeline,
    budget_plan,
    roofline_figures,
    timeline,
)
from charts.worked import to_scale
from sim.cost.validation import validate
from sim.errors import InputError
from sim.serving.engine import SimulationLimitError, Trace
from sim.studies.budget import ScenarioIteration, scenario_iterations
from sim.studies.worked_example import LastChunk, WorkedExample, worked_example
from sim.studies.worked_example import last_chunk as sim_last_chunk

from ..shell import controls
from ..shell.cached_figure import cached_figure
from ..shell.scenario import Scenario, most_that_fit
from ..shell.store import TRACES
from ..shell.widgets import CHART_WIDTH, widget
from . import words

# Any scenario finishes in bounded time: at most 4,097 requests emit at most 1,048,608 tokens, and
# each lane stops at this cap (< 1 s here); beyond it the page says so.
MAX_ITERATIONS = 50_000


# --- cached computations --------------------------------------------------------------------
def _lane(s: Scenario, policy: str) -> Trace:
    """The scenario under one policy, kept in the server's trace store (bounded in bytes: a lane
    of 4,096 decoders holds ~75 MB)."""
    lane = s.lane(policy)
    key = ("lane", lane)
    trace = TRACES.get(key)
    if trace is None:
        trace = TRACES.put(key, lane.capped(MAX_ITERATIONS).simulate())
    return trace


def try_lanes(s: Scenario) -> tuple[Trace, Trace] | str:
    """(unchunked, chunked) traces, or why they cannot be run, in words (e.g. the prompt's KV
    does not fit)."""
    try:
        return _lane(s, s.unchunked), _lane(s, s.chunked)
    except SimulationLimitError:
        return (f"it needs more than {MAX_ITERATIONS:,} iterations, the most this app runs: the "
                f"budget leaves too few prompt tokens per iteration for a {s.prompt:,}-token "
                "prompt. Raise the budget or shorten the prompt.")
    except InputError as e:
        return str(e)


def lanes(s: Scenario) -> tuple[Trace, Trace]:
    """(unchunked, chunked) traces, or an error message and the end of this page's run."""
    traces = try_lanes(s)
    if isinstance(traces, str):
        st.error(f"**Can't simulate this scenario:** {traces.rstrip('.')}.{_what_fits()}")
        st.stop()
    return traces


def _what_fits() -> str:
    """The most of each memory-bound count that fits with the other values kept, each a link
    to that view (empty when lowering one count alone cannot make the scenario fit)."""
    fits = most_that_fit(st.session_state)
    here = {key: st.query_params.get_all(key) for key in st.query_params}
    links = [f"[{key}={value:,}](?{urlencode(here | {key: [str(value)]}, doseq=True)})"
             for key, value in fits.items()]
    return (" The most that fit, changing one value: " + ", or ".join(links) + ".") if links else ""


def comparison(s: Scenario) -> Scenario | None:
    """The compare toggle: the scenario in the mode whose numbers it adds (`s.compare_mode`), or
    None when it is off or that mode refuses this scenario (said in a warning, e.g. the
    calibrated mode on the illustrative GPU)."""
    if not widget(controls.COMPARE, width="content"):
        return None
    other = s.in_mode(s.compare_mode)
    try:
        other.cost_model()
    except InputError as e:
        st.warning(f"**No {other.mode} numbers to show beside the {s.mode} ones:** {e}.",
                   icon=":material/compare_arrows:")
        return None
    return other


@st.cache_data(max_entries=32, show_spinner=False)
def lane_cards(s: Scenario, policy: str) -> list[words.Card]:
    return words.lane_cards(_lane(s, policy), s.mode, s.tp)


@st.cache_resource(max_entries=32, show_spinner=False)
def timeline_view(s: Scenario, window: str) -> Timeline:
    return timeline(_lane(s, s.unchunked), _lane(s, s.chunked), window)


@st.cache_resource(max_entries=32, show_spinner=False)
def timeline_figure(s: Scenario, look: Look, window: str, width: int = CHART_WIDTH,
                    rows_px: int | None = None, beside: bool = False) -> Figure:
    return timeline_view(s, window).figure(look, width, rows_px=rows_px, beside=beside)


UNDRAWN_CLOCK_S = 1e-6   # the clock's range before a guess that opens at 0 (it must not be empty)


@dataclass(frozen=True)
class Framing:
    """How a player frames the timeline: the chart's width and decoder block height (None: by
    its rows); for a guided tour, the moment it opens at and the one it plays on to (seconds),
    the views it outlines (charts.timeline.view_name), who takes the keys (charts.player.KEYS);
    `until` (s), while a guess is not yet made: nothing of the run after it is drawn (no faded
    preview of what is to come, no tick to count ahead), nor the lanes' whole-run numbers and
    the cue, and the clock stops there; `locked`, why (the player's controls are disabled with
    it as their tooltip). `beside`: the lanes side by side (`width` each), else one above the
    other."""
    width: int = CHART_WIDTH
    rows_px: int | None = None
    beside: bool = False
    start: float = 0.0
    play_to: float | None = None
    highlight: tuple[str, ...] = ()
    keys: str = "player"
    until: float | None = None
    locked: str = ""


@st.cache_data(max_entries=32, show_spinner=False)
def player_page(s: Scenario, look: Look, window: str, height: int, key: str, file_stem: str,
                framing: Framing = Framing()) -> str:
    """The player's HTML (a string: cheap to cache as data); `key` names the view whose playback
    position the browser keeps, `file_stem` its saved frames."""
    tl = timeline_view(s, window)
    figure = timeline_figure(s, look, window, framing.width, framing.rows_px, framing.beside)
    cue, boundaries, clock_end = "", tl.boundaries, tl.t_max
    if framing.until is None:
        cue = words.player_cue(lane_cards(s, s.unchunked), lane_cards(s, s.chunked),
                               tl.lanes[0].decoders.decoders)
    else:
        figure = replace(figure, data={name: _before(name, frame, framing.until * 1e3)
                                       for name, frame in figure.data.items()})
        boundaries = [b for b in boundaries if b <= framing.until]
        # the clock stops there too: past it, an undrawn run would read as streams waiting
        clock_end = max(framing.until, UNDRAWN_CLOCK_S)
    return player_html(figure.spec(), clock=CLOCK, t_max=clock_end, boundaries=boundaries,
                       height=height, dark=look.dark, key=key, cue=cue, file_stem=file_stem,
                       presenter=look.presenter, contrast=look.contrast, start=framing.start,
                       play_to=framing.play_to, highlight=framing.highlight, keys=framing.keys,
                       locked=framing.locked)


def _before(name: str, frame: pd.DataFrame, until_ms: float) -> pd.DataFrame:
    """One of the timeline's tables (charts.timeline) with nothing after `until_ms`: iterations
    cut at it, ticks and tokens up to it, a first token after it unknown, headings without their
    whole-run numbers."""
    kind = name.rsplit("_", 1)[-1]
    if kind == "iterations":
        kept = frame[frame.start_ms < until_ms]
        end = kept.end_ms.clip(upper=until_ms)
        return kept.assign(end_ms=end, duration_ms=end - kept.start_ms)
    if kind in ("ticks", "new"):
        return frame[frame.time_ms <= until_ms]
    if kind == "callouts":
        return frame.assign(first_ms=frame.first_ms.where(frame.first_ms <= until_ms))
    if kind == "heading":
        return frame.assign(subtitle="")
    return frame


@st.cache_resource(max_entries=32, show_spinner=False)
def plan(s: Scenario, tpot_s: float) -> BudgetPlan:
    """The scenario's iterations priced and the budgets worth knowing (charts.views.budget_plan)."""
    return budget_plan(s.cost_model(), s.decodes, s.context, s.prompt, s.budget, tpot_s)


@st.cache_resource(max_entries=32, show_spinner=False)
def roofline_view(s: Scenario, tpot_s: float, look: Look) -> tuple[BudgetPlan, RooflineFigures]:
    """The plan and the roofline page's figures (charts.views.roofline_figures, which the export
    draws too): the roofline, the budget curve, and in a mode with tiles the GEMM tile steps."""
    p = plan(s, tpot_s)
    return p, roofline_figures(s.cost_model(), p, s.decodes, s.context, s.prompt, look)


@st.cache_data(max_entries=32, show_spinner=False)
def roofline_specs(s: Scenario, tpot_s: float, look: Look) -> tuple[dict, dict, dict | None]:
    """The roofline's, the curve's and the tile steps' specs (None: no tiles in this mode)."""
    figures = roofline_view(s, tpot_s, look)[1]
    return (figures.roof.spec(), figures.curve.spec(),
            figures.tiles.spec() if figures.tiles else None)


@st.cache_data(max_entries=32, show_spinner=False)
def priced_iterations(s: Scenario) -> dict[str, ScenarioIteration]:
    """The scenario's iterations priced alone: decode-only, chunk, fused, whole prompt."""
    return {it.key: it for it in scenario_iterations(s.cost_model(), s.decodes, s.context,
                                                     s.prompt, s.budget)}


@st.cache_data(max_entries=32, show_spinner=False)
def worked(s: Scenario, second_budget: int) -> WorkedExample:
    return worked_example(**s.worked_example_inputs(second_budget))


@st.cache_data(max_entries=32, show_spinner=False)
def last_chunk(s: Scenario) -> LastChunk | None:
    """The prompt's last chunk priced in the sidebar's cost mode (None: no room for a chunk)."""
    return sim_last_chunk(s.cost_model(), s.decodes, s.context, s.prompt, s.budget)


@cached_figure(max_entries=64)
def worked_figure(pieces: pd.DataFrame, unit: str, look: Look) -> Figure:
    """One of the worked example's pictures to scale (ui.learn.worked, charts.worked)."""
    return to_scale(pieces, look, unit=unit)


# --- fidelity: the cost model against measured GPU timings ----------------------------------
@st.cache_resource(show_spinner=False)
def fidelity_report() -> dict:
    """sim.cost.validation.validate(): the report `python -m sim validate` prints (the same numbers)."""
    return validate()


@st.cache_resource(show_spinner=False)
def _fidelity_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per measured point and mode, measurements and model curves by TP)."""
    points = fidelity.validate_frame(fidelity_report())
    return points, fidelity.times_frame(points, fidelity.curves_frame())


@st.cache_resource(max_entries=8, show_spinner=False)
def fidelity_figures(look: Look) -> tuple[Figure, Figure]:
    """(measured vs predicted by tokens and TP, the parity plot beside the error by tokens)."""
    points, times = _fidelity_frames()
    return fidelity.time_vs_tokens(times, look), fidelity.accuracy(points, look)


@st.cache_data(max_entries=8, show_spinner=False)
def fidelity_specs(look: Look) -> tuple[dict, dict]:
    return tuple(figure.spec() for figure in fidelity_figures(look))


@cached_figure(max_entries=32)
def factors_figure(s: Scenario, key: str, look: Look) -> Figure:
    """The waterfall of one of the scenario's iterations (`priced_iterations`), calibrated `s`."""
    cost = priced_iterations(s)[key].cost
    return fidelity.factors_waterfall(fidelity.factors_frame(cost), look, width=CHART_WIDTH - 260)


def key_numbers(cards_u: list[words.Card], cards_c: list[words.Card], *, key: str) -> None:
    """The four numbers of the story: each lane's largest gap and the new request's TTFT, in one
    row of cards (container `key`)."""
    by_label = [{c.label: c for c in cards} for cards in (cards_u, cards_c)]
    with st.container(key=key):
        for col, (label, lane) in zip(st.columns(4), [(label, lane) for label in (words.GAP, words.TTFT)
                                                      for lane in ("unchunked", "chunked")]):
            card = by_label[lane == "chunked"].get(label)
            if card:
                col.metric(f"{label.removeprefix('New request ')} ({lane})", card.value,
                           help=card.help, border=True)
