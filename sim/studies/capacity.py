"""Capacity: the highest Poisson request rate a configuration sustains within its SLOs.

Sarathi-Serve's definition (arXiv 2403.02310, section 5): the highest QPS at which p99 TBT meets
the SLO and the median scheduling delay (arrival -> first scheduled, `RequestTimes.queue_s`) is at
most 2 s. Past capacity the queue grows without bound, and the median delay is what catches it.

The search is a bisection over QPS on one seeded workload (the same exponential draws scaled to
each rate, so neighbouring rates differ only in their spacing). It starts at the compute ceiling
(requests / the compute time of all their FLOPs), which no schedule can sustain for long; it
halves the rate until one passes, then bisects until the bracket is within `rel_tol`. Every run
has an iteration cap and the number of runs is capped, so any input finishes in bounded time; a run
that meets its iteration cap ends the search, which reports the best rate it proved so far (the
runs before it are kept, not thrown away); asked before each run (`may_start`, a callback such
as sim/effort/caps.py's `RunAccount.may_start`), the search also stops when the caller says no,
and it never tries a rate so low that the arrivals spread beyond MAX_ARRIVAL_S (116 days, where
float64 arrival times lose the precision of an iteration). A search a cap ends early (the runs,
the caller's budget, a run's iterations) says so in `cut_short`; one that proved no rate by then
has an undefined capacity (`undefined`): below the lowest rate tried, not known to be 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from sim.cost.iteration import CostModel, attended_pairs
from sim.errors import InputError, check_number
from sim.serving.disaggregated import round_robin_shares
from sim.serving.engine import SimulationLimitError, Trace
from sim.serving.metrics import Percentiles, median_scheduling_delay, request_times, token_gaps
from sim.serving.pipeline import Pipeline, StageFigures, stage_costs
from sim.serving.policies import Limits, PolicySpec, unchunked_budget
from sim.serving.run import Run
from sim.serving.trace_files import MAX_ARRIVAL_S
from sim.serving.workloads import Workload
from sim.units import fmt_counted, fmt_seconds

DELAY_SLO_S = 2.0          # Sarathi-Serve: median scheduling delay <= 2 s
MAX_RUNS = 14              # per policy: halvings from the ceiling plus bisection steps
REL_TOL = 0.02             # stop when (hi - lo) / hi <= 2%
MAX_ITERATIONS = 1_000_000  # per run (~4 s of engine time at worst)
CAPACITY_LIMITS = Limits(max_iterations=MAX_ITERATIONS)
CURVE_POINTS = 8           # rates on a curve: 1/8, 2/8, ... of the compute ceiling


PAPER = "Sarathi-Serve paper (arXiv 2403.02310)"


@dataclass(frozen=True)
class PaperRatio:
    """The capacity ratio Sarathi-Serve / vLLM the paper states for one SLO, and where."""
    ratio: float
    where: str     # the paper's section (or abstract) that states it


@dataclass(frozen=True)
class SloPreset:
    label: str
    model: str
    tbt_slo_s: float
    paper: PaperRatio   # the one figure for this SLO: the Capacity and Fidelity pages both read it


# Sarathi-Serve's P99 TBT SLOs (arXiv 2403.02310, section 5): strict = 5x and relaxed
# = 25x a decode iteration of batch 32 at 4k context without prefill interference; each with the
# capacity ratio over vLLM the paper states for it (docs/sources.md, "Sarathi-Serve (OSDI 2024)").
SLO_PRESETS: dict[str, SloPreset] = {
    "mistral-7b-strict": SloPreset("Mistral-7B, strict (P99 TBT 0.1 s)", "mistral-7b", 0.1,
                                   PaperRatio(3.5, "section 5.2 (strict SLO)")),
    "mistral-7b-relaxed": SloPreset(
        "Mistral-7B, relaxed (P99 TBT 0.5 s)", "mistral-7b", 0.5,
        PaperRatio(2.6, "abstract: 'up to 2.6x' for Mistral-7B, no SLO named; set beside the "
                        "relaxed setup, the one section 5.2 does not give")),
    "yi-34b-strict": SloPreset(
        "Yi-34B, strict (P99 TBT 0.2 s)", "yi-34b", 0.2,
        PaperRatio(3.7, "abstract and section 5.1: 'up to 3.7x' over vLLM for Yi-34B on two "
                        "A100s")),
    "yi-34b-relaxed": SloPreset("Yi-34B, relaxed (P99 TBT 1 s)", "yi-34b", 1.0,
                                PaperRatio(1.65, "section 5.1 (relaxed SLO)")),
}


def get_slo_preset(name: str) -> SloPreset:
    try:
        return SLO_PRESETS[name]
    except KeyError:
        raise InputError(f"unknown SLO preset {name!r}; choose one of "
                         f"{', '.join(SLO_PRESETS)}") from None


@dataclass(frozen=True)
class CapacityPoint:
    qps: float
    p99_tbt_s: float
    median_delay_s: float
    sustained: bool
    slo_attainment: float | None = None   # goodput's criterion: the share meeting TTFT and TPOT
    stage_figures: StageFigures | None = None  # a pipelined run's stages and bubble


@dataclass(frozen=True)
class CapacityResult:
    policy: str
    budget: int
    capacity_qps: float            # the highest rate found that meets both SLOs (0: none did)
    failed_qps: float | None       # the lowest rate found that does not (None: none failed)
    ceiling_qps: float             # the compute ceiling the search starts from
    points: tuple[CapacityPoint, ...]   # every rate evaluated, ascending
    reason: str
    capped: bool = False           # a run met the iteration cap, which ended the search
    cut_short: str = ""            # how a cap ended the search early ('' when it ran its course)
    stopped: SearchStop | None = None   # why it ended before its tolerance (None: it did not)

    @property
    def undefined(self) -> bool:
        """No rate met the SLOs before a cap ended the search: the capacity is not known (0 is
        only its floor)."""
        return self.capacity_qps == 0 and bool(self.cut_short)


    def cut_short_words(self) -> str:
        """What a cap that ended the search early leaves of the capacity ('' when none did)."""
        if not self.cut_short:
            return ""
        if self.undefined:
            return (f"{self.policy}: {self.cut_short}, before any rate tried met the SLOs; its "
                    "capacity is undefined")
        return (f"{self.policy}: {self.cut_short}, so its capacity, {self.capacity_qps:.3g} QPS, "
                "is the best rate proved by then (a lower bound)")


@dataclass(frozen=True)
class CapacityComparison:
    policy: CapacityResult
    baseline: CapacityResult
    ratio: float | None            # policy / baseline capacity (None: the baseline's is 0, or
                                   # either is undefined)

    @property
    def why_no_ratio(self) -> str:
        """Why `ratio` is None, in a few words."""
        unknown = [r.policy for r in (self.policy, self.baseline) if r.undefined]
        return (f"{' and '.join(unknown)}: capacity undefined" if unknown else
                "the baseline sustains no rate tried")


def default_baseline_budget(baseline: PolicySpec, budget: int, workload: Workload) -> int:
    """The budget a baseline runs at unless one is given: the compared policy's `budget` when the
    baseline chunks too; for an unchunked one, vLLM V0's max(max_model_len, 2048), taking the
    longest request (prompt + output) as max_model_len, the smallest that serves this workload."""
    if baseline.chunked:
        return budget
    return unchunked_budget(workload)


def compute_ceiling_qps(workload: Workload, cost: CostModel,
                        pipeline: Pipeline | None = None) -> float:
    """Requests / the compute time of all their work: each request's prompt as one chunk, then
    output - 1 decode tokens on a growing context, one LM-head row per output token. In the cost
    model FLOPs add up across a batch, so no schedule can serve them faster on average: a true
    upper bound on the sustainable rate. With `pipeline`, each stage computes its layers of that
    work (the LM head on the last) while the others compute theirs: requests / the busiest
    stage's compute time."""
    window = cost.model.sliding_window
    prompt = workload.prompt.astype(np.float64)
    decodes = workload.output - 1.0
    attended = attended_pairs(0, prompt, window) + attended_pairs(prompt, decodes, window)
    tokens, pairs = float(np.sum(prompt + decodes)), float(np.sum(attended))
    costs = stage_costs(cost, pipeline)
    last = len(costs) - 1
    compute_s = max(c.time(tokens, pairs, 0.0, int(np.sum(workload.output)) if s == last else 0)[0]
                    for s, c in enumerate(costs))
    return len(workload) / compute_s


