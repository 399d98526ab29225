"""The token budget as a dial: one workload, one policy, many budgets.

A larger budget gives each iteration more prefill tokens, so a prompt needs fewer iterations, but
every running decode waits for the whole, longer iteration (higher TBT), and so does a prompt whose
first token comes at its end: whether the median TTFT falls or rises with the budget is the run's
to say (`ttft_trend`). The sweep runs the same workload at each budget and reports the frontier,
the budget Sarathi-Serve's recipe would pick (the largest whose p99 TBT meets the SLO), the
engines' default budgets for the GPU, and the two regimes where the dial stops mattering:

* per-iteration overhead dominates: fixed share = t(1 token) / t(budget tokens) > OVERHEAD_SHARE (0.5), where t is
  the cost model's iteration time for a fresh prompt chunk. The fixed part (the weight read, and
  any per-iteration overhead) is paid by every iteration whatever its size, so a budget whose full
  iteration costs less than two empty ones spends most of its time on that fixed part.
* chunking stops helping: budget >= longest prompt + peak decodes in the run. Then a prompt at the
  head of the queue always fits whole beside the decodes, so chunking never splits it and the
  policy behaves like its unchunked counterpart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from sim.ceilings import MAX_TOKENS
from sim.cost.iteration import CostModel, attended_pairs, prefix_read
from sim.errors import InputError, check_number
from sim.presets.hardware import Gpu
from sim.serving.metrics import (
    ClassMetrics,
    Metrics,
    class_metrics,
    median_scheduling_delay,
    summarize,
)
from sim.serving.pipeline import StageFigures, stage_costs
from sim.serving.policies import POLICIES
from sim.serving.run import Run
from sim.units import fmt_bytes, fmt_percent, fmt_seconds

MAX_BUDGETS = 32
DEFAULT_BUDGETS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
OVERHEAD_SHARE = 0.5


# --- the engines' default budgets -------------------------------------------------------------
@dataclass(frozen=True)
class EngineDefault:
    engine: str
    flag: str
    budget: int
    rule: str      # why this GPU gets this value, in words
    source: str


def engine_defaults(gpu: Gpu) -> tuple[EngineDefault, ...]:
    """The default token budget of each engine whose server has a flag for it (vLLM's
    `vllm serve`, SGLang), on `gpu`, with why, from its engine profile (sim/serving/engines.py).
    The offline `LLM` class of vLLM uses 16384 / 8192 below 160 GiB instead."""
    return tuple(EngineDefault(p.budget_flag.server, p.budget_flag.flag, p.budget(gpu),
                               p.budget_flag.rule(gpu), p.budget_flag.source)
                 for p in (spec.profile for spec in POLICIES.values()) if p.budget_flag)


# --- the sweep --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPoint:
    budget: int
    metrics: Metrics
    median_delay_s: float         # arrival -> first scheduled, median over new requests
    fixed_share: float            # t(1 token) / t(budget tokens)
    overhead_dominated: bool      # fixed_share > OVERHEAD_SHARE
    no_split_budget: int          # longest prompt + peak decodes of this run
    chunking_inactive: bool       # budget >= no_split_budget
    split_prompts: int            # requests whose prefill took more than one chunk (measured)
    notes: tuple[str, ...]
    starved: bool = False         # the decodes took the whole budget while prompts waited
    scheduled_tokens: int = 0     # prompt and decode tokens over every iteration
    reread_tokens: int = 0        # earlier chunks' KV tokens each later chunk attended to
    busy_s: float = 0.0           # the sum of the iterations' durations (the rest is idle);
                                  # pipelined: the time a micro-batch is in the pipeline
    classes: Mapping[str, ClassMetrics] = field(default_factory=dict, hash=False)   # per class
    stage_figures: StageFigures | None = None   # the stages and their bubble (a pipelined run)

    @property
    def output_tokens(self) -> int:
        """Tokens emitted (the throughput's numerator), as the summary counts them."""
        return self.metrics.output_tokens

    @property
    def idle_share(self) -> float:
        """The share of the makespan the GPU ran no iteration (waiting for requests to arrive)."""
        span = self.metrics.makespan_s
        return 1 - self.busy_s / span if span else 0.0

    def meets_tbt(self, slo_s: float) -> bool:
        return not self.metrics.tbt_s.p99 > slo_s   # NaN (no gaps at all): nothing to miss


@dataclass(frozen=True)
class Sweep:
    policy: str
    points: tuple[SweepPoint, ...]
    tbt_slo_s: float | None
    recommended: int | None
    reason: str
    defaults: tuple[EngineDefault, EngineDefault]
    offline: str = ""             # what the recommendation gives up against an offline job's budget


def parse_budgets(budgets: Sequence) -> tuple[int, ...]:
    """Budgets as sorted distinct whole numbers in [1, 10,000,000]; at most 32 of them."""
    values = sorted({check_number("budget", b, high=MAX_TOKENS, integer=True) for b in budgets})
    if not values:
        raise InputError("give at least one budget")
    if len(values) > MAX_BUDGETS:
        raise InputError(f"{len(values)} budgets given; at most {MAX_BUDGETS}")
    return tuple(values)


def budget_grid(low, high, extra: Sequence = ()) -> tuple[int, ...]:
    """Budgets to sweep from `low` to `high`: `low` doubled until it passes `high`, `high` itself,
    and the `extra` budgets inside [low, high] (e.g. your budget and the engines' defaults), so
    every budget worth knowing is a point of the frontier. At most 32 (`parse_budgets`)."""
    lo = check_number("smallest budget", low, high=MAX_TOKENS, integer=True)
    hi = check_number("largest budget", high, high=MAX_TOKENS, integer=True)
    if lo > hi:
        raise InputError(f"the smallest budget ({lo:,}) is above the largest ({hi:,})")
    doublings = [lo]
    while doublings[-1] * 2 < hi:
        doublings.append(doublings[-1] * 2)
    return parse_budgets([*doublings, hi, *(b for b in extra if lo <= b <= hi)])


def fixed_share(cost: CostModel, budget: int) -> float:
    """t(1 token) / t(budget tokens), each a fresh prompt chunk (no cached prefix)."""
    window = cost.model.sliding_window
    one = cost.time(1, float(attended_pairs(0, 1, window)), 0.0, 1)[2]
    full = cost.time(budget, float(attended_pairs(0, budget, window)), 0.0, 1)[2]
    return one / full


def misses(point: SweepPoint, tbt_slo_s: float, ttft_slo_s: float | None = None) -> list[str]:
    """The targets `point` does not meet, in words ("p99 TBT 31.2 ms > 25 ms"); [] when it meets
    them all (the TTFT target is on the median, as the frontier draws it)."""
    out = []
    if not point.meets_tbt(tbt_slo_s):
        out.append(f"p99 TBT {fmt_seconds(point.metrics.tbt_s.p99)} > {fmt_seconds(tbt_slo_s)}")
    if ttft_slo_s is not None and point.metrics.ttft_s.p50 > ttft_slo_s:
        out.append(f"p50 TTFT {fmt_seconds(point.metrics.ttft_s.p50)} > {fmt_seconds(ttft_slo_s)}")
    return out


def recommend(points: Sequence[SweepPoint], tbt_slo_s: float,
              ttft_slo_s: float | None = None) -> tuple[int | None, str]:
    """Sarathi-Serve's recipe: the largest budget whose p99 TBT meets the SLO, with the reason.
    With a TTFT target too (on the p50), the largest budget that meets both; when none does, the
    recipe's budget, and the reason says which target it misses and what meeting it would cost."""
    slo = fmt_seconds(tbt_slo_s)
    # a budget at or below the decodes meets any TBT SLO by starving new prompts: never recommend it
    ok = [p for p in points if p.meets_tbt(tbt_slo_s) and not p.starved]
    if not ok:
        best = min(points, key=lambda p: p.metrics.tbt_s.p99)
        return None, (f"no budget in the sweep meets the p99 TBT SLO of {slo}: the lowest p99 TBT "
                      f"is {fmt_seconds(best.metrics.tbt_s.p99)} at budget {best.budget:,}. Try "
                      "smaller budgets, less load or a faster GPU")
    both = [p for p in ok if not misses(p, tbt_slo_s, ttft_slo_s)]
    pick = (both or ok)[-1]
    if ttft_slo_s is None:
        reason = (f"{pick.budget:,} is the largest budget in the sweep whose p99 TBT "
                  f"({fmt_seconds(pick.metrics.tbt_s.p99)}) meets the {slo} SLO")
    elif both:
        reason = (f"{pick.budget:,} is the largest budget in the sweep whose p99 TBT "
                  f"({fmt_seconds(pick.metrics.tbt_s.p99)}) meets the {slo} SLO and whose p50 "
                  f"TTFT ({fmt_seconds(pick.metrics.ttft_s.p50)}) meets the "
                  f"{fmt_seconds(ttft_slo_s)} target")
    else:
        fast = [p for p in points if not p.starved and p.metrics.ttft_s.p50 <= ttft_slo_s]
        calm = min(fast, key=lambda p: p.metrics.tbt_s.p99, default=None)
        reason = (f"no budget in the sweep meets both targets. {pick.budget:,}, the largest within "
                  f"the {slo} p99 TBT SLO, misses the TTFT target: "
                  f"{'; '.join(misses(pick, tbt_slo_s, ttft_slo_s))}"
                  + (f"; the {len(fast):,} budgets fast enough for it miss the TBT SLO, the best "
                     f"{fmt_seconds(calm.metrics.tbt_s.p99)} at {calm.budget:,}" if fast else
                     "; no budget swept meets the TTFT target, so the load itself is too much "
                     "for this GPU"))
    reason += " (Sarathi-Serve's recipe: take the largest budget the tail gap allows)"
    larger = [p for p in points if p.budget > pick.budget]
    if larger:
        reason += (f"; the next one, {larger[0].budget:,}, gives "
                   f"{fmt_seconds(larger[0].metrics.tbt_s.p99)}")
    else:
        reason += "; it is the largest budget swept, so a larger one may meet the SLO too"
    inactive = [p for p in ok if p.chunking_inactive]
    if pick.chunking_inactive:
        reason += (f". From {inactive[0].budget:,} up no prompt needs splitting (budget >= longest "
                   "prompt + decodes), so these budgets behave alike")
    return pick.budget, reason


def throughput_words(point: SweepPoint) -> str:
    """ "512,000 tokens / 250.1 s = 2,047 tokens/s": a point's throughput with its formula's terms."""
    m = point.metrics
    return (f"{point.output_tokens:,} tokens / {fmt_seconds(m.makespan_s)} = "
            f"{m.throughput_tokens_per_s:,.0f} tokens/s")


def throughput_rises(pick: SweepPoint, top: SweepPoint) -> bool:
    """Whether the largest budget's throughput is above the pick's as the lab shows them (whole
    tokens/s): a difference too small to show is none."""
    return round(top.metrics.throughput_tokens_per_s) > round(pick.metrics.throughput_tokens_per_s)


def offline_tradeoff(points: Sequence[SweepPoint], recommended: int | None,
                     weight_bytes: float) -> str:
    """What the recommended budget gives up against the budget an offline job would take (the
    largest swept: with no gap target, nothing holds it back), from the points' throughput
    (output tokens / makespan), and why, chosen by what the points show: where throughput rises
    with the budget, the measured reasons (fewer, fuller iterations, each reading the weights
    once; less KV re-read by later chunks); where it does not, that, and the GPU's idle share
    when the arrivals set the pace. "" without a recommendation. `weight_bytes`: per GPU."""
    pick = next((p for p in points if p.budget == recommended), None)
    if pick is None:
        return ""
    top = points[-1]
    formula = "throughput = output tokens / makespan"
    if pick is top:
        return (f"An offline job, with no gap target, takes the largest budget it can; "
                f"{top.budget:,} is the largest swept, so the pick gives up no throughput against "
                f"it here: {throughput_words(top)} ({formula}).")
    offline = (f"An offline job, with no gap target, would take the largest budget swept, "
               f"{top.budget:,}: {throughput_words(top)}, against {throughput_words(pick)} at the "
               f"pick, {pick.budget:,} ({formula})")
    if not throughput_rises(pick, top):
        said = (f"{offline}. Throughput does not rise with the budget in this sweep, so the pick "
                "gives up none")
        staged = pick.stage_figures is not None and pick.stage_figures.stages > 1
        busy, busy_is = (("the pipeline", "the time at least one micro-batch is in it")
                         if staged else ("the GPU", "the sum of the iterations' durations"))
        if (top.idle_share > pick.idle_share > 0
                and top.metrics.iterations < pick.metrics.iterations):
            idle = "holds no micro-batch" if staged else "runs no iteration"
            said += (f": {busy} {idle} for {fmt_percent(pick.idle_share)} of the run "
                     f"at {pick.budget:,} and {fmt_percent(top.idle_share)} at {top.budget:,} "
                     f"(1 − busy time / makespan: {fmt_seconds(pick.busy_s)} and "
                     f"{fmt_seconds(top.busy_s)} busy), waiting for requests to arrive, so the "
                     "arrivals set the pace and a larger budget's fewer iterations leave it idle "
                     "longer rather than finish sooner")
        elif top.metrics.iterations < pick.metrics.iterations and top.busy_s >= pick.busy_s:
            said += (". The usual case for a large budget (fewer, fuller iterations, each reading "
                     "the weights once; less KV re-read by later chunks) does not win here: "
                     f"{top.budget:,}'s {top.metrics.iterations:,} iterations keep {busy} busy "
                     f"{fmt_seconds(top.busy_s)}, {pick.budget:,}'s {pick.metrics.iterations:,} "
                     f"{fmt_seconds(pick.busy_s)} (busy time: {busy_is}), so what the fewer "
                     "iterations save, their greater length spends again")
        elif top.metrics.iterations >= pick.metrics.iterations:
            said += (f": {top.budget:,} takes no fewer iterations than {pick.budget:,} "
                     f"({top.metrics.iterations:,} against {pick.metrics.iterations:,}), so a "
                     "larger budget has no iterations, and no weight reads, to save here")
        return said + "."
    lost = 1 - pick.metrics.throughput_tokens_per_s / top.metrics.throughput_tokens_per_s
    said = (f"{offline}: the pick gives up {fmt_percent(lost)} of it (1 − "
            f"{pick.metrics.throughput_tokens_per_s:,.0f} / "
            f"{top.metrics.throughput_tokens_per_s:,.0f}).")
    why = []
    fewer = pick.metrics.iterations - top.metrics.iterations
    if fewer > 0:
        per = {p.budget: p.scheduled_tokens / p.metrics.iterations for p in (pick, top)}
        fuller = per[top.budget] > per[pick.budget]

        def size(p: SweepPoint) -> str:
            return f" of {per[p.budget]:,.0f} tokens on average" if fuller else ""
        why.append(f"fewer{', fuller' if fuller else ''} iterations: "
                   f"{pick.metrics.iterations:,}{size(pick)} at {pick.budget:,} against "
                   f"{top.metrics.iterations:,}{size(top)} at {top.budget:,} (tokens scheduled / "
                   "iterations); each iteration reads "
                   f"the weights once (up to {fmt_bytes(weight_bytes)} per GPU, less where a mixture "
                   f"of experts leaves some unrouted), so {fewer:,} fewer iterations read up to "
                   f"{fmt_bytes(fewer * weight_bytes)} less")
    if top.reread_tokens < pick.reread_tokens:
        why.append(f"less KV re-read: a prompt cut into fewer chunks has its earlier chunks' KV "
                   f"read back by fewer later ones, {pick.reread_tokens:,} tokens' worth at "
                   f"{pick.budget:,} against {top.reread_tokens:,} at {top.budget:,}")
    if not why:
        return (f"{said} Neither of the usual reasons holds here (fewer iterations, less KV "
                "re-read by later chunks): the runs differ in what they scheduled.")
    return f"{said} Offline throughput prefers large budgets because of " + "; and ".join(why) + "."


def ttft_trend(points: Sequence[SweepPoint]) -> str:
    """Where the sweep's p50 TTFT is lowest and which way it goes on each side of that budget,
    read off the points: a larger budget needs fewer iterations per prompt but makes each one
    longer, so the run, not a rule, says which wins."""
    shown = [p for p in points if not np.isnan(p.metrics.ttft_s.p50)]
    if not shown:
        return "No new request got its first token at any budget swept."
    p50 = [float(f"{p.metrics.ttft_s.p50:.12g}") for p in shown]   # float noise is no difference
    low = min(p50)
    lowest = [p.budget for p, t in zip(shown, p50) if t == low]
    if len(lowest) == len(shown):
        return (f"In this sweep the p50 TTFT is {fmt_seconds(low)} at every budget: the budget "
                "does not move the median first token here.")
    at = (f"budget {lowest[0]:,}" if len(lowest) == 1 else
          "budgets " + ", ".join(f"{b:,}" for b in lowest))
    first, last = shown[0], shown[-1]
    before = p50[:p50.index(low) + 1]
    after = p50[len(p50) - 1 - p50[::-1].index(low):]
    falls = "falls" + ("" if all(a >= b for a, b in zip(before, before[1:])) else ", not steadily,")
    rises = "rises" + ("" if all(a <= b for a, b in zip(after, after[1:])) else ", not steadily,")
    said = f"In this sweep the p50 TTFT is lowest at {at} ({fmt_seconds(low)})"
    if lowest == [first.budget]:
        return (f"{said}, the smallest swept, and {rises} to {fmt_seconds(p50[-1])} at "
                f"{last.budget:,}: here a larger budget brings the median first token later, "
                "not sooner.")
    if lowest == [last.budget]:
        return (f"{said}, the largest swept; it {falls} from {fmt_seconds(p50[0])} at "
                f"{first.budget:,}: here the largest budget brings the median first token "
                "soonest.")
    sides, them = [], "it" if len(lowest) == 1 else "them"
    if first.budget not in lowest:
        sides.append(f"below {them}, it {falls} from {fmt_seconds(p50[0])} at {first.budget:,}")
    if last.budget not in lowest:
        sides.append(f"above {them}, it {rises} to {fmt_seconds(p50[-1])} at {last.budget:,}")
    if not sides:
        return f"{said}, the smallest and the largest swept, and higher between them."
    return (f"{said}: {'; '.join(sides)}."
            + (" The median first token comes soonest there, not at the largest budget."
               if last.budget not in lowest else ""))


def run_point(run: Run) -> SweepPoint:
    """One budget's point: `run`, summed up; a pipelined run's busy time is the time a
    micro-batch is in the pipeline (its micro-batches overlap, so their durations do not add)."""
    trace, stages = run.traced()
    workload, budget = run.workload, run.budget
    share = fixed_share(run.cost, budget)
    no_split = int(workload.prompt[~workload.prefilled].max(initial=0)
                   + trace.decode_tokens.max(initial=0))
    chunks_per_request = np.bincount(trace.chunk_request, minlength=len(workload))
    window = run.cost.model.sliding_window
    reread = prefix_read(trace.chunk_start, window)
    return SweepPoint(budget, summarize(trace), median_scheduling_delay(trace),
                      share, share > OVERHEAD_SHARE, no_split, budget >= no_split,
                      int(np.sum(chunks_per_request > 1)), trace.notes,
                      trace.starved_iterations > 0,
                      scheduled_tokens=int(trace.prefill_tokens.sum() + trace.decode_tokens.sum()),
                      reread_tokens=int(reread.sum()),
                      busy_s=stages.working_s if stages and stages.stages > 1
                      else float(trace.duration_s.sum()),
                      classes=class_metrics(trace, workload), stage_figures=stages)


def sweep(run: Run, budgets: Sequence, *, tbt_slo_s: float | None = None,
          progress: Callable[[float, str], None] | None = None,
          caps: Mapping[int, int] | None = None) -> Sweep:
    """`run` once per budget (its own budget aside). `progress(fraction, text)` is called after
    each run (for a progress bar); `caps`: an iteration cap per budget, below the limits' (what
    fits in a command's time budget)."""
    values = parse_budgets(budgets)
    slo = None if tbt_slo_s is None else check_number("TBT SLO (s)", tbt_slo_s, high=3600)
    points = []
    for i, budget in enumerate(values):
        point = replace(run, budget=budget)
        points.append(run_point(point if caps is None else point.capped(caps[budget])))
        if progress:
            progress((i + 1) / len(values), f"budget {budget:,} ({i + 1} of {len(values)})")
    recommended, reason = (None, "no TBT SLO given") if slo is None else recommend(points, slo)
    # a GPU reads its weights once an iteration: a pipeline's, its stage's (the largest stage's)
    stages = stage_costs(run.cost, run.pipeline)
    return Sweep(run.policy.name, tuple(points), slo, recommended, reason,
                 engine_defaults(run.cost.gpu),
                 offline_tradeoff(points, recommended, max(c.weight_bytes for c in stages)))
