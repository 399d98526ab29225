"""The words of the overhead strips (sim/studies/overhead.py): each sentence that names a number
reads it from the strip, and which sentence is said depends on what the numbers did (the regime:
unchanged, hidden by an overlapped engine, or moving). Pure (no Streamlit).

The per-iteration CPU overhead is the least certain figure of the cost model, so each page that
states a headline says how that headline moves when the overhead does."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sim.cost.overhead import MEASURED_CPU_S, MEASURED_CPU_SOURCE, Overhead
from sim.studies.capacity import CapacityComparison
from sim.studies.overhead import HIGH_S, BudgetHeadline, LaneHeadline, Strip
from sim.units import fmt_seconds

STEADY = 0.10   # a headline that moves less than this fraction across the levels "holds"

INTRO = (f"**How sure is this?** The CPU time a server spends between two iterations (scheduling, "
         f"preparing inputs, sampling) is the least certain figure here: one published profile, "
         f"vLLM V0's {fmt_seconds(MEASURED_CPU_S)} per iteration ([vllm-project/vllm#6854]"
         f"({MEASURED_CPU_SOURCE})), stands for every engine, and yours may spend anything from "
         f"almost none to over {fmt_seconds(HIGH_S)}. A synchronous engine adds it to every "
         "iteration; one that overlaps it with the GPU step (vLLM V1, SGLang) shows it only where "
         "it outlasts the step. The same runs at three CPU times:")


def level_label(cpu_s: float, current_s: float) -> str:
    """A level's name in a strip: its CPU time, and which one the page's own numbers use."""
    name = "no overhead" if cpu_s == 0 else ("measured" if cpu_s == MEASURED_CPU_S else "high")
    shown = f"{fmt_seconds(cpu_s) if cpu_s else '0 ms'} ({name})"
    return shown + (", as above" if cpu_s == current_s else "")


def _moves(values: Sequence[float]) -> float:
    """How far the values spread, as a fraction of the smallest (inf when it is 0)."""
    low, high = min(values), max(values)
    return (high - low) / low if low > 0 else (0.0 if high == low else math.inf)


def _span(values: Sequence[float], fmt) -> str:
    return " / ".join(fmt(v) for v in values)


def engine_clause(engine: str, overhead: Overhead) -> str:
    """How one engine's loop takes the CPU time, with the release it is read from."""
    return f"{engine} ({overhead.kind}, as in {overhead.release}: {overhead.rule} per iteration)"


def lanes_words(found: Strip[tuple[LaneHeadline, ...]], engines: Sequence[tuple[str, Overhead]],
                ) -> list[str]:
    """One sentence per lane (its longest wait and TTFT across the levels, said by regime), then
    whether the chunked lane's longest wait stays below the unchunked one's at every level."""
    levels = " / ".join(fmt_seconds(level.cpu_s) if level.cpu_s else "0 ms"
                        for level in found.levels)
    said = []
    for index, (engine, overhead) in enumerate(engines):
        lanes = [level.result[index] for level in found.levels]
        waits = [lane.longest_wait_s for lane in lanes]
        ttfts = [lane.ttft_s for lane in lanes]
        how = engine_clause(engine, overhead)
        if waits[0] == waits[-1] and ttfts[0] == ttfts[-1]:
            said.append(f"{how}; the iterations that set its numbers are longer on the GPU "
                        f"than {fmt_seconds(HIGH_S)}, so its longest wait ({fmt_seconds(waits[0])}) "
                        f"and the new request's first token ({fmt_seconds(ttfts[0])}) do not "
                        "move.")
            continue
        said.append(f"{how}. At {levels} of CPU per iteration its streams' longest wait is "
                    f"{_span(waits, fmt_seconds)} and the new request's first token comes at "
                    f"{_span(ttfts, fmt_seconds)}.")
    said.append(_lanes_compared(found))
    return said