def evaluate(qps: float, workload: Workload, policy: PolicySpec, cost: CostModel, *, budget: int,
             tbt_slo_s: float, delay_slo_s: float = DELAY_SLO_S,
             limits: Limits = CAPACITY_LIMITS) -> CapacityPoint:
    """Run `workload` (generated at `qps`) and check Sarathi-Serve's two conditions."""
    run = Run(workload=workload, policy=policy, cost=cost, budget=budget, limits=limits)
    return _evaluate(qps, run, tbt_slo_s=tbt_slo_s, delay_slo_s=delay_slo_s)[0]


def _evaluate(qps: float, run: Run, *, tbt_slo_s: float,
              delay_slo_s: float) -> tuple[CapacityPoint, Trace]:
    trace, stages = run.traced()
    p99 = Percentiles.of(token_gaps(trace)[0]).p99
    delay = median_scheduling_delay(trace)
    # NaN (no gaps, or no new request) has nothing to miss
    return CapacityPoint(qps, p99, delay, not p99 > tbt_slo_s and not delay > delay_slo_s,
                         stage_figures=stages), trace


@dataclass(frozen=True)
class SearchStop:
    """Why a rate search ended before its tolerance: its cap of `runs` runs ('runs'), rates below
    `qps` not worth trying ('floor'), a refusal after `runs` runs ('refused'), or a run at `qps`
    over `iterations` iterations ('iterations')."""
    why: str
    qps: float = 0.0
    runs: int = 0
    iterations: int = 0
    refusal: str = ""

    def words(self, unit: str = "QPS") -> str:
        """In words, a rate in `unit` (the command line's 'QPS'; a page gives its own)."""
        if self.why == "runs":
            return f"the search stopped at its cap of {fmt_counted(self.runs, 'run')}"
        if self.why == "floor":
            return (f"rates below {self.qps:.3g} {unit} were not tried (their arrivals would "
                    f"spread beyond {MAX_ARRIVAL_S:g} s)")
        if self.why == "refused":
            return f"the search stopped after {self.runs} runs: {self.refusal}"
        return (f"the search stopped when a run at {self.qps:.3g} {unit} needed more than "
                f"{self.iterations:,} iterations (the cap)")


