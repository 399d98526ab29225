"""The Capacity page's search: the highest Poisson rate the sidebar's chunked policy and its
unchunked baseline sustain within the SLOs, estimated first, run on a click with a progress bar
and a cancel, kept (ui/shell/store.py), and drawn."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import streamlit as st

from charts import capacity as capacity_charts
from charts.figure import Figure
from charts.theme import Look
from sim.effort.estimate import Counts, token_times
from sim.errors import InputError
from sim.serving.engine import SimulationLimitError
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import Workload
from sim.studies.capacity import (
    MAX_RUNS,
    PAPER,
    SLO_PRESETS,
    CapacityComparison,
    CapacityPoint,
    compare_capacity,
    compute_ceiling_qps,
    default_baseline_budget,
    rate_curve,
    rate_grid,
)

from ..shell.cached_figure import cached_figure
from ..shell.jobs import Job, refuse_over_limit, run_alone, show_note
from ..shell.scenario import Scenario, Traffic
from ..shell.store import RESULTS
from ..shell.work import BUTTON_DEADLINE_S, Work, run_work, too_big, total
from .workload_box import smaller, stop_on


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

    def limits(self, policy: str) -> Limits:
        """`policy`'s runs' Limits: its engine's own max running requests (`Traffic.limits`)."""
        return self.traffic.limits(policy, self.scenario)


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
    work = total(run_work(Run(workload=workload_at(rate), policy=get_policy(policy), cost=cost,
                              budget=budget, limits=q.limits(policy)))
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
        stop_on(e, what, smaller(q.traffic))
    refuse_over_limit(job.estimate, what, smaller(q.traffic))
    show_note("find_capacity")
    return job.estimate


def find_capacity(q: CapacityQuery) -> CapacityView:
    """Run the search and the curves with a progress bar and a cancel, and keep the result (a
    message and the end of the page's run when it fails or runs out of time)."""
    try:
        found = run_alone(_capacity_job(q), RESULTS, "find_capacity")
    except InputError as e:
        stop_on(e, "find the capacity", smaller(q.traffic))
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
    slos = dict(tbt_slo_s=q.tbt_slo_s, delay_slo_s=q.delay_slo_s)

    def limits(policy: str) -> Limits:
        return replace(q.limits(policy), max_iterations=cap)
    comparison = compare_capacity(workload_at, cost, policy=get_policy(q.policy),
                                  budget=q.budget, baseline=get_policy(q.baseline),
                                  baseline_budget=q.baseline_budget,
                                  progress=lambda done, text: report(done * share, text),
                                  limits=limits(q.policy), baseline_limits=limits(q.baseline),
                                  **slos)
    if comparison.policy.capped or comparison.baseline.capped:   # the page's cap: as any run's
        raise SimulationLimitError(f"a search run needed more than {cap:,} iterations", cap)
    rates = rate_grid(comparison.policy.ceiling_qps)
    curves = {}
    for i, result in enumerate((comparison.policy, comparison.baseline)):
        def ran(done: int, point: CapacityPoint, i=i, name=result.policy) -> None:
            report(share + (1 - share) * (i + done / len(rates)) / 2,
                   f"{name}: the curve at {point.qps:.3g} requests/s")
        curves[result.policy] = rate_curve(workload_at, get_policy(result.policy), cost, rates,
                                           budget=result.budget, progress=ran,
                                           limits=limits(result.policy), **slos)
    return CapacityView(comparison, curves)


@cached_figure()
def figure(q: CapacityQuery, look: Look, _view: CapacityView) -> Figure:
    """Both policies' runs, p99 TBT and median delay against the rate, with their capacities."""
    return capacity_charts.capacity_chart(
        capacity_charts.capacity_frame(_view.comparison, _view.curves),
        capacity_charts.capacity_marks(_view.comparison), look, tbt_slo_ms=q.tbt_slo_s * 1e3,
        delay_slo_s=q.delay_slo_s)


def paper_words(preset: str) -> str:
    """The paper's capacity ratio for the SLO preset the page runs, with where the paper states
    it (the same figure the Fidelity page sets beside the lab's); for a custom SLO, that the paper
    gives none."""
    chosen = SLO_PRESETS.get(preset)
    if chosen is None:
        return ("The Sarathi-Serve paper states its ratios for its own SLOs (the presets), none for "
                "this one; a different simulator and workload give a different ratio anyway.")
    return (f"The {PAPER} reports **{chosen.paper.ratio:g}×** over vLLM for {chosen.label}, "
            f"against the vLLM of early 2024 on its workloads; it states it in its "
            f"{chosen.paper.where}. A different simulator and workload give a different ratio.")
