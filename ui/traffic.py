"""Streamlit glue for the traffic pages (Traffic, Budget trade-off, Capacity, Memory): the workload
they share (its controls and an uploaded trace), cached runs, sweep points and capacity searches,
and their figures. Pages call these and write the words, except the engines' default budgets,
which the Budget trade-off and Roofline pages state in the same sentence (`engine_defaults_words`).

As in ui/runs.py, everything is keyed on plain inputs: the Scenario and the Traffic (frozen
dataclasses; an uploaded trace by its digest). Arguments whose names start with `_` (a workload,
traces) follow from the keyed ones and are not hashed. Runs, sweep points and capacity
searches are not behind cache decorators: they are estimated first and run within the page's
limits (ui/jobs.py, ui/work.py), with a progress bar a cache would record and replay, and kept in
stores bounded in bytes (ui/store.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import pandas as pd
import streamlit as st

from charts import budget_sweep as budget_charts
from charts import capacity as capacity_charts
from charts import memory as memory_charts
from charts import traffic as charts
from charts.figure import Figure
from charts.theme import Look
from sim.effort.estimate import Counts, token_times
from sim.errors import InputError
from sim.presets.hardware import Gpu
from sim.serving.engine import SimulationLimitError, Trace, simulate
from sim.serving.policies import Limits, get_policy
from sim.serving.workloads import Workload
from sim.studies.capacity import (
    MAX_RUNS,
    CapacityComparison,
    CapacityPoint,
    compare_capacity,
    compute_ceiling_qps,
    default_baseline_budget,
    rate_curve,
    rate_grid,
)
from sim.studies.stalls import STALL_S
from sim.studies.sweep import SweepPoint, engine_defaults, run_point

from . import widgets
from .controls import CONTROLS
from .jobs import Job, refuse_over_limit, run_alone, run_jobs, show_note
from .literal import literal
from .scenario import DECODE_OUTPUT, PROMPT_OUTPUT, Scenario, Traffic, traffic_from
from .store import RESULTS, TRACES
from .upload import trace_workload, upload_box
from .widgets import CHART_WIDTH
from .work import (
    BUTTON_DEADLINE_S,
    PAGE_TOKENS,
    RUN_ITERATIONS,
    RUN_TOKENS,
    Work,
    run_work,
    too_big,
    total,
)


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
        workload = trace_workload(upload) if upload else _generated(t)
    except InputError as e:
        what = f"the trace {literal(upload.name)}" if upload else "this workload"
        st.error(f"**Can't use {what}:** {literal(e, limit=None)}", icon=":material/error:")
        st.stop()
    if upload:
        st.caption(f"Trace {literal(upload.name)}: {len(workload):,} requests over "
                   f"{workload.arrival_s[-1] - workload.arrival_s[0]:,.4g} s (kept for the other "
                   "traffic pages until you remove it).")
    return t, workload


@st.cache_resource(max_entries=16, show_spinner=False)
def _generated(t: Traffic) -> Workload:
    return t.workload()


# --- runs ---------------------------------------------------------------------------------------
def stop_on(error: InputError, what: str, t: Traffic) -> None:
    """A failed run as a message, and the end of the page's run."""
    if isinstance(error, SimulationLimitError):
        st.error(f"**Can't {what}:** a run needs more than {RUN_ITERATIONS:,} iterations, the "
                 f"most a run here takes. Make it shorter: {smaller(t)}",
                 icon=":material/timer_off:")
    else:
        st.error(f"**Can't {what}:** {literal(error, limit=None)}")
    st.stop()


def smaller(t: Traffic, tokens: bool = False) -> str:
    """What makes this workload's runs shorter (`tokens`: keep fewer token times), in words."""
    fewer = {"burst": "fewer prompts in the burst, or fewer decoders in the sidebar",
             "poisson": "fewer requests or shorter outputs (the lengths)",
             "upload": "a trace with fewer requests or shorter outputs"}[t.kind]
    also = {"burst": ", a shorter prompt or a larger budget", "poisson": ", a higher rate or a "
            "larger budget", "upload": ", or a larger budget"}[t.kind]
    return f"{fewer}{'' if tokens else also}. `python -m sim` has none of these page limits."