def search_words(result: CapacityResult, name: str, conditions: str, unit: str = "QPS") -> str:
    """A rate search's outcome in words: `name` met `conditions` up to which rate, in `unit`. The
    command line's reason (CapacityResult.reason) is this in its own words; a page passes its
    own name, conditions and unit."""
    points = [p.qps for p in result.points]
    stop = f"; {result.stopped.words(unit)}" if result.stopped else ""
    if result.failed_qps is None and result.capacity_qps > 0:
        return (f"{name} met {conditions} at the compute ceiling ({result.ceiling_qps:.3g} {unit} "
                "= requests / the compute time of all their FLOPs, the most any schedule "
                "sustains), so its capacity is reported as the ceiling")
    if result.capacity_qps == 0 and not points:
        return f"{name}: no rate was proved{stop or ' (none was tried)'}"
    if result.capacity_qps == 0:
        return f"{name} missed {conditions} at every rate tried, down to {min(points):.3g} {unit}{stop}"
    return (f"{name} meets {conditions} up to {result.capacity_qps:.3g} {unit} and misses at "
            f"{result.failed_qps:.3g} {unit} ({len(points)} runs){stop}")


def lowest_rate(requests: int) -> float:
    """The lowest rate worth trying: below it `requests` arrivals spread beyond MAX_ARRIVAL_S."""
    return requests / MAX_ARRIVAL_S


