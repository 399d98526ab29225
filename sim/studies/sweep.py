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
from dataclasses import dataclass, replace

import numpy as np

from sim.ceilings import MAX_TOKENS
from sim.cost.iteration import CostModel, attended_pairs
from sim.errors import InputError, check_number
from sim.presets.hardware import Gpu
from sim.serving.metrics import Metrics, median_scheduling_delay, summarize
from sim.serving.policies import POLICIES
from sim.serving.run import Run
from sim.units import fmt_seconds

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
    """One budget's point: `run`, summed up."""
    trace = run.simulate()
    workload, budget = run.workload, run.budget
    share = fixed_share(run.cost, budget)
    no_split = int(workload.prompt[~workload.prefilled].max(initial=0)
                   + trace.decode_tokens.max(initial=0))
    chunks_per_request = np.bincount(trace.chunk_request, minlength=len(workload))
    return SweepPoint(budget, summarize(trace), median_scheduling_delay(trace),
                      share, share > OVERHEAD_SHARE, no_split, budget >= no_split,
                      int(np.sum(chunks_per_request > 1)), trace.notes,
                      trace.starved_iterations > 0)


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
    return Sweep(run.policy.name, tuple(points), slo, recommended, reason,
                 engine_defaults(run.cost.gpu))