def _lanes_compared(found: Strip[tuple[LaneHeadline, ...]]) -> str:
    """Whether chunking keeps the streams' longest wait below the unchunked lane's at every level,
    and where it does not, what the runs show: the new request waited until every stream had
    finished (so no prompt iteration ran beside them), or only the two waits."""
    pairs = [(level, *level.result) for level in found.levels]
    if all(c.longest_wait_s < u.longest_wait_s for _, u, c in pairs):
        return ("At every level chunking keeps the streams' longest wait below the unchunked "
                "lane's: the lesson holds, only its numbers move.")
    level_of = {id(level): fmt_seconds(level.cpu_s) if level.cpu_s else "0 ms" for level, *_ in pairs}
    not_below = [(level, u, c) for level, u, c in pairs if not c.longest_wait_s < u.longest_wait_s]
    apart = [x for x in not_below if not (x[1].streams_done_first and x[2].streams_done_first)]
    said = []
    alone = [x for x in not_below if x not in apart]
    if alone:
        waits = " / ".join(fmt_seconds(u.queue_s) if fmt_seconds(u.queue_s) == fmt_seconds(c.queue_s)
                           else f"{fmt_seconds(u.queue_s)} unchunked, {fmt_seconds(c.queue_s)} chunked"
                           for _, u, c in alone)
        said.append(f"At {' / '.join(level_of[id(level)] for level, *_ in alone)} of CPU per "
                    f"iteration the new request waited {waits} in both lanes before its first "
                    "iteration, until every stream had finished: no prompt iteration "
                    "ran beside the streams, so each lane's longest wait is one of the streams' own "
                    "decode iterations, and chunking has nothing to shorten.")
    if apart:
        said.append(f"At {' / '.join(level_of[id(level)] for level, *_ in apart)} of CPU per "
                    "iteration the chunked lane's longest wait ("
                    + " / ".join(fmt_seconds(c.longest_wait_s) for _, _, c in apart)
                    + ") is not below the unchunked lane's ("
                    + " / ".join(fmt_seconds(u.longest_wait_s) for _, u, _ in apart) + ").")
    return " ".join(said)


def budget_words(found: Strip[BudgetHeadline], engine: str, overhead: Overhead) -> str:
    """The recipe's budget across the levels, said by regime; "recommended" only where it meets
    every target at every level, else each level's misses named."""
    budgets = [level.result.budget for level in found.levels]
    shown = " / ".join("none" if b is None else f"{b:,}" for b in budgets)
    levels = " / ".join(fmt_seconds(level.cpu_s) if level.cpu_s else "0 ms"
                        for level in found.levels)
    how = engine_clause(engine, overhead)
    missed = [(level.cpu_s, level.result) for level in found.levels if level.result.misses]
    name = ("recommended budget" if not missed else
            "recipe's budget (the largest within the TBT target)")
    misses = "".join(f"; at {fmt_seconds(cpu_s) if cpu_s else '0 ms'}, {r.budget:,} misses "
                     f"{'; '.join(r.misses)}, and no budget swept meets every target"
                     for cpu_s, r in missed)
    if len(set(budgets)) == 1:
        return (f"{how}. The {name} is {shown.split(' / ')[0]} at each of {levels} of CPU per "
                f"iteration{misses}: "
                + ("the recommendation holds whatever the overhead." if not missed else
                   "the budget holds whatever the overhead, the targets it meets do not."))
    said = f"{how}. At {levels} of CPU per iteration the {name} is {shown}{misses}"
    known = [b for b in budgets if b is not None]
    if len(known) == len(budgets) and known == sorted(known, reverse=True):
        return said + (". Every millisecond an iteration spends on the CPU is a millisecond of "
                       "the TBT target the prompt's chunk cannot use.")
    return said + ". The budget moves with the overhead."


def capacity_words(found: Strip[CapacityComparison]) -> str:
    """Both capacities and the ratio across the levels, said by regime."""
    comparisons = [level.result for level in found.levels]
    ours, theirs = comparisons[0].policy.policy, comparisons[0].baseline.policy
    levels = " / ".join(fmt_seconds(level.cpu_s) if level.cpu_s else "0 ms"
                        for level in found.levels)
    ratios = [c.ratio for c in comparisons]

    def qps(result) -> str:   # a search a cap cut short before any rate passed proved none
        return "—" if result.undefined else f"{result.capacity_qps:.3g}"
    said = (f"At {levels} of CPU per iteration {ours} sustains "
            f"{_span([c.policy for c in comparisons], qps)} requests/s and {theirs} "
            f"{_span([c.baseline for c in comparisons], qps)}")
    undefined = [c for c in comparisons if c.ratio is None]
    if undefined:
        whys = "; ".join(dict.fromkeys(c.why_no_ratio for c in undefined))
        return said + (f"; where {whys}, the ratio is undefined, so the overhead decides "
                       "whether there is a ratio at all.")
    said += f": a ratio of {_span(ratios, lambda r: f'{r:.2f}×')}"
    if _moves(ratios) < STEADY:
        return said + (f", within {STEADY:.0%} of each other: the ratio holds whatever the "
                       "overhead.")
    direction = "rises" if ratios[-1] > ratios[0] else "falls"
    return said + (f". The ratio {direction} with the overhead: a ratio measured on real "
                   "engines carries their CPU time per iteration as well as their schedulers.")