def find_capacity(workload_at: Callable[[float], Workload], policy: PolicySpec, cost: CostModel, *,
                  budget: int, tbt_slo_s: float, delay_slo_s: float = DELAY_SLO_S,
                  limits: Limits = CAPACITY_LIMITS, max_runs: int = MAX_RUNS,
                  rel_tol: float = REL_TOL,
                  progress: Callable[[int, CapacityPoint], None] | None = None,
                  may_start: Callable[[PolicySpec, int], str | None] | None = None,
                  finished: Callable[[Trace], None] | None = None,
                  pipeline: Pipeline | None = None) -> CapacityResult:
    """Bisection over QPS. `workload_at(qps)` builds the workload for a rate (same seed each time);
    `progress(runs_done, point)` is called after each run (at most `max_runs` runs).
    `may_start(policy, budget)` is asked before each run: None lets it start, else it says why
    the search stops there; `finished(trace)` hears of each run that completed. With `pipeline`
    every run goes through its stages, and the search starts at their ceiling."""
    slo = check_number("TBT SLO (s)", tbt_slo_s, high=3600)
    delay_slo = check_number("scheduling delay SLO (s)", delay_slo_s, high=1e5)
    runs = check_number("max runs", max_runs, high=100, integer=True)
    tol = check_number("relative tolerance", rel_tol, high=1)
    conditions = (f"p99 TBT <= {fmt_seconds(slo)} and median scheduling delay <= "
                  f"{fmt_seconds(delay_slo)}")

    def judge(qps: float) -> tuple[CapacityPoint, list[Trace]]:
        run = Run(workload=workload_at(qps), policy=policy, cost=cost, budget=budget,
                  limits=limits, pipeline=pipeline)
        point, trace = _evaluate(qps, run, tbt_slo_s=slo, delay_slo_s=delay_slo)
        return point, [trace]
    return search_rate(workload_at, judge, compute_ceiling_qps(workload_at(1.0), cost, pipeline),
                       name=f"{policy.name} at budget {budget:,}", conditions=conditions,
                       runs=runs, tol=tol, max_iterations=limits.max_iterations,
                       policy=policy.name, budget=budget, progress=progress,
                       may_start=may_start and (lambda: may_start(policy, budget)),
                       finished=finished)


