"""Streamlit glue for the traffic pages (Traffic, Budget trade-off, Capacity, Memory): the workload
they share (its controls and an uploaded trace), cached runs, sweep points and capacity searches,
and their figures. Pages call these and write the words, except the engines' default budgets,
which the Budget trade-off and Roofline pages state in the same sentence (`engine_defaults_words`).

As in app_ui, everything is keyed on plain inputs: the Scenario and the Traffic (frozen
dataclasses; an uploaded trace by its digest). Arguments whose names start with `_` (a workload,
traces) follow from the keyed ones and are not hashed. A capacity search reports progress while
it runs, so it is kept in an explicit store rather than behind a cache decorator (which would
record and replay the progress bar).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd
import streamlit as st

from charts import budget_sweep as budget_charts
from charts import capacity as capacity_charts
from charts import memory as memory_charts
from charts import traffic as charts
from charts.figure import Figure
from charts.theme import Look
from sim.errors import InputError
from sim.presets.hardware import Gpu
from sim.serving.engine import SimulationLimitError, Trace, simulate
from sim.serving.policies import Limits, get_policy
from sim.serving.trace_files import load_trace
from sim.serving.workloads import Workload
from sim.studies.capacity import (
    CapacityComparison,
    CapacityPoint,
    compare_capacity,
    default_baseline_budget,
    rate_curve,
    rate_grid,
)
from sim.studies.sweep import SweepPoint, engine_defaults, run_point

from . import widgets
from .controls import CONTROLS
from .scenario import DECODE_OUTPUT, PROMPT_OUTPUT, Scenario, Traffic, traffic_from
from .upload import plain, upload_box
from .widgets import CHART_WIDTH

MAX_ITERATIONS = 500_000   # per run (~2 s of engine time at worst); beyond this the page says so
CAPACITY_RESULTS = 16      # capacity searches kept (all sessions)














def traffic(s: Scenario, *, capacity: bool = False) -> tuple[Traffic, Workload]:
    """The workload controls in a box at the top of the page, and the workload they pick (or an
    error and the end of the page's run). `capacity`: Poisson only, without the rate (a capacity
    search sets it)."""
    with st.container(border=True):
        if capacity:
            kind = "poisson"
            st.markdown("**Workload**: Poisson arrivals; the search sets the rate.")
        else:
            kind = widgets.widget(CONTROLS["workload"], width=260)
        upload = None
        if kind == "burst":
            cols = st.columns([1, 3])
            widgets.widget(CONTROLS["burst"], cols[0])
            cols[1].caption(f"Each prompt is the sidebar's **{s.prompt:,} tokens** and emits "
                            f"{PROMPT_OUTPUT} tokens; the sidebar's **{s.decodes:,} "
                            f"decoders** ({s.context:,} tokens of context, "
                            f"{DECODE_OUTPUT} tokens still to come) stream meanwhile.")
        elif kind == "poisson":
            cols = iter(st.columns(6))
            for key in ("requests", *(() if capacity else ("qps",)), "lengths"):
                lengths = widgets.widget(CONTROLS[key], next(cols))
            for key in (() if lengths == "sharegpt" else ("plen", "olen")) + ("seed",):
                widgets.widget(CONTROLS[key], next(cols))
        else:
            upload = upload_box()
            if upload is None:
                st.info("Upload a trace to run it, or pick another workload.",
                        icon=":material/upload_file:")
                st.stop()
    t = traffic_from(st.session_state, upload.digest if upload else None)
    if capacity:
        t = replace(t, kind="poisson")
    try:
        workload = _trace_workload(t.trace, upload.data) if upload else _generated(t)
    except InputError as e:
        what = f"the trace {upload.name}" if upload else "this workload"
        st.error(f"**Can't use {plain(what)}:** {plain(e)}", icon=":material/error:")
        st.stop()
    if upload:
        st.caption(f"Trace {plain(upload.name)}: {len(workload):,} requests over "
                   f"{workload.arrival_s[-1] - workload.arrival_s[0]:,.4g} s (kept for the other "
                   "traffic pages until you remove it).")
    return t, workload


@st.cache_resource(max_entries=8, show_spinner=False)
def _trace_workload(digest: str, _data: bytes) -> Workload:
    return load_trace(_data)


@st.cache_resource(max_entries=16, show_spinner=False)
def _generated(t: Traffic) -> Workload:
    return t.workload()


# --- runs ---------------------------------------------------------------------------------------
@st.cache_resource(max_entries=64, show_spinner=False)
def _run(t: Traffic, s: Scenario, policy: str, budget: int, partials: int | None,
         _workload: Workload) -> Trace:
    return simulate(_workload, get_policy(policy), s.cost_model(), budget=budget,
                    limits=Limits(max_seqs=t.max_seqs, max_partial_prefills=partials,
                                  max_iterations=MAX_ITERATIONS))


def stop_on(error: InputError, what: str) -> None:
    """A failed run as a message, and the end of the page's run."""
    if isinstance(error, SimulationLimitError):
        st.error(f"**Can't {what}:** a run needs more than {MAX_ITERATIONS:,} iterations, the "
                 "most this page runs per run. Fewer requests, shorter outputs, a higher rate or "
                 "a larger budget shorten it; `python -m sim` has no such cap.")
    else:
        st.error(f"**Can't {what}:** {plain(error)}")
    st.stop()