def _refuse_if_too_big(jobs: list[Job], t: Traffic, what: str) -> None:
    """One run past a run's limits: a message naming it, and the end of the page's run."""
    for job in jobs:
        reason = too_big(job.estimate)
        if reason:
            st.error(f"**Can't {what}:** {job.label}: {reason}. Make it shorter: "
                     f"{smaller(t, tokens=job.estimate.tokens > RUN_TOKENS)}",
                     icon=":material/timer_off:")
            st.stop()


def runs(t: Traffic, s: Scenario, workload: Workload, policies, budget: int,
         partials: int | None = None) -> dict[str, Trace]:
    """{policy: trace} of the workload under each policy, within the page's limits (ui/work.py),
    or a message and the end of the page's run."""
    what = "simulate this workload"
    try:
        cost = s.cost_model()
        specs = [get_policy(p) for p in policies]
        jobs = [Job(("traffic", t, s, spec.name, budget, partials), spec.name,
                    run_work(workload, spec, cost, budget=budget, max_seqs=t.max_seqs),
                    partial(_simulate, workload, spec, cost, budget, t.max_seqs, partials))
                for spec in specs]
        _refuse_if_too_big(jobs, t, what)
        held = total(job.work for job in jobs).tokens
        if held > PAGE_TOKENS:
            st.error(f"**Can't {what}:** the {len(jobs)} policies' traces would keep {held:,} "
                     f"token times together (one per output token), more than the "
                     f"{PAGE_TOKENS:,} a page keeps. Fewer policies, or {smaller(t, tokens=True)}",
                     icon=":material/memory:")
            st.stop()
        traces = run_jobs(jobs, TRACES, what=what, change=smaller(t), key="run_traffic")
    except InputError as e:
        stop_on(e, what, t)
    return {job.label: traces[job.key] for job in jobs}


def _simulate(workload: Workload, spec, cost, budget: int, max_seqs: int,
              partials: int | None, cap: int, report) -> Trace:
    """The traffic pages' one call into the engine (a Job's run)."""
    return simulate(workload, spec, cost, budget=budget,
                    limits=Limits(max_seqs=max_seqs, max_iterations=cap, max_partial_prefills=partials))


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
        "gaps": charts.tail_chart(gaps, look, name="gaps", title="Time between tokens: the tail",
                                  x_title="gap between two tokens (ms, log scale)",
                                  threshold=STALL_S * 1e3, unit="ms"),
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
def sweep_points(t: Traffic, s: Scenario, workload: Workload, policy: str,
                 budgets: tuple[int, ...]) -> tuple[list[SweepPoint], dict[int, str]]:
    """(points, {budget left out: why}) within the page's limits, or a message and the end of
    the page's run. Each budget's point is kept on its own: a changed range runs only the new
    budgets."""
    what = "sweep this workload"
    try:
        cost = s.cost_model()
        spec = get_policy(policy)
        jobs = {b: Job(("sweep", t, s, policy, b), f"budget {b:,}",
                       run_work(workload, spec, cost, budget=b, max_seqs=t.max_seqs),
                       partial(_sweep_point, workload, spec, cost, b, t.max_seqs), keep_capped=True)
                for b in budgets}
        left_out = {b: why for b, job in jobs.items() if (why := too_big(job.estimate))}
        if len(left_out) == len(jobs):   # then the largest budget's reason is the one to fix
            _refuse_if_too_big([jobs[max(jobs)]], t, what)
        if left_out:
            what += (f" at {len(jobs) - len(left_out):,} budgets ({len(left_out):,} left out, too "
                     f"long for a run: {', '.join(f'{b:,}' for b in left_out)})")
        found = run_jobs([job for b, job in jobs.items() if b not in left_out], RESULTS,
                         what=what, change=smaller(t), key="run_sweep")
    except InputError as e:
        stop_on(e, what, t)
    points = {b: found[job.key] for b, job in jobs.items() if b not in left_out}
    left_out |= {b: too_big(jobs[b].estimate) or f"it needs more than {RUN_ITERATIONS:,} iterations"
                 for b, point in points.items() if point is None}
    return [p for p in points.values() if p is not None], left_out


def _sweep_point(workload: Workload, spec, cost, budget: int, max_seqs: int, cap: int,
                 report) -> SweepPoint:
    """One budget's run, summed up (a Job's run)."""
    return run_point(workload, spec, cost, budget, limits=Limits(max_seqs=max_seqs, max_iterations=cap))


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