def search_rate(workload_at: Callable[[float], Workload],
                judge: Callable[[float], tuple[CapacityPoint, list[Trace]]], ceiling: float, *,
                name: str, conditions: str, runs: int, tol: float, max_iterations: int,
                policy: str, budget: int,
                progress: Callable[[int, CapacityPoint], None] | None = None,
                may_start: Callable[[], str | None] | None = None,
                finished: Callable[[Trace], None] | None = None) -> CapacityResult:
    """The bisection of `find_capacity` under any criterion: `judge(qps)` runs the rate and says
    whether it meets `conditions` (words for the reason), with the traces it ran; the search
    starts at `ceiling`. `finished` hears of every trace."""
    floor = lowest_rate(len(workload_at(1.0)))
    points: dict[float, CapacityPoint] = {}
    stopped: SearchStop | None = None   # why the search ended before its tolerance, if it did
    cut_short = False                   # a cap (runs, a refusal, iterations) ended it
    capped = False                      # a run met the iteration cap

    def can_run(qps: float) -> bool:
        """Whether the search may run `qps`, which it needs: its bracket is still open."""
        nonlocal stopped, cut_short
        if len(points) >= runs:
            stopped, cut_short = SearchStop("runs", runs=runs), True
            return False
        if qps < floor:
            stopped = SearchStop("floor", qps=floor)
            return False
        refusal = may_start() if may_start else None
        if refusal:
            stopped, cut_short = SearchStop("refused", runs=len(points), refusal=refusal), True
            return False
        return True

    def passes(qps: float) -> bool | None:
        """Whether `qps` meets both SLOs; None when its run met the iteration cap (it proved
        nothing, and lower rates need more iterations still): the search ends."""
        nonlocal stopped, cut_short, capped
        try:
            point, traces = judge(qps)
        except SimulationLimitError:
            capped = cut_short = True
            stopped = SearchStop("iterations", qps=qps, iterations=max_iterations)
            return None
        if finished:
            for trace in traces:
                finished(trace)
        points[qps] = point
        if progress:
            progress(len(points), point)
        return point.sustained

    lo, hi = 0.0, None
    qps = ceiling
    while can_run(qps):                     # halve from the ceiling until a rate passes
        verdict = passes(qps)
        if verdict is None:
            break
        if verdict:
            lo = qps
            break
        hi, qps = qps, qps / 2
    while hi is not None and lo > 0 and (hi - lo) / hi > tol and not stopped and \
            can_run((lo + hi) / 2):
        mid = (lo + hi) / 2
        verdict = passes(mid)
        if verdict is None:
            break
        if verdict:
            lo = mid
        else:
            hi = mid
    result = CapacityResult(policy, budget, lo, hi, ceiling,
                            tuple(points[q] for q in sorted(points)), "", capped,
                            stopped.words() if cut_short and stopped else "", stopped)
    return replace(result, reason=search_words(result, name, conditions))


def compare_capacity(workload_at: Callable[[float], Workload], cost: CostModel, *,
                     policy: PolicySpec, budget: int, baseline: PolicySpec, baseline_budget: int,
                     tbt_slo_s: float, delay_slo_s: float = DELAY_SLO_S,
                     limits: Limits = CAPACITY_LIMITS, max_runs: int = MAX_RUNS,
                     rel_tol: float = REL_TOL,
                     progress: Callable[[float, str], None] | None = None,
                     may_start: Callable[[PolicySpec, int], str | None] | None = None,
                     finished: Callable[[Trace], None] | None = None,
                     baseline_limits: Limits | None = None,
                     pipeline: Pipeline | None = None) -> CapacityComparison:
    """Capacity of `policy` and of `baseline` on the same workload and SLOs, and their ratio.
    `progress(fraction, text)` suits a progress bar; `may_start` and `finished` (as in
    `find_capacity`, shared by both searches) let the caller stop them before a run.
    `baseline_limits` (default `limits`): the baseline's own, where its engine seats fewer
    requests (Orca as the Sarathi-Serve artifact runs it: 16). `pipeline`: both on its stages."""
    results = []
    searches = ((policy, budget, limits), (baseline, baseline_budget, baseline_limits or limits))
    for index, (spec, b, spec_limits) in enumerate(searches):
        def report(done, point, index=index, spec=spec):
            if progress:
                progress(min(1.0, (index + done / max_runs) / 2),
                         f"{spec.name}: {point.qps:.3g} QPS "
                         f"{'meets' if point.sustained else 'misses'} the SLOs")
        results.append(find_capacity(workload_at, spec, cost, budget=b, tbt_slo_s=tbt_slo_s,
                                     delay_slo_s=delay_slo_s, limits=spec_limits,
                                     max_runs=max_runs, rel_tol=rel_tol, progress=report,
                                     may_start=may_start, finished=finished,
                                     pipeline=pipeline))
    ours, theirs = results
    ratio = ours.capacity_qps / theirs.capacity_qps \
        if theirs.capacity_qps > 0 and not ours.undefined else None
    return CapacityComparison(ours, theirs, ratio)