def runs(t: Traffic, s: Scenario, workload: Workload, policies, budget: int,
         partials: int | None = None) -> dict[str, Trace]:
    """{policy: trace} of the workload under each policy, or an error message."""
    try:
        return {p: _run(t, s, p, budget, partials, workload) for p in policies}
    except InputError as e:
        stop_on(e, "simulate this workload")


def notes(traces: dict[str, Trace]) -> None:
    for name, trace in traces.items():
        for note in trace.notes:
            st.info(f"{name}: {note}", icon=":material/info:")


# --- figures ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class TrafficView:
    timeline: charts.TimelineFrames
    split: charts.Split
    table: pd.DataFrame    # the metrics table
    figures: dict[str, Figure]


@st.cache_resource(max_entries=16, show_spinner=False)
def traffic_view(t: Traffic, s: Scenario, policies: tuple[str, ...], look: Look,
                 _traces: dict[str, Trace]) -> TrafficView:
    timeline = charts.timeline_frame(_traces)
    split = charts.split_frame(_traces)
    ttft, gaps = charts.ttft_and_gaps(_traces)
    figures = {
        "timeline": charts.traffic_timeline(timeline, look, width=CHART_WIDTH),
        "ttft": charts.cdf_chart(ttft, look, name="ttft", title="Time to first token",
                                 x_title="TTFT (s, log scale)", log=True),
        "gaps": charts.cdf_chart(gaps, look, name="gaps", title="Time between tokens",
                                 x_title="gap between two tokens (ms, log scale)", log=True),
        "split": charts.split_chart(split, look, width=CHART_WIDTH),
    }
    return TrafficView(timeline, split, charts.metrics_frame(_traces), figures)


@st.cache_data(max_entries=16, show_spinner=False)
def traffic_specs(t: Traffic, s: Scenario, policies: tuple[str, ...], look: Look,
                  _traces: dict[str, Trace]) -> dict[str, dict]:
    view = traffic_view(t, s, policies, look, _traces)
    return {name: figure.spec() for name, figure in view.figures.items()}


def draw(specs: dict[str, dict], figures: dict[str, Figure], name: str, prefix: str) -> None:
    """One of a view's figures, with its downloads (files named `prefix-name`)."""
    widgets.chart(specs[name], lambda: figures[name], f"{prefix}-{name}")


# --- the budget sweep ---------------------------------------------------------------------------
@st.cache_resource(max_entries=256, show_spinner=False)
def _sweep_point(t: Traffic, s: Scenario, policy: str, budget: int,
                 _workload: Workload) -> SweepPoint | None:
    """One budget's run (None: it needs more iterations than the cap; kept, so a rerun does not
    try again)."""
    try:
        return run_point(_workload, get_policy(policy), s.cost_model(), budget,
                         limits=Limits(max_seqs=t.max_seqs, max_iterations=MAX_ITERATIONS))
    except SimulationLimitError:
        return None


