"""Streamlit glue shared by app.py and the pages: the controls as widgets, cached calls into `sim`
and `charts`, and a chart with its downloads. Pages call these and write the words.

Every simulation and figure is cached, keyed on plain inputs (the Scenario dataclass holds frozen
Gpu and Model dataclasses), so a rerun that changes nothing costs nothing and a changed control
recomputes only what depends on it. Traces, frames and figures are only ever read, so they are
cached as resources (shared, never copied: a trace with a million tokens would cost more to
unpickle on every rerun than to use); small results and the specs handed to the browser are
cached as data.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

import app_state
from app_state import CONTROLS, CUSTOM, Control, Scenario
from charts import export, fidelity
from charts.figure import Figure
from charts.player import player_html, show_player
from charts.theme import Look
from charts.timeline import CLOCK
from charts.views import (FOCUS_MARGIN, BudgetPlan, Timeline, budget_plan, roofline_figures,
                          timeline)
from sim.budget import ScenarioIteration, scenario_iterations
from sim.engine import SimulationLimitError, Trace, simulate
from sim.errors import InputError
from sim.fidelity import validate
from sim.hardware import GPUS
from sim.models import MODELS
from sim.policies import get_policy
from sim.units import fmt_seconds
from sim.worked_example import WorkedExample, worked_example

MAX_ITERATIONS = 50_000   # any input finishes in bounded time (< 1 s); beyond this the app says so
CHART_WIDTH = 900
LINK_NOTES = "_link_notes"


# --- controls -------------------------------------------------------------------------------
def apply_link_corrections() -> None:
    """On a session's first run, replace out-of-range or unreadable values from the link by the
    nearest valid ones (before the widgets exist, so they start there) and keep the notes."""
    if LINK_NOTES in st.session_state:
        return
    corrections, notes = app_state.from_query({key: st.query_params.get_all(key)
                                               for key in st.query_params})
    for key, value in corrections.items():
        st.session_state[key] = value
        _forget_link_value(key)
    st.session_state[LINK_NOTES] = notes


def _forget_link_value(key: str) -> None:
    """Drop a corrected value from the link, so the widget starts from the correction; the bound
    widget then writes that into the URL. Streamlit 1.67 seeds a bound widget from the link as it
    was loaded, even over session state, and its integer parser raises OverflowError on `inf` and
    truncates 12.7 to 12 (where the note says 13); that copy of the link has no public API."""
    del st.query_params[key]
    ctx = get_script_run_ctx()
    if ctx is not None:
        ctx.session_state._state.query_params._initial_query_params.pop(key, None)


def show_link_notes() -> None:
    notes = st.session_state.get(LINK_NOTES) or []
    if not notes:
        return
    st.warning("Some values in the link were out of range or unreadable:\n\n"
               + "\n".join(f"- {note}" for note in notes), icon=":material/link_off:")
    if st.button("Dismiss", key="dismiss_link_notes"):
        st.session_state[LINK_NOTES] = []
        st.rerun()


def widget(control: Control, where=st, width: int | str = "stretch"):
    """The widget for one control, bound to its URL key."""
    common = dict(key=control.key, help=control.help or None, bind="query-params", width=width)
    if control.kind == "int":
        return where.number_input(control.label, min_value=int(control.low),
                                  max_value=int(control.high), value=int(control.default),
                                  step=int(control.step), **common)
    if control.kind == "float":
        return where.number_input(control.label, min_value=float(control.low),
                                  max_value=float(control.high), value=float(control.default),
                                  step=float(control.step), format="%g", **common)
    if control.kind == "bool":
        return where.toggle(control.label, value=bool(control.default), **common)
    if control.kind == "multi":
        return where.multiselect(control.label, control.options, default=list(control.default),
                                 **common)
    return where.selectbox(control.label, control.options,
                           index=control.options.index(control.default), **common)


def _preset_or_custom(picker: Control, custom_fields, describe) -> None:
    """A preset picker: its fields when "custom" is picked, else the preset's figures and source."""
    choice = widget(picker)
    if choice == CUSTOM:
        for control in custom_fields:
            widget(control)
    else:
        st.caption(describe(choice))


