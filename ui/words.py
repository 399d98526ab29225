"""What the pages say about a run, built from the run itself: how an iteration is priced, the
metric cards with their formulas, and the stall / fix stories. Pure Python (no Streamlit)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.serving.engine import Trace
from sim.serving.metrics import request_times, summarize, token_gaps
from sim.serving.policies import POLICIES
from sim.units import fmt_seconds

# How one iteration is priced, per cost mode (sim/cost.py), in the words the pages use.
COST_RULES = {
    "simple": "max(FLOPs / peak, weight bytes / bandwidth), FLOPs = 2 × params × tokens",
    "roofline": "max(FLOPs / peak, bytes / bandwidth), counting attention, KV and activations",
    "calibrated": "the roofline's FLOPs and bytes at achievable kernel throughput, kernel by kernel "
                  "(`python -m sim cost --mode calibrated` lists each factor)",
}


def cost_rule(mode: str, tp: int = 1) -> str:
    """How one iteration is priced, with the all-reduces tensor parallelism adds."""
    return COST_RULES[mode] + (f", per GPU, plus two all-reduces per layer over the {tp} GPUs"
                               if tp > 1 else "")


# --- what the metric cards say ------------------------------------------------------------------
@dataclass(frozen=True)
class Card:
    label: str
    value: str
    help: str          # the formula, with this run's numbers substituted (Markdown)
    seconds: float     # the raw value, for deltas between lanes (NaN when undefined)
    unit: str = "s"    # what `seconds` counts: "s", or "iterations"


def stall_story(trace: Trace, gap: Card) -> str:
    """Home's "the stall" paragraph, from the unchunked run: its longest iteration and the gap it
    leaves (an iteration with no decode rows adds the decode step after it)."""
    policy = POLICIES[trace.policy]
    i = int(np.argmax(trace.duration_s))
    tokens = int(trace.decode_tokens[i] + trace.prefill_tokens[i])
    if math.isnan(gap.seconds):
        why = "no decoders are running, so no stream stalls"
    elif trace.decode_tokens[i] == 0:
        why = ("the decoders get no token in it, so their largest gap is that iteration plus the "
               f"decode step after it: **{gap.value}**")
    else:
        why = f"every decoder's token waits for it: **{gap.value}**"
    return (f"**{policy.label}**: {policy.summary}. Its longest iteration ({tokens:,} tokens) takes "
            f"**{fmt_seconds(float(trace.duration_s[i]))}**; {why}.")


def fix_story(trace: Trace, budget: int, ttft: Card, ttft_before: Card, gap: Card,
              gap_before: Card) -> str:
    """Home's "the fix" paragraph, from the chunked run: what the policy does, the chunk
    arithmetic when an iteration holds decodes and a chunk filling the budget, and what changed."""
    policy = POLICIES[trace.policy]
    if trace.starved_iterations:
        return (f"**{policy.label}**: {policy.summary}. But the running decodes take the whole "
                f"budget of {budget:,} tokens, so the prompt gets no chunk until decoders finish "
                f"and leave ({trace.starved_iterations:,} iterations): its first token comes after "
                f"**{ttft.value}**. Raise the budget above the number of decodes.")
    mixed = np.flatnonzero((trace.decode_tokens > 0) & (trace.prefill_tokens > 0)
                           & (trace.decode_tokens + trace.prefill_tokens == budget))
    chunk = ""
    if len(mixed):
        d, c = int(trace.decode_tokens[mixed[0]]), int(trace.prefill_tokens[mixed[0]])
        chunk = f" (chunk = budget − decodes = {budget:,} − {d:,} = **{c:,} prompt tokens**)"
    if math.isnan(gap.seconds):
        streams = "no decoders are running"
    else:
        direction = "falls" if gap.seconds < gap_before.seconds else "rises"
        streams = f"the decoders' largest gap {direction} to **{gap.value}** (from {gap_before.value})"
    return (f"**{policy.label}**: {policy.summary}{chunk}. Its longest iteration takes "
            f"**{fmt_seconds(float(trace.duration_s.max()))}**; {streams}, and the new request's "
            f"first token comes after **{ttft.value}** instead of {ttft_before.value}.")


def card_delta(card: Card, ref: Card, ratio: bool = True) -> str | None:
    """card − ref, with the ratio card / ref − 1 unless `ratio` is False, e.g. "+84 ms (+26%)";
    None when they are equal or either is undefined."""
    d = card.seconds - ref.seconds
    if not d or math.isnan(d):
        return None
    size = fmt_seconds(abs(d)) if card.unit == "s" else f"{abs(d):,.0f} {card.unit}"
    share = f" ({card.seconds / ref.seconds - 1:+.0%})" if ratio and ref.seconds else ""
    return f"{'+' if d > 0 else '-'}{size}{share}"   # st.metric reads the ASCII sign


def _seconds(s: float) -> str:
    return "0 ms" if s == 0 else fmt_seconds(s)


def lane_cards(trace: Trace, mode: str, tp: int = 1) -> list[Card]:
    """The four numbers under a lane: new request TTFT, the decoders' largest gap, p99
    inter-token latency and iterations, each with how it is computed (`mode`: the cost mode,
    `tp`: the tensor-parallel degree)."""
    rule = cost_rule(mode, tp)
    metrics = summarize(trace)
    times = request_times(trace)
    gaps, owner = token_gaps(trace)
    new = np.flatnonzero(~trace.prefilled)
    decoders = np.flatnonzero(trace.prefilled)
    cards = []
    if len(new):
        r = int(new[0])
        first = trace.tokens_of(r)[0] if len(trace.tokens_of(r)) else math.nan
        ttft = float(times.ttft_s[r])
        n_prefill = int(np.count_nonzero(trace.chunk_request == r))
        cards.append(Card(
            "New request TTFT", fmt_seconds(ttft),
            f"TTFT = first token − arrival = {fmt_seconds(first)} − "
            f"{_seconds(trace.arrival_s[r])} = **{fmt_seconds(ttft)}**: the wait before its "
            f"first chunk ({_seconds(times.queue_s[r])}) plus the {n_prefill:,} iteration(s) "
            f"that carried its prompt, each priced {rule}.", ttft))
    gap = float(np.nanmax(times.max_gap_s[decoders])) if len(decoders) else math.nan
    cards.append(Card(
        "Largest decoder gap", fmt_seconds(gap),
        f"max over the {len(decoders):,} running decoders of (time of token k+1 − time of token k)"
        f" = **{fmt_seconds(gap)}**. A decoder waits for every iteration it is not in, and for the "
        "whole of each one it is in: one long prefill iteration is one long gap.", gap))
    cards.append(Card(
        "p99 inter-token latency", fmt_seconds(metrics.tbt_s.p99),
        f"99th percentile (linear interpolation) of all {len(gaps):,} gaps between successive "
        f"tokens of any request = **{fmt_seconds(metrics.tbt_s.p99)}** (median "
        f"{fmt_seconds(metrics.tbt_s.p50)}, max {fmt_seconds(metrics.tbt_s.max)})."
        + (f" The largest gap is {metrics.tbt_s.max / metrics.tbt_s.p99:,.3g}× the p99: a stall that "
           "hits each stream once is a small share of its gaps, so percentiles hide it."
           if metrics.tbt_s.max > 2 * metrics.tbt_s.p99 else ""),
        metrics.tbt_s.p99))
    cards.append(Card(
        "Iterations", f"{trace.iterations:,}",
        f"forward passes until every request finished: {trace.iterations:,}, over "
        f"{fmt_seconds(metrics.makespan_s)}. Each one is priced {rule}.", float(trace.iterations),
        "iterations"))
    return cards


