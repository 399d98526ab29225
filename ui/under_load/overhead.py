"""The overhead strips of Side by side, Budget trade-off and Capacity: the page's headline again
with no, the measured and a high CPU time per iteration (sim/studies/overhead.py), as one job of
the page (ui/shell/jobs.py): at once when its estimate is small, else behind a button with a progress
bar and a cancel; kept, so coming back shows it at once. The page's own level is not rerun."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from charts import overhead as overhead_charts
from sim.cost.iteration import CostModel
from sim.serving.engine import SimulationLimitError, Trace
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import Workload
from sim.studies.capacity import MAX_RUNS, compute_ceiling_qps
from sim.studies.overhead import (
    LEVELS,
    budget_headline,
    capacity_headline,
    lane_headline,
    lanes_headline,
    recommended,
    strip,
)
from sim.studies.sweep import SweepPoint

from ..shell import widgets
from ..shell.jobs import Job, run_jobs
from ..shell.scenario import Scenario, Traffic
from ..shell.store import RESULTS
from ..shell.work import Work, run_work, total
from . import overhead_words as words
from .capacity import CapacityQuery, CapacityView
from .workload_box import smaller

WHAT = f"replay it at {' / '.join(f'{cpu_s * 1e3:g} ms' for _, cpu_s in LEVELS)} of CPU time"


def _other_levels(cost: CostModel) -> list[float]:
    """The levels the page's own numbers do not already give."""
    return [cpu_s for _, cpu_s in LEVELS if cpu_s != cost.overhead_s]


def _show(frame: pd.DataFrame, sentences: list[str]) -> None:
    widgets.table(frame)
    st.markdown("\n".join(f"- {sentence}" for sentence in sentences))


def _run_strip(key: tuple, label: str, work: Work, run, change: str, button: str):
    """The strip from its job (at once, or after the button `button`), or the end of the page."""
    job = Job(key, label, work, run)
    return run_jobs([job], RESULTS, what=WHAT, change=change, key=button)[key]


def _each_run(report, most: int, what: str):
    """A callback for each run of a strip's job: it moves the bar (on `most` runs at most) and,
    through `report`, stops the job once its deadline has passed, between two runs."""
    done = [0]

    def finished(_run) -> None:
        done[0] += 1
        report(min(1.0, done[0] / most), f"{what}: {done[0]:,} runs")
    return finished


def _each_level(report, what: str):
    """A callback for each level of a strip whose runs are few (two lanes a level)."""
    return lambda done, name: report(done / len(LEVELS), f"{what}: {name} overhead done")


# --- Side by side -----------------------------------------------------------------------------
def side_by_side(s: Scenario, unchunked: Trace, chunked: Trace) -> None:
    """Both lanes' longest wait and TTFT at each level."""
    st.markdown(words.INTRO)
    cost = s.cost_model()
    lanes = (s.lane(s.unchunked), s.lane(s.chunked))
    policies = tuple(lane.policy for lane in lanes)
    work = total(run_work(replace(lane, cost=cost.with_overhead(cpu_s)))
                 for lane in lanes for cpu_s in _other_levels(cost))

    def run(cap: int, report):
        headline = lanes_headline([lane.capped(cap) for lane in lanes])
        return strip(headline, cost, known=(lane_headline(unchunked), lane_headline(chunked)),
                     progress=_each_level(report, "the lanes"))
    found = _run_strip(("overhead-lanes", s), "both lanes at each CPU time", work, run,
                       "a larger budget or a shorter prompt in the sidebar", "overhead_lanes")
    names = ("unchunked", "chunked")
    _show(overhead_charts.lanes_frame(found, names, words.level_label),
          words.lanes_words(found, [(p.engine, p.overhead) for p in policies]))


# --- Budget trade-off -------------------------------------------------------------------------
def budget_tradeoff(t: Traffic, s: Scenario, workload: Workload, policy: str,
                    points: list[SweepPoint], tbt_slo_s: float, ttft_slo_s: float) -> None:
    """The recommended budget at each level, over the budgets the page's sweep ran."""
    st.markdown(words.INTRO)
    cost, spec = s.cost_model(), get_policy(policy)
    budgets = tuple(p.budget for p in points)
    sweep = Run(workload=workload, policy=spec, cost=cost, budget=s.budget,
                limits=t.limits(policy, s))
    work = total(run_work(replace(sweep, cost=cost.with_overhead(cpu_s), budget=b))
                 for b in budgets for cpu_s in _other_levels(cost))

    def run(cap: int, report):
        headline = budget_headline(sweep.capped(cap), budgets, tbt_slo_s, ttft_slo_s,
                                   finished=_each_run(report, len(budgets) * 2, "the sweep"))
        return strip(headline, cost, known=recommended(points, tbt_slo_s, ttft_slo_s))
    found = _run_strip(("overhead-sweep", t, s, policy, budgets, tbt_slo_s, ttft_slo_s),
                       "the sweep at each CPU time", work, run, smaller(t), "overhead_sweep")
    _show(overhead_charts.budget_frame(found, words.level_label),
          [words.budget_words(found, spec.engine, spec.overhead)])


# --- Capacity ---------------------------------------------------------------------------------
def capacity(q: CapacityQuery, view: CapacityView) -> None:
    """Both capacities and the ratio at each level: two more searches per level, on request."""
    st.markdown(words.INTRO)
    workload_at = q.traffic.poisson_at()
    cost = q.scenario.cost_model()
    policies = ((get_policy(q.policy), q.budget), (get_policy(q.baseline), q.baseline_budget))
    # as the page's own search is estimated: MAX_RUNS runs per policy at half the compute ceiling
    work = total([run_work(Run(workload=workload_at(compute_ceiling_qps(workload_at(1.0), other) / 2),
                               policy=spec, cost=other, budget=budget, limits=q.limits(spec.name)))
                  for other in [cost.with_overhead(cpu_s) for cpu_s in _other_levels(cost)]
                  for spec, budget in policies] * MAX_RUNS)

    def run(cap: int, report):
        def limits(policy: str) -> Limits:
            return replace(q.limits(policy), max_iterations=cap)
        headline = capacity_headline(
            workload_at, policy=policies[0][0], budget=q.budget, baseline=policies[1][0],
            baseline_budget=q.baseline_budget, tbt_slo_s=q.tbt_slo_s,
            delay_slo_s=q.delay_slo_s, limits=limits(q.policy),
            baseline_limits=limits(q.baseline),
            finished=_each_run(report, 2 * 2 * MAX_RUNS, "the searches"))
        found = strip(headline, cost, known=view.comparison)
        if any(level.result.policy.capped or level.result.baseline.capped
               for level in found.levels):
            raise SimulationLimitError(f"a search run needed more than {cap:,} iterations", cap)
        return found
    found = _run_strip(("overhead-capacity", q), "both searches at each CPU time", work, run,
                       smaller(q.traffic), "overhead_capacity")
    _show(overhead_charts.capacity_frame(found, words.level_label),
          [words.capacity_words(found)])
