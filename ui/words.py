"""What the pages say about a run, built from the run itself: how an iteration is priced, the
metric cards with their formulas, and the stall / fix stories. Pure Python (no Streamlit)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.serving.engine import Trace
from sim.serving.metrics import request_times
from sim.serving.policies import POLICIES
from sim.studies.stalls import STALL_S, STALL_SOURCE, stalls
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
# The cards' labels, in the order each lane shows them: the stall first.
GAP, FROZEN, FROZEN_TIME, TTFT, STEADY = ("Largest gap", "Streams frozen", "Frozen per stream",
                                          "New request TTFT", "Steady gap (p99)")


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    help: str          # the formula, with this run's numbers substituted (Markdown)
    seconds: float     # the raw value, for deltas between lanes (NaN when undefined)
    unit: str = "s"    # what `seconds` counts: "s", or a count ("streams")


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


def _median_duration(trace: Trace, which: np.ndarray) -> float:
    durations = trace.duration_s[which]
    return float(np.median(durations)) if len(durations) else math.nan


def decode_step_s(trace: Trace) -> float:
    """A decode-only iteration's time (the median of them): the streams' pace with no prompt."""
    return _median_duration(trace, (trace.prefill_tokens == 0) & (trace.decode_tokens > 0))


def prefill_step_s(trace: Trace) -> float:
    """The time of an iteration that carries prompt tokens (the median of them)."""
    return _median_duration(trace, trace.prefill_tokens > 0)


def lane_cards(trace: Trace, mode: str, tp: int = 1) -> list[Card]:
    """The numbers under a lane, the stall first: the decoders' largest gap, how many froze and
    for how long, the new request's TTFT, and the steady inter-token latency (p99), each with how
    it is computed (`mode`: the cost mode, `tp`: the tensor-parallel degree)."""
    rule = cost_rule(mode, tp)
    times = request_times(trace)
    decoders = trace.prefilled
    frozen = stalls(trace, STALL_S, decoders)
    every = stalls(trace, STALL_S)
    threshold = fmt_seconds(STALL_S)
    gap = frozen.largest_gap_s
    cards = [Card(
        GAP, fmt_seconds(gap),
        f"max over the {frozen.streams:,} running decoders of (time of token k+1 − time of token k)"
        f" = **{fmt_seconds(gap)}**. A decoder waits for every iteration it is not in, and for the "
        "whole of each one it is in: one long prefill iteration is one long gap.", gap),
        Card(FROZEN, f"{frozen.frozen_streams:,} of {frozen.streams:,}",
             f"running decoders with at least one gap between two tokens longer than {threshold}, "
             f"about the longest pause that still feels instantaneous ({STALL_SOURCE}): "
             f"**{frozen.frozen_streams:,}** of {frozen.streams:,}.", float(frozen.frozen_streams),
             "streams"),
        Card(FROZEN_TIME, _seconds(frozen.frozen_per_stream_s),
             f"mean over the {frozen.streams:,} running decoders of the sum of their gaps longer "
             f"than {threshold} = **{_seconds(frozen.frozen_per_stream_s)}**: how long each reader "
             "watched the reply stand still.", frozen.frozen_per_stream_s)]
    new = np.flatnonzero(~trace.prefilled)
    if len(new):
        r = int(new[0])
        first = trace.tokens_of(r)[0] if len(trace.tokens_of(r)) else math.nan
        ttft = float(times.ttft_s[r])
        n_prefill = int(np.count_nonzero(trace.chunk_request == r))
        cards.append(Card(
            TTFT, fmt_seconds(ttft),
            f"time to first token = first token − arrival = {fmt_seconds(first)} − "
            f"{_seconds(trace.arrival_s[r])} = **{fmt_seconds(ttft)}**: the wait before its "
            f"first chunk ({_seconds(times.queue_s[r])}) plus the {n_prefill:,} iteration(s) "
            f"that carried its prompt, each priced {rule}.", ttft))
    cards.append(Card(
        STEADY, fmt_seconds(every.steady_gap_s),
        f"99th percentile (linear interpolation) of all {every.gaps:,} gaps between successive "
        f"tokens of any request = **{fmt_seconds(every.steady_gap_s)}**: the pace a stream keeps "
        f"(max {fmt_seconds(every.largest_gap_s)})."
        + (f" The largest gap is {every.largest_gap_s / every.steady_gap_s:,.3g}× the p99: a freeze "
           "that hits each stream once is a small share of its gaps, so the p99 leaves it out."
           if every.largest_gap_s > 2 * every.steady_gap_s else "")
        + f" Over the run: {trace.iterations:,} iterations, each priced {rule}.",
        every.steady_gap_s))
    return cards


def trade_notes(unchunked: Trace, chunked: Trace, cards_u: list[Card],
                cards_c: list[Card]) -> dict[str, str]:
    """The sentence beside each chunked-lane number that got worse, by card label: what the
    fix costs, and why (a red arrow never stands alone)."""
    u = {c.label: c for c in cards_u}
    notes = {}
    for card in cards_c:
        before = u.get(card.label)
        if before is None or not card.seconds > before.seconds:
            continue
        if card.label == TTFT:
            new = np.flatnonzero(~chunked.prefilled)
            chunks = int(np.count_nonzero(chunked.chunk_request == new[0])) if len(new) else 0
            notes[card.label] = (f"The price of chunking: the prompt goes through in {chunks:,} "
                                 "iterations, each shared with the decodes, so its first token "
                                 "comes a little later.")
        elif card.label == STEADY:
            notes[card.label] = (f"Also a price: while the prompt is prefilled each iteration takes "
                                 f"{fmt_seconds(prefill_step_s(chunked))} instead of a "
                                 f"{fmt_seconds(decode_step_s(chunked))} decode step. The "
                                 "unchunked lane's freeze is longer, but it hits each stream once, "
                                 "too rarely to reach the p99.")
        else:
            notes[card.label] = ("Worse here: this policy's prompt iterations are longer than the "
                                 "unchunked lane's (see the bars).")
    return notes


def _change(before: float, after: float) -> str:
    """E.g. "falls from 333 ms to 23.04 ms (14.5× shorter)"."""
    if math.isnan(before) or math.isnan(after):
        return f"is {fmt_seconds(after)} (was {fmt_seconds(before)})"
    if after == before:
        return f"stays at {fmt_seconds(after)}"
    verb, ratio = ("falls", before / after) if after < before else ("rises", after / before)
    size = f" ({ratio:,.3g}× {'shorter' if after < before else 'longer'})" if after else ""
    return f"{verb} from {fmt_seconds(before)} to {fmt_seconds(after)}{size}"


def story_fields(unchunked: Trace, chunked: Trace, budget: int, cards_u: list[Card],
                 cards_c: list[Card]) -> dict[str, str]:
    """The numbers Home's chapters (ui.story.CHAPTERS) quote, from the two lanes' runs."""
    u, c = ({card.label: card for card in cards} for cards in (cards_u, cards_c))
    new = np.flatnonzero(~unchunked.prefilled)
    ttft_u, ttft_c = (cards.get(TTFT) for cards in (u, c))
    return dict(
        decodes=f"{int(unchunked.prefilled.sum()):,}",
        prompt=f"{int(unchunked.prompt[new[0]]):,}" if len(new) else "0",
        decode_step=fmt_seconds(decode_step_s(unchunked)),
        prompt_pass=fmt_seconds(float(unchunked.duration_s.max())),
        prefill_step=fmt_seconds(prefill_step_s(chunked)),
        stall_story=stall_story(unchunked, u[GAP]),
        fix_story=fix_story(chunked, budget, ttft_c, ttft_u, c[GAP],
                            u[GAP]) if ttft_u else "",
        gap_change=_change(u[GAP].seconds, c[GAP].seconds),
        froze_u=f"{u[FROZEN].seconds:,.0f}",
        froze_c=f"{c[FROZEN].seconds:,.0f}",
        stall=fmt_seconds(STALL_S),
        ttft_u=ttft_u.value if ttft_u else "—", ttft_c=ttft_c.value if ttft_c else "—")


def player_cue(cards_u: list[Card], cards_c: list[Card], decoders: int) -> str:
    """What to watch, shown above the player until it plays (plain text)."""
    u, c = ({card.label: card for card in cards} for cards in (cards_u, cards_c))
    first = (f" The new request's first token: {u[TTFT].value} unchunked, {c[TTFT].value} chunked."
             if TTFT in u else "")
    if not decoders:
        return "Press Play: no streams are running, so nothing can freeze." + first
    return (f"Press Play and watch the rows: one per stream ({decoders:,}), a tick per token. "
            f"Unchunked lane: the streams wait up to {u[GAP].value} for a token. "
            f"Chunked lane: up to {c[GAP].value}." + first)


def timeline_legend() -> str:
    """How to read the side-by-side timeline (Markdown)."""
    return ("How to read it: in each lane the bars are iterations, as wide as they run (blue: "
            "decode tokens, orange: prefill tokens). Under them, each row is a stream and each "
            "tick a token it receives; a grey block grows over a row while it waits and turns red "
            "once the wait is a freeze (over 100 ms), staying red after; the dashed line marks "
            "the largest gap so far. The new request's tokens are teal. *Streams frozen for*: how "
            "long the longest-waiting stream has gone without a token, once that is a freeze.")


def rows_note(decoders: int, rows: int, per_row: int, bin_ms: float | None) -> str:
    """Say how the decoder rows were thinned for display."""
    parts = []
    if per_row > 1:
        parts.append(f"{decoders:,} streams drawn as {rows:,} rows of up to {per_row:,} (a row "
                     "ticks when any of its streams gets a token)")
    if bin_ms is not None:
        parts.append(f"ticks thinned to about one per {bin_ms:,.3g} ms, keeping both ends of "
                     "every longer gap, so no freeze is shortened")
    return "; ".join(parts) + ", to keep the page light. Every metric uses every token."