def sweep_points(t: Traffic, s: Scenario, workload: Workload, policy: str,
                 budgets: tuple[int, ...]) -> tuple[list[SweepPoint], list[int]]:
    """(points, budgets skipped for the iteration cap), with a progress bar while it runs (each
    budget is cached on its own: a changed range runs only the new budgets)."""
    bar = st.progress(0.0, text="Running the sweep")
    points, skipped = [], []
    try:
        for i, budget in enumerate(budgets):
            point = _sweep_point(t, s, policy, budget, workload)
            (skipped.append(budget) if point is None else points.append(point))
            bar.progress((i + 1) / len(budgets), text=f"budget {budget:,} ({i + 1} of "
                                                       f"{len(budgets)})")
    except InputError as e:
        bar.empty()
        stop_on(e, "sweep this workload")
    bar.empty()
    return points, skipped


@st.cache_resource(max_entries=16, show_spinner=False)
def frontier_figure(t: Traffic, s: Scenario, policy: str, budgets: tuple[int, ...],
                    recommended: int | None, ttft_slo_s: float, tbt_slo_s: float, look: Look,
                    _points: list[SweepPoint]) -> Figure:
    frame = budget_charts.frontier_frame(_points, recommended, engine_defaults(s.gpu))
    return budget_charts.frontier_chart(frame, look, ttft_slo_s=ttft_slo_s, tbt_slo_ms=tbt_slo_s * 1e3,
                                 width=760)


@st.cache_data(max_entries=16, show_spinner=False)
def frontier_spec(t: Traffic, s: Scenario, policy: str, budgets: tuple[int, ...],
                  recommended: int | None, ttft_slo_s: float, tbt_slo_s: float, look: Look,
                  _points: list[SweepPoint]) -> dict:
    return frontier_figure(t, s, policy, budgets, recommended, ttft_slo_s, tbt_slo_s, look,
                           _points).spec()


def engine_defaults_words(gpu: Gpu, swept: tuple[int, int] | None = None) -> str:
    """The engines' default budgets on `gpu`, each with its rule and source, in one sentence
    (Markdown); `swept`: the (smallest, largest) budget of a sweep, to name a default outside it."""
    defaults = engine_defaults(gpu)
    outside = [d for d in defaults if swept and not swept[0] <= d.budget <= swept[1]]
    return (f"**Engine defaults** for the {gpu.name} ({gpu.memory_bytes / 1e9:,.4g} GB): "
            + " and ".join(f"{d.engine} `{d.flag}` **{d.budget:,}** ({d.rule}; {d.source})"
                           for d in defaults)
            + "".join(f"; {d.engine}'s {d.budget:,} is outside the swept range" for d in outside)
            + ". Neither knows your latency targets.")


# --- capacity -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CapacityQuery:
    """Everything a capacity search reads."""
    traffic: Traffic
    scenario: Scenario
    policy: str
    budget: int
    baseline: str
    baseline_budget: int
    tbt_slo_s: float
    delay_slo_s: float


@dataclass(frozen=True, eq=False)
class CapacityView:
    comparison: CapacityComparison
    curves: dict[str, tuple[CapacityPoint, ...]]


@st.cache_resource(show_spinner=False)
def _capacity_store() -> tuple[OrderedDict, threading.Lock]:
    return OrderedDict(), threading.Lock()


def capacity_query(t: Traffic, s: Scenario, workload: Workload, tbt_slo_s: float,
                   delay_slo_s: float) -> CapacityQuery:
    """The sidebar's chunked policy at its budget against its unchunked one at vLLM V0's default
    budget for this workload (or the same budget, if the baseline chunks)."""
    baseline = get_policy(s.unchunked)
    return CapacityQuery(t.for_capacity(), s, s.chunked, s.budget, s.unchunked,
                         default_baseline_budget(baseline, s.budget, workload), tbt_slo_s,
                         delay_slo_s)