def rate_grid(ceiling_qps: float, points: int = CURVE_POINTS) -> tuple[float, ...]:
    """Evenly spaced rates up to the compute ceiling: ceiling x k / points, k = 1 ... points."""
    ceiling = check_number("compute ceiling (QPS)", ceiling_qps, high=1e9)
    n = check_number("points", points, high=100, integer=True)
    return tuple(ceiling * k / n for k in range(1, n + 1))


def rate_curve(workload_at: Callable[[float], Workload], policy: PolicySpec, cost: CostModel,
               rates, *, budget: int, tbt_slo_s: float, delay_slo_s: float = DELAY_SLO_S,
               limits: Limits = CAPACITY_LIMITS,
               progress: Callable[[int, CapacityPoint], None] | None = None,
               ) -> tuple[CapacityPoint, ...]:
    """p99 TBT and median scheduling delay at each of `rates` (the same seeded workload at each),
    for the curves beside the bisection: the bisection only visits rates near the capacity."""
    points = []
    for qps in rates:
        points.append(evaluate(qps, workload_at(qps), policy, cost, budget=budget,
                               tbt_slo_s=tbt_slo_s, delay_slo_s=delay_slo_s, limits=limits))
        if progress:
            progress(len(points), points[-1])
    return tuple(points)


# --- goodput (DistServe) ----------------------------------------------------------------------
# DistServe (Zhong et al., OSDI 2024, arXiv 2401.09670, section 2): goodput is the highest rate at
# which at least 90% of requests meet both their TTFT and their TPOT target (SLO attainment), and
# it compares systems per GPU. The share is a parameter (DistServe's figures also use 99%).
GOODPUT_SHARE = 0.9


@dataclass(frozen=True)
class GoodputSlo:
    """Goodput's criterion: at least `share` of the requests with TTFT <= `ttft_s` and TPOT <=
    `tpot_s` (a one-token request has no TPOT, and meets it)."""
    ttft_s: float
    tpot_s: float
    share: float = GOODPUT_SHARE

    def __post_init__(self):
        check_number("TTFT SLO (s)", self.ttft_s, high=3600)
        check_number("TPOT SLO (s)", self.tpot_s, high=3600)
        check_number("SLO attainment share", self.share, high=1)

    def words(self) -> str:
        return (f"at least {self.share:.0%} of requests with TTFT <= {fmt_seconds(self.ttft_s)} "
                f"and TPOT <= {fmt_seconds(self.tpot_s)}")


def goodput_point(qps: float, traces, slo: GoodputSlo) -> CapacityPoint:
    """One rate's runs (one disaggregated run, or each colocated instance's) judged together:
    the share of all their requests that meet both SLOs, beside the p99 TBT and median
    scheduling delay the TBT criterion reads."""
    met, gaps, delays = [], [], []
    for trace in traces:
        times = request_times(trace)
        met.append(~(times.ttft_s > slo.ttft_s) & ~(times.tpot_s > slo.tpot_s))
        gaps.append(token_gaps(trace)[0])
        delays.append(times.queue_s[~np.isnan(times.queue_s)])
    attainment = float(np.concatenate(met).mean())
    delay = np.concatenate(delays)
    return CapacityPoint(qps, Percentiles.of(np.concatenate(gaps)).p99,
                         float(np.median(delay)) if len(delay) else float("nan"),
                         attainment >= slo.share, attainment)


@dataclass(frozen=True)
class GoodputResult:
    """One setup's goodput search: `result` in capacity's shape (its capacity_qps the goodput,
    requests/s over all its GPUs), and the GPUs it used."""
    result: CapacityResult
    gpus: int

    @property
    def per_gpu(self) -> float:
        return self.result.capacity_qps / self.gpus


@dataclass(frozen=True)
class GoodputComparison:
    """Disaggregated against colocated on the same GPUs; `ratio`: per-GPU goodput,
    disaggregated / colocated (None when the colocated setup proved no rate, or either search
    is undefined)."""
    disaggregated: GoodputResult
    colocated: GoodputResult
    ratio: float | None
    slo: GoodputSlo


