"""The per-iteration CPU overhead as an uncertainty: a page's headline result replayed at low,
default and high overhead.

The overhead is the least certain figure in the cost model: one published profile (vLLM V0's
~4 ms per decode step, sim/cost/overhead.py) stands for every engine, and a user's server may
spend anything from almost nothing to over 10 ms per iteration on its CPU. A synchronous engine
adds it to every iteration; an overlapped one hides it behind every GPU step that is longer. So
each page that states a headline (Side by side's freeze and first token, Budget trade-off's
recommended budget, Capacity's ratio) can show it at LEVELS: none, the measured figure, 10 ms.

`strip(headline, cost)` is the one study function: `headline(cost)` computes a page's result
on a cost model and the strip evaluates it with the CPU time set to each level (each policy keeps
its own synchronous or overlapped rule). The headline functions below are the pages' results,
pure; the app runs the costly ones on request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

import numpy as np

from sim.cost.iteration import CostModel
from sim.cost.overhead import MEASURED_CPU_S
from sim.serving.engine import Trace
from sim.serving.metrics import request_times
from sim.serving.policies import Limits, PolicySpec
from sim.serving.run import Run
from sim.serving.workloads import Workload
from sim.studies.capacity import CapacityComparison, compare_capacity
from sim.studies.lanes import streams_running
from sim.studies.stalls import stalls
from sim.studies.sweep import SweepPoint, misses, recommend, run_point

T = TypeVar("T")

HIGH_S = 10e-3   # a heavy CPU share: Python scheduling of large batches, logprobs, structured output
LEVELS: tuple[tuple[str, float], ...] = (("none", 0.0), ("measured", MEASURED_CPU_S),
                                         ("high", HIGH_S))


@dataclass(frozen=True)
class Level(Generic[T]):
    name: str          # "none", "measured" or "high"
    cpu_s: float       # the CPU time per iteration it was computed with
    result: T


@dataclass(frozen=True)
class Strip(Generic[T]):
    """A headline at each overhead level, and the CPU time the page's own result uses."""
    levels: tuple[Level[T], ...]
    current_s: float


def strip(headline: Callable[[CostModel], T], cost: CostModel, *,
          known: T | None = None,
          progress: Callable[[int, str], None] | None = None) -> Strip[T]:
    """`headline` at every level of LEVELS, on `cost` with its CPU time set to the level's.
    `known`: the page's own result at `cost`'s CPU time, reused for the level it matches;
    `progress(levels done, name)` hears of each level computed."""
    levels = []
    for done, (name, cpu_s) in enumerate(LEVELS):
        if known is not None and cpu_s == cost.overhead_s:
            result = known
        else:
            result = headline(cost.with_overhead(cpu_s))
        levels.append(Level(name, cpu_s, result))
        if progress:
            progress(done + 1, name)
    return Strip(tuple(levels), cost.overhead_s)


# --- the pages' headlines -----------------------------------------------------------------------
@dataclass(frozen=True)
class LaneHeadline:
    """One lane of Side by side: the running streams' longest wait and the new request's TTFT,
    and whether the new request ran beside the streams at all (what the wait's words rest on)."""
    policy: str
    longest_wait_s: float
    ttft_s: float
    queue_s: float = 0.0              # the new request's arrival to its first iteration
    streams_done_first: bool = False  # every stream had its last token before that iteration


def lane_headline(trace: Trace) -> LaneHeadline:
    """One lane's headline from its run: the textbook scenario's new request is its first one that
    was not already streaming."""
    new = int(np.flatnonzero(~trace.prefilled)[0])
    times = request_times(trace)
    started = float(trace.arrival_s[new] + times.queue_s[new])
    return LaneHeadline(trace.policy, stalls(trace, streams=trace.prefilled).largest_gap_s,
                        float(times.ttft_s[new]), float(times.queue_s[new]),
                        bool(trace.prefilled.any()) and not streams_running(trace, times)(started))


def lanes_headline(lanes: Sequence[Run]) -> Callable[[CostModel], tuple[LaneHeadline, ...]]:
    """Side by side's headline: each lane's streams' longest wait and the new request's TTFT,
    on another cost model."""
    def headline(cost: CostModel) -> tuple[LaneHeadline, ...]:
        return tuple(lane_headline(replace(lane, cost=cost).simulate()) for lane in lanes)
    return headline


@dataclass(frozen=True)
class BudgetHeadline:
    """Budget trade-off's headline: the recipe's budget (None: none meets the TBT target), its
    p99 TBT and p50 TTFT, and the targets it misses (`sim.studies.sweep.misses`: none, and it is
    recommended outright)."""
    budget: int | None
    p99_tbt_s: float
    p50_ttft_s: float
    misses: tuple[str, ...] = ()


def budget_headline(run: Run, budgets: Sequence[int], tbt_slo_s: float, ttft_slo_s: float,
                    finished: Callable[[SweepPoint], None] | None = None,
                    ) -> Callable[[CostModel], BudgetHeadline]:
    """The sweep of `run` over `budgets` and Sarathi-Serve's recipe
    (`sim.studies.sweep.recommend`); `finished` hears of each budget's run (a caller's clock or
    progress bar)."""
    def headline(cost: CostModel) -> BudgetHeadline:
        points = []
        for budget in budgets:
            points.append(run_point(replace(run, cost=cost, budget=budget)))
            if finished:
                finished(points[-1])
        return recommended(points, tbt_slo_s, ttft_slo_s)
    return headline


def recommended(points: Sequence[SweepPoint], tbt_slo_s: float,
                ttft_slo_s: float) -> BudgetHeadline:
    """The sweep's recommendation (`sim.studies.sweep.recommend`), its two latencies and the
    targets it misses."""
    chosen, _ = recommend(points, tbt_slo_s, ttft_slo_s)
    pick = next((p for p in points if p.budget == chosen), None)
    if pick is None:
        return BudgetHeadline(None, float("nan"), float("nan"))
    return BudgetHeadline(chosen, pick.metrics.tbt_s.p99, pick.metrics.ttft_s.p50,
                          tuple(misses(pick, tbt_slo_s, ttft_slo_s)))


def capacity_headline(workload_at: Callable[[float], Workload], *, policy: PolicySpec,
                      budget: int, baseline: PolicySpec, baseline_budget: int, tbt_slo_s: float,
                      delay_slo_s: float, limits: Limits, may_start=None, finished=None,
                      baseline_limits: Limits | None = None,
                      ) -> Callable[[CostModel], CapacityComparison]:
    """Capacity's headline: both capacities and their ratio (`compare_capacity`, the baseline
    at `baseline_limits` where given); `may_start` and `finished` bound its runs as they bound
    the page's own search."""
    def headline(cost: CostModel) -> CapacityComparison:
        return compare_capacity(workload_at, cost, policy=policy, budget=budget,
                                baseline=baseline, baseline_budget=baseline_budget,
                                tbt_slo_s=tbt_slo_s, delay_slo_s=delay_slo_s, limits=limits,
                                may_start=may_start, finished=finished,
                                baseline_limits=baseline_limits)
    return headline