def stored_capacity(q: CapacityQuery) -> CapacityView | None:
    store, lock = _capacity_store()
    with lock:
        if q in store:
            store.move_to_end(q)
        return store.get(q)


def find_capacity(q: CapacityQuery) -> CapacityView:
    """Run the search and the curves with a progress bar, and keep the result (an error message
    and the end of the page's run on failure)."""
    bar = st.progress(0.0, text="Searching")
    share = 0.6   # of the bar for the bisection; the curves take the rest

    def searched(fraction: float, text: str) -> None:
        bar.progress(min(1.0, fraction * share), text=text)

    workload_at = q.traffic.poisson_at()
    cost = q.scenario.cost_model()
    limits = dict(tbt_slo_s=q.tbt_slo_s, delay_slo_s=q.delay_slo_s,
                  limits=Limits(max_seqs=q.traffic.max_seqs, max_iterations=MAX_ITERATIONS))
    try:
        comparison = compare_capacity(workload_at, cost, policy=get_policy(q.policy),
                                      budget=q.budget, baseline=get_policy(q.baseline),
                                      baseline_budget=q.baseline_budget, progress=searched,
                                      **limits)
        rates = rate_grid(comparison.policy.ceiling_qps)
        curves = {}
        for i, result in enumerate((comparison.policy, comparison.baseline)):
            def ran(done: int, point: CapacityPoint, i=i, name=result.policy) -> None:
                bar.progress(share + (1 - share) * (i + done / len(rates)) / 2,
                             text=f"{name}: the curve at {point.qps:.3g} requests/s")
            curves[result.policy] = rate_curve(workload_at, get_policy(result.policy), cost, rates,
                                               budget=result.budget, progress=ran, **limits)
    except InputError as e:
        bar.empty()
        stop_on(e, "find the capacity")
    bar.empty()
    view = CapacityView(comparison, curves)
    store, lock = _capacity_store()
    with lock:
        store[q] = view
        while len(store) > CAPACITY_RESULTS:
            store.popitem(last=False)
    return view


@st.cache_resource(max_entries=16, show_spinner=False)
def capacity_figure(q: CapacityQuery, look: Look, _view: CapacityView) -> Figure:
    return capacity_charts.capacity_chart(capacity_charts.capacity_frame(_view.comparison, _view.curves),
                                 capacity_charts.capacity_marks(_view.comparison), look,
                                 tbt_slo_ms=q.tbt_slo_s * 1e3, delay_slo_s=q.delay_slo_s)


@st.cache_data(max_entries=16, show_spinner=False)
def capacity_spec(q: CapacityQuery, look: Look, _view: CapacityView) -> dict:
    return capacity_figure(q, look, _view).spec()


# --- memory -------------------------------------------------------------------------------------
@st.cache_resource(max_entries=16, show_spinner=False)
def kv_figure(t: Traffic, s: Scenario, policies: tuple[str, ...], partials: int | None,
              look: Look, _traces: dict[str, Trace]) -> Figure:
    cost = s.cost_model()
    capacity = next(iter(_traces.values())).kv_capacity_tokens
    return memory_charts.kv_chart(memory_charts.kv_frame(_traces, cost.kv_bytes_per_token), look,
                           capacity_tokens=capacity, width=CHART_WIDTH)


@st.cache_data(max_entries=16, show_spinner=False)
def kv_spec(t: Traffic, s: Scenario, policies: tuple[str, ...], partials: int | None,
            look: Look, _traces: dict[str, Trace]) -> dict:
    return kv_figure(t, s, policies, partials, look, _traces).spec()


def set_controls(**values) -> Callable[[], None]:
    """A button callback that sets controls, before they are drawn on the rerun. Only for
    controls drawn on the run with the button: Streamlit 1.67 keeps a value set for a widget that
    did not exist yet out of the page's link, so it would be lost on the next page."""
    def apply() -> None:
        for key, value in values.items():
            st.session_state[key] = value
    return apply