def sidebar() -> None:
    """The shared controls. Custom GPU and model fields appear only when picked."""
    with st.sidebar:
        st.subheader("Scenario")
        for control in app_state.SCENARIO:
            widget(control)
        st.subheader("Hardware and cost")
        _preset_or_custom(CONTROLS["gpu"], app_state.CUSTOM_GPU, lambda g: (
            f"{GPUS[g].name}: {GPUS[g].peak_flops / 1e12:,.4g} TFLOP/s **dense BF16, no "
            f"sparsity**, {GPUS[g].bandwidth / 1e12:,.4g} TB/s, {GPUS[g].memory_bytes / 1e9:,.4g} "
            f"GB. Source: {GPUS[g].source}."))
        _preset_or_custom(CONTROLS["model"], app_state.CUSTOM_MODEL, lambda m: (
            f"{MODELS[m].name}: {MODELS[m].params / 1e9:,.3g}B params, {MODELS[m].layers} layers, "
            f"{MODELS[m].kv_heads} KV heads × {MODELS[m].head_dim}. Source: {MODELS[m].source}."))
        tp = widget(CONTROLS["tp"])
        if tp > 1:
            st.caption(f"Each number is per GPU: 1/{tp} of the weights, FLOPs and KV cache each "
                       "(KV heads fewer than tp are copied), plus two all-reduces of the batch's "
                       "activations per layer, priced from the GPU's link preset.")
        widget(CONTROLS["mode"])
        st.caption("**simple** (default) is seed 001's own arithmetic, so the defaults show its "
                   "numbers exactly (327.7 ms, 16 × 23.04 ms = 368.6 ms). **roofline** adds "
                   "attention, the decoders' KV reads and the LM head (at the defaults the decode step "
                   "grows from 5.333 ms to 16.3 ms: 31 GiB of KV); **calibrated** runs that work "
                   "at what real kernels achieve.")
        st.subheader("Compare")
        for control in app_state.POLICY:
            widget(control)
        st.subheader("Display")
        widget(CONTROLS["presenter"])
        st.caption("Every control is in the page's link: copy it to share this exact view. "
                   "Light or dark: the app menu (⋮ → Settings).")


def look() -> Look:
    return Look(presenter=bool(st.session_state.get("presenter", False)),
                dark=st.context.theme.type == "dark")


def presenter_css() -> None:
    """Presenter mode scales the whole page, not just the charts."""
    if st.session_state.get("presenter"):
        st.html("<style>html { font-size: 125%; }</style>")


def scenario() -> Scenario:
    """The current scenario, or an error message and the end of this page's run."""
    try:
        return app_state.scenario_from(st.session_state)
    except InputError as e:
        st.error(f"**Can't build this scenario:** {e}")
        st.stop()


# --- cached computations --------------------------------------------------------------------
@st.cache_resource(max_entries=64, show_spinner=False)
def _lane(s: Scenario, policy: str) -> Trace:
    return simulate(s.workload(), get_policy(policy), s.cost_model(), budget=s.budget,
                    max_seqs=s.max_seqs, max_iterations=MAX_ITERATIONS)


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
        st.error(f"**Can't simulate this scenario:** {traces}")
        st.stop()
    return traces


def comparison(s: Scenario) -> Scenario | None:
    """The compare toggle: the scenario in the mode whose numbers it adds (`s.compare_mode`), or
    None when it is off or that mode refuses this scenario (said in a warning, e.g. the
    calibrated mode on the illustrative GPU)."""
    if not widget(app_state.COMPARE, width="content"):
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
def lane_cards(s: Scenario, policy: str) -> list[app_state.Card]:
    return app_state.lane_cards(_lane(s, policy), s.mode, s.tp)


@st.cache_resource(max_entries=32, show_spinner=False)
def _timeline(s: Scenario, window: str) -> Timeline:
    return timeline(_lane(s, s.unchunked), _lane(s, s.chunked), window)


@st.cache_resource(max_entries=32, show_spinner=False)
def timeline_figure(s: Scenario, look: Look, window: str, width: int = CHART_WIDTH) -> Figure:
    return _timeline(s, window).figure(look, width)


@st.cache_data(max_entries=32, show_spinner=False)
def player_page(s: Scenario, look: Look, window: str, pace_ms_per_s: float, height: int) -> str:
    """The player's HTML (a string: cheap to cache as data)."""
    tl = _timeline(s, window)
    return player_html(timeline_figure(s, look, window).spec(), clock=CLOCK, t_max=tl.t_max,
                       boundaries=tl.boundaries, height=height, dark=look.dark,
                       ms_per_second=pace_ms_per_s)


@st.cache_resource(max_entries=32, show_spinner=False)
def plan(s: Scenario, tpot_s: float) -> BudgetPlan:
    """The scenario's iterations priced and the budgets worth knowing (charts.views.budget_plan)."""
    return budget_plan(s.cost_model(), s.decodes, s.context, s.prompt, s.budget, tpot_s)


@st.cache_resource(max_entries=32, show_spinner=False)
def roofline_view(s: Scenario, tpot_s: float, look: Look):
    """(plan, roofline Figure, curve Figure) for the roofline page."""
    p = plan(s, tpot_s)
    return (p, *roofline_figures(s.cost_model(), p, s.decodes, s.context, s.prompt, look))


