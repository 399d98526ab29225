"""The Budget trade-off page's sweep: one workload at many token budgets within the page's
limits (each budget's point kept on its own), its frontier figure, and the engines' default
budgets in words (the Roofline page states them too)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from charts import budget_sweep as budget_charts
from charts.figure import Figure
from charts.theme import Look
from sim.errors import InputError
from sim.presets.hardware import Gpu
from sim.serving.policies import get_policy
from sim.serving.run import Run
from sim.serving.workloads import Workload
from sim.studies.sweep import SweepPoint, engine_defaults, run_point

from ..shell.cached_figure import cached_figure
from ..shell.jobs import Job, run_jobs
from ..shell.scenario import Scenario, Traffic
from ..shell.store import RESULTS
from ..shell.work import RUN_ITERATIONS, run_work, too_big
from .workload_box import refuse_if_too_big, smaller, stop_on


def sweep_points(t: Traffic, s: Scenario, workload: Workload, policy: str,
                 budgets: tuple[int, ...]) -> tuple[list[SweepPoint], dict[int, str]]:
    """(points, {budget left out: why}) within the page's limits, or a message and the end of
    the page's run. Each budget's point is kept on its own: a changed range runs only the new
    budgets."""
    what = "sweep this workload"
    try:
        lane = Run(workload=workload, policy=get_policy(policy), cost=s.cost_model(),
                   budget=s.budget, limits=t.limits(policy, s))
        points = {b: replace(lane, budget=b) for b in budgets}
        jobs = {b: Job(("sweep", run), f"budget {b:,}", run_work(run),
                       partial(_sweep_point, run), keep_capped=True)
                for b, run in points.items()}
        left_out = {b: why for b, job in jobs.items() if (why := too_big(job.estimate))}
        if len(left_out) == len(jobs):   # then the largest budget's reason is the one to fix
            refuse_if_too_big([jobs[max(jobs)]], what, partial(smaller, t))
        if left_out:
            what += (f" at {len(jobs) - len(left_out):,} budgets ({len(left_out):,} left out, too "
                     f"long for a run: {', '.join(f'{b:,}' for b in left_out)})")
        found = run_jobs([job for b, job in jobs.items() if b not in left_out], RESULTS,
                         what=what, change=smaller(t), key="run_sweep")
    except InputError as e:
        stop_on(e, what, smaller(t))
    points = {b: found[job.key] for b, job in jobs.items() if b not in left_out}
    left_out |= {b: too_big(jobs[b].estimate) or f"it needs more than {RUN_ITERATIONS:,} iterations"
                 for b, point in points.items() if point is None}
    return [p for p in points.values() if p is not None], left_out


def _sweep_point(run: Run, cap: int, report) -> SweepPoint:
    """One budget's run, summed up (a Job's run)."""
    return run_point(run.capped(cap))


@cached_figure()
def frontier(t: Traffic, s: Scenario, policy: str, budgets: tuple[int, ...],
             recommended: int | None, ttft_slo_s: float, tbt_slo_s: float, look: Look,
             _points: list[SweepPoint]) -> Figure:
    """The sweep's points, p50 TTFT against p99 TBT, with the targets and the engines' defaults."""
    frame = budget_charts.frontier_frame(_points, recommended, engine_defaults(s.gpu))
    return budget_charts.frontier_chart(frame, look, ttft_slo_s=ttft_slo_s,
                                        tbt_slo_ms=tbt_slo_s * 1e3, width=760)


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