def find_goodput(workload_at: Callable[[float], Workload], run: Run, slo: GoodputSlo, *,
                 colocated_instances: int = 1, max_runs: int = MAX_RUNS,
                 rel_tol: float = REL_TOL,
                 progress: Callable[[int, CapacityPoint], None] | None = None,
                 may_start: Callable[[PolicySpec, int], str | None] | None = None,
                 finished: Callable[[Trace], None] | None = None) -> GoodputResult:
    """DistServe's goodput of `run`'s setup (its workload replaced at each rate): disaggregated
    when it has a `disaggregation`, else `colocated_instances` instances of its tp GPUs (times
    its pipeline's stages) with requests round-robin. The search starts at the compute ceiling
    of all its GPUs."""
    runs = check_number("max runs", max_runs, high=100, integer=True)
    tol = check_number("relative tolerance", rel_tol, high=1)
    split = run.disaggregation
    stages = run.pipeline.stages if run.pipeline is not None else 1
    gpus = split.gpus if split is not None else colocated_instances * run.cost.tp * stages
    # each instance's ceiling (its stages' busiest), times the instances: GPUs / (tp x stages)
    ceiling = compute_ceiling_qps(workload_at(1.0), run.cost, run.pipeline) * (
        gpus // stages) / run.cost.tp

    def judge(qps: float) -> tuple[CapacityPoint, list]:
        workload = workload_at(qps)
        if split is not None:
            trace = replace(run, workload=workload).simulate()
            return goodput_point(qps, [trace], slo), [*trace.prefill, *trace.decode]
        traced = [replace(run, workload=share).traced()
                  for share in round_robin_shares(workload, colocated_instances)]
        traces = [trace for trace, _ in traced]
        point = goodput_point(qps, traces, slo)
        return (replace(point, stage_figures=traced[0][1]) if len(traced) == 1 else point), traces

    if split is not None:
        name = (f"{run.policy.name} disaggregated {split.prefill_gpus}:{split.decode_gpus} at "
                f"budget {run.budget:,}")
    else:
        pp = f" x pp {stages}" if stages > 1 else ""
        name = (f"{run.policy.name} colocated, {colocated_instances} x tp {run.cost.tp}{pp} at "
                f"budget {run.budget:,}")
    result = search_rate(workload_at, judge, ceiling, name=name,
                         conditions=f"goodput's SLOs ({slo.words()})", runs=runs, tol=tol,
                         max_iterations=run.limits.max_iterations, policy=name,
                         budget=run.budget, progress=progress,
                         may_start=may_start and (lambda: may_start(run.policy, run.budget)),
                         finished=finished)
    return GoodputResult(result, gpus)


def compare_goodput(workload_at: Callable[[float], Workload], run: Run, slo: GoodputSlo,
                    **search) -> GoodputComparison:
    """DistServe's comparison: `run` disaggregated (its `disaggregation`) against the same policy
    colocated on the same GPUs, as (X + Y) / tp instances with requests round-robin; per GPU
    and in total. `search`: find_goodput's max_runs, rel_tol, progress, may_start, finished."""
    split = run.disaggregation
    if split is None:
        raise InputError("compare_goodput needs a disaggregated run (its disaggregation)")
    if split.gpus % run.cost.tp:
        raise InputError(f"the colocated comparison runs {split.gpus} GPUs as instances of tp "
                         f"{run.cost.tp}, which does not divide them; give --tp dividing "
                         f"{split.gpus}")
    ours = find_goodput(workload_at, run, slo, **search)
    theirs = find_goodput(workload_at, replace(run, disaggregation=None), slo,
                          colocated_instances=split.gpus // run.cost.tp, **search)
    defined = theirs.result.capacity_qps > 0 and not ours.result.undefined
    return GoodputComparison(ours, theirs, ours.per_gpu / theirs.per_gpu if defined else None,
                             slo)