@st.cache_data(max_entries=32, show_spinner=False)
def roofline_specs(s: Scenario, tpot_s: float, look: Look) -> tuple[dict, dict]:
    _, roof, curve = roofline_view(s, tpot_s, look)
    return roof.spec(), curve.spec()


@st.cache_data(max_entries=32, show_spinner=False)
def priced_iterations(s: Scenario) -> dict[str, ScenarioIteration]:
    """The scenario's iterations priced alone: decode-only, chunk, fused, whole prompt."""
    return {it.key: it for it in scenario_iterations(s.cost_model(), s.decodes, s.context,
                                                     s.prompt, s.budget)}


@st.cache_data(max_entries=32, show_spinner=False)
def worked(s: Scenario, second_budget: int) -> WorkedExample:
    return worked_example(**s.worked_example_inputs(second_budget))


# --- fidelity: the cost model against measured GPU timings ----------------------------------
@st.cache_resource(show_spinner=False)
def fidelity_report() -> dict:
    """sim.fidelity.validate(): the report `python -m sim validate` prints (the same numbers)."""
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


@st.cache_resource(max_entries=32, show_spinner=False)
def factors_figure(s: Scenario, key: str, look: Look) -> Figure:
    """The waterfall of one of the scenario's iterations (`priced_iterations`), calibrated `s`."""
    cost = priced_iterations(s)[key].cost
    return fidelity.factors_waterfall(fidelity.factors_frame(cost), look, width=CHART_WIDTH - 260)


@st.cache_data(max_entries=32, show_spinner=False)
def factors_spec(s: Scenario, key: str, look: Look) -> dict:
    return factors_figure(s, key, look).spec()


def steps_frame(steps) -> pd.DataFrame:
    """sim Steps (worked example, memory budget) as a table: what, formula, the numbers
    substituted, the result with its unit."""
    return pd.DataFrame([{"step": x.title, "formula": x.formula, "numbers substituted": x.substituted,
                          "result": x.display} for x in steps])


# --- charts and their downloads -------------------------------------------------------------
def chart(spec: dict, figure: Callable[[], Figure], name: str) -> None:
    """Draw a spec, with PNG, SVG, CSV and JSON downloads of the figure it came from."""
    st.vega_lite_chart(spec, theme=None, width="content")
    downloads(figure, name)


def player(s: Scenario, look: Look, window: str, pace_ms_per_s: float, name: str) -> None:
    """The side-by-side timeline, animated in the browser by one clock (charts.player), with the
    same downloads as a static chart."""
    tl = _timeline(s, window)
    rows = sum(len(lane.streams.stream.unique()) for lane in tl.lanes)
    height = (len(tl.lanes) * (330 if look.presenter else 250)
              + rows * (30 if look.presenter else 20) + 110)
    show_player(player_page(s, look, window, float(pace_ms_per_s), height), height)
    timeline_notes(s, window)
    downloads(lambda: timeline_figure(s, look, window), name)


def timeline_notes(s: Scenario, window: str) -> None:
    """Say what the time axis shows: the window, and time bins rather than single iterations."""
    tl = _timeline(s, window)
    run_end = max(float(trace.end_s[-1]) for trace in lanes(s))
    if tl.t_max < run_end:
        st.caption(f"Time axis: the first {fmt_seconds(tl.t_max)} of a {fmt_seconds(run_end)} run "
                   f"(until {FOCUS_MARGIN:g} × the later first token of the new request); pick *Time axis: run* "
                   "to see it all. The metrics cover the whole run.")
    for lane, trace in zip(tl.lanes, lanes(s)):
        if lane.bin_ms is not None:
            st.caption(f"{lane.title}: {trace.iterations:,} iterations drawn as "
                       f"{len(lane.iterations):,} bars (consecutive iterations merged into time bins "
                       f"of {lane.bin_ms:,.3g} ms; an iteration longer than a bin keeps its own bar), "
                       "to keep the page light. Every metric uses every iteration.")


def downloads(figure: Callable[[], Figure], name: str) -> None:
    """Files are made only when a button is clicked (vl-convert takes a few hundred ms)."""
    cols = st.columns(4, gap="small", width=520)
    files = (("PNG", lambda: export.png(figure()), "png", "image/png"),
             ("SVG", lambda: export.svg(figure()), "svg", "image/svg+xml"),
             ("CSV", lambda: figure().csv(), "csv", "text/csv"),
             ("JSON", lambda: figure().json(), "json", "application/json"))
    for col, (label, data, ext, mime) in zip(cols, files):
        col.download_button(label, data, file_name=f"{name}.{ext}", mime=mime, on_click="ignore",
                            icon=":material/download:", key=f"download_{name}_{ext}")