def capacity_query(t: Traffic, s: Scenario, workload: Workload, tbt_slo_s: float,
                   delay_slo_s: float) -> CapacityQuery:
    """The sidebar's chunked policy at its budget against its unchunked one at vLLM V0's default
    budget for this workload (or the same budget, if the baseline chunks)."""
    baseline = get_policy(s.unchunked)
    return CapacityQuery(t.for_capacity(), s, s.chunked, s.budget, s.unchunked,
                         default_baseline_budget(baseline, s.budget, workload), tbt_slo_s,
                         delay_slo_s)


def stored_capacity(q: CapacityQuery) -> CapacityView | None:
    return RESULTS.get(("capacity", q))


def _capacity_job(q: CapacityQuery) -> Job:
    """The search and the curves of both policies as one job. Its estimate takes each policy's
    curve at its rates and MAX_RUNS search runs at half the compute ceiling (the search halves
    from the ceiling, then bisects)."""
    workload_at = q.traffic.poisson_at()
    cost = q.scenario.cost_model()
    ceiling = compute_ceiling_qps(workload_at(1.0), cost)
    rates = (*rate_grid(ceiling), *(ceiling / 2,) * MAX_RUNS)
    work = total(run_work(workload_at(rate), get_policy(policy), cost, budget=budget,
                          max_seqs=q.traffic.max_seqs)
                 for policy, budget in ((q.policy, q.budget), (q.baseline, q.baseline_budget))
                 for rate in rates)
    return Job(("capacity", q), "capacity", work, partial(_search, q))


def capacity_estimate(q: CapacityQuery) -> Work:
    """The search's estimated work, or a message and the end of the page's run when it is over
    the page's limits (a note above it when the last search was cancelled)."""
    what = "find the capacity"
    try:
        job = _capacity_job(q)
        reason = too_big(Work(Counts(runs=1, tokens=token_times(q.traffic.poisson_at()(1.0)))))
        if reason:
            st.error(f"**Can't {what}:** each run: {reason}. Make it shorter: "
                     f"{smaller(q.traffic, tokens=True)}", icon=":material/timer_off:")
            st.stop()
    except InputError as e:
        stop_on(e, what, q.traffic)
    refuse_over_limit(job.estimate, what, smaller(q.traffic))
    show_note("find_capacity")
    return job.estimate


def find_capacity(q: CapacityQuery) -> CapacityView:
    """Run the search and the curves with a progress bar and a cancel, and keep the result (a
    message and the end of the page's run when it fails or runs out of time)."""
    try:
        found = run_alone(_capacity_job(q), RESULTS, "find_capacity")
    except InputError as e:
        stop_on(e, "find the capacity", q.traffic)
    if found is None:
        st.error(f"**Stopped the search** after {BUTTON_DEADLINE_S:g} s, the most one click "
                 f"runs. Make it shorter: {smaller(q.traffic)}", icon=":material/timer_off:")
        st.stop()
    return found


def _search(q: CapacityQuery, cap: int, report) -> CapacityView:
    """compare_capacity, then both policies' curves (a Job's run)."""
    share = 0.6   # of the bar for the bisection; the curves take the rest
    workload_at = q.traffic.poisson_at()
    cost = q.scenario.cost_model()
    limits = dict(tbt_slo_s=q.tbt_slo_s, delay_slo_s=q.delay_slo_s,
                  limits=Limits(max_seqs=q.traffic.max_seqs, max_iterations=cap))
    comparison = compare_capacity(workload_at, cost, policy=get_policy(q.policy),
                                  budget=q.budget, baseline=get_policy(q.baseline),
                                  baseline_budget=q.baseline_budget,
                                  progress=lambda done, text: report(done * share, text), **limits)
    if comparison.policy.capped or comparison.baseline.capped:   # the page's cap: as any run's
        raise SimulationLimitError(f"a search run needed more than {cap:,} iterations", cap)
    rates = rate_grid(comparison.policy.ceiling_qps)
    curves = {}
    for i, result in enumerate((comparison.policy, comparison.baseline)):
        def ran(done: int, point: CapacityPoint, i=i, name=result.policy) -> None:
            report(share + (1 - share) * (i + done / len(rates)) / 2,
                   f"{name}: the curve at {point.qps:.3g} requests/s")
        curves[result.policy] = rate_curve(workload_at, get_policy(result.policy), cost, rates,
                                           budget=result.budget, progress=ran, **limits)
    return CapacityView(comparison, curves)


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
