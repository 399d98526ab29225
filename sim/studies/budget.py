"""Choosing a token budget for the textbook scenario: the Sarathi-Serve recipe, priced one iteration at
a time (the engines' own defaults are in `sim.studies.sweep.engine_defaults`; `sim.studies.sweep` also runs whole
workloads at many budgets).

The recipe (arXiv 2403.02310; the source article's "Choosing the Chunk Size"): price the iteration as a function
of its batch tokens and take the largest budget whose iteration time still meets the TPOT target.

The iteration priced for a budget `b` is the textbook scenario's fused step: `decodes` decode rows at
`context` tokens each, plus a prefill chunk of `c = min(b - decodes, prompt)` tokens that is the last
`c` tokens of the prompt (prefix `prompt - c`). Attention and KV reads grow with the prefix, so this is
an upper bound on every chunk of that prompt: a budget that meets the target here meets it for each
chunk. In `simple` mode the prefix does not matter (FLOPs = 2 x params x tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.cost.iteration import Chunk, Composition, CostModel, IterationCost
from sim.errors import check_number


# --- the iterations of the textbook scenario ------------------------------------------------------
def _counts(decodes, context, prompt) -> tuple[int, int, int]:
    return (check_number("decodes", decodes, low=0, low_inclusive=True, high=1e6, integer=True),
            check_number("context", context, low=0, low_inclusive=True, high=1e8, integer=True),
            check_number("prompt", prompt, high=1e8, integer=True))


def fused_iteration(decodes: int, context: int, prompt: int, budget: int) -> Composition:
    """The step a budget allows: every decode plus the prompt's costliest chunk of the leftover
    budget (its last `c` tokens; see the module docstring). No chunk when the budget is spent."""
    d, ctx, p = _counts(decodes, context, prompt)
    chunk = max(0, min(int(budget) - d, p))
    return Composition((ctx,) * d, (Chunk(chunk, p - chunk, last=True),) if chunk else ())


def budget_iteration_cost(cost: CostModel, decodes: int, context: int, prompt: int,
                          budget: int) -> IterationCost:
    return cost.price(fused_iteration(decodes, context, prompt, budget))


def largest_budget_within(cost: CostModel, decodes: int, context: int, tpot_target_s: float,
                          prompt: int) -> int | None:
    """The largest budget whose fused iteration takes <= `tpot_target_s`, or None when even one
    prefill token on top of the decodes misses it. Budgets above `decodes + prompt` change nothing
    (the whole prompt already fits), so the answer is at most that. Bisection: the iteration time
    never falls as the budget grows."""
    d, ctx, p = _counts(decodes, context, prompt)
    target = check_number("TPOT target (s)", tpot_target_s, high=1e4)

    def meets(budget: int) -> bool:
        return budget_iteration_cost(cost, d, ctx, p, budget).time_s <= target

    low, high = d + 1, d + p
    if not meets(low):
        return None
    if meets(high):
        return high
    while high - low > 1:   # invariant: meets(low), not meets(high)
        mid = (low + high) // 2
        low, high = (mid, high) if meets(mid) else (low, mid)
    return low


@dataclass(frozen=True)
class ScenarioIteration:
    """One iteration of the textbook scenario, priced: what the roofline page plots."""
    key: str
    label: str
    composition: Composition
    cost: IterationCost


def scenario_iterations(cost: CostModel, decodes: int, context: int, prompt: int,
                        budget: int) -> list[ScenarioIteration]:
    """The four iterations the story is made of: decodes alone, the prefill chunk alone (the
    prompt's first, prefix 0), the fused chunked iteration (decodes + that chunk) and the whole
    prompt in one pass (unchunked). Those needing a chunk are left out when the budget is at or
    below the decodes."""
    d, ctx, p = _counts(decodes, context, prompt)
    chunk = max(0, min(int(budget) - d, p))
    decode_rows = (ctx,) * d
    first_chunk = (Chunk(chunk, 0, last=chunk == p),)
    candidates = [
        ("decode", f"decode step ({d:,} streams)", Composition(decode_rows), d > 0),
        ("chunk", f"prefill chunk alone ({chunk:,} tokens)", Composition((), first_chunk), chunk > 0),
        ("fused", f"fused chunked iteration ({d:,} + {chunk:,})",
         Composition(decode_rows, first_chunk), chunk > 0),
        ("prompt", f"whole prompt ({p:,} tokens)", Composition((), (Chunk(p, 0, last=True),)), True),
    ]
    return [ScenarioIteration(key, label, comp, cost.price(comp))
            for key, label, comp, present in candidates if present]
