"""What the pages say about a run, built from the run itself: how an iteration is priced, the
metric cards with their formulas, and the stall / fix stories. Pure Python (no Streamlit)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.cost.iteration import CostModel
from sim.serving.engine import Trace
from sim.serving.metrics import request_times
from sim.serving.policies import POLICIES
from sim.studies.budget import largest_budget_within
from sim.studies.lanes import Comparison, Lane, compare
from sim.studies.stalls import STALL_S, STALL_SOURCE, stalls
from sim.studies.worked_example import SOURCE_ARTICLE
from sim.units import fmt_bytes, fmt_change, fmt_counted, fmt_seconds, shown_same

from ..shell.glossary import first, term
from ..shell.scenario import cost_rule

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


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def wait_story(facts: Lane, unchunked: Lane | None = None) -> str:
    """What the prompt waited for before its first iteration, as the run shows it: the streams'
    decodes taking the whole budget, the KV memory the streams hold, or a wait whose cause the
    trace does not show (empty when it did not wait); short where it is the `unchunked` lane's
    wait again."""
    if not facts.queue_iterations:
        return ""
    wait = (f" The prompt first waits **{fmt_seconds(facts.queue_s)}** "
            f"({facts.queue_iterations:,} iterations)")
    until = ("every stream has finished" if facts.streams_finished_first else
             f"{facts.streams - facts.streams_at_start:,} of the {facts.streams:,} streams have "
             "finished")
    if unchunked is not None and (unchunked.wait_cause, unchunked.streams_at_start) == (
            facts.wait_cause, facts.streams_at_start) and shown_same(unchunked.queue_s, facts.queue_s):
        why = " for KV memory" if facts.wait_cause == "memory" else ""
        return f"{wait}{why}, as in the unchunked lane: it starts once {until}."
    if facts.wait_cause == "budget":
        return (f"{wait}: the streams' decode tokens take the whole budget of "
                f"{fmt_counted(facts.budget, 'token')}, so no chunk fits until {until}.")
    if facts.wait_cause == "memory":
        return (f"{wait} for {term('kv')} memory: the streams hold {facts.kv_held_tokens:,} of "
                f"the {facts.kv_capacity_tokens:,} tokens of KV that fit, so its "
                f"{facts.prompt_tokens:,} tokens do not fit beside them; it starts once {until}.")
    return f"{wait} before its first iteration starts."


def stall_story(trace: Trace, facts: Lane) -> str:
    """Home's "the stall" paragraph, from the unchunked run: what the prompt waited for, the
    iteration that carries it (the prompt iteration) and the streams' longest wait, each under
    its own name."""
    policy = POLICIES[trace.policy]
    head = f"{policy.intro}. **{policy.label}**: {policy.summary}."
    if math.isnan(facts.prompt_iteration_s):
        return head + " No new prompt arrives, so nothing holds the streams up."
    it = fmt_seconds(facts.prompt_iteration_s)
    with_decodes = (f" and {facts.decodes_in_it:,} stream tokens" if facts.decodes_in_it else "")
    out = (f"{head}{wait_story(facts)} The iteration that carries the prompt "
           f"({fmt_counted(facts.prompt_tokens_in_it, 'prompt token')}{with_decodes}) takes **{it}**.")
    if not facts.streams:
        return out + " No streams are running, so none waits for it."
    wait = fmt_seconds(facts.longest_wait_s)
    if facts.streams_finished_first:
        return out + " By then every stream has finished, so none waits for it."
    if not facts.decodes_in_it and _same(facts.longest_wait_s,
                                         facts.prompt_iteration_s + facts.next_iteration_s):
        return out + (" The streams get no token in it, so their longest wait is that iteration "
                      "plus the iteration after it, which brings their token: "
                      f"{it} + {fmt_seconds(facts.next_iteration_s)} = **{wait}**.")
    if _same(facts.longest_wait_s, facts.prompt_iteration_s):
        return out + f" Every stream's next token waits for all of it: their longest wait is **{wait}**."
    return out + f" The streams' longest wait between two tokens: **{wait}**."


def chunk_story(facts: Lane) -> str:
    """The chunk arithmetic as the run did it: C = B − D with the stream tokens its largest
    iteration carried, and why D is what it is there (streams finished, or a policy that runs
    chunks without them)."""
    budget, chunk, decodes = facts.budget, facts.largest_chunk, facts.decodes_in_it
    if decodes + chunk != budget:
        return ""
    rule = (f"Chunk = budget − stream tokens = {budget:,} − {decodes:,} = **{chunk:,} prompt "
            "tokens**")
    if decodes or not facts.streams:
        return f" {rule}."
    if facts.streams_finished_first:
        return f" With no stream left beside it: {rule}."
    if not facts.streams_at_longest:
        return f" By its longest iteration every stream had finished: {rule}."
    return (f" This policy runs the prompt's chunks without the streams' tokens, so: {rule}; "
            f"{facts.prefill_only_run:,} such iterations run back to back, "
            f"{fmt_seconds(facts.prefill_only_run_s)} in all, while every stream waits.")


def fix_story(trace: Trace, facts: Lane, before: Lane) -> str:
    """Home's "the fix" paragraph, from the chunked run: what the policy does, what the prompt
    waited for, the chunk arithmetic, and what it does to the streams' longest wait, by regime
    (no room for a chunk, the whole prompt fits in one iteration, or the prompt split)."""
    policy = POLICIES[trace.policy]
    budget, head = facts.budget, f"{policy.intro}. **{policy.label}**: {policy.summary}."
    if trace.starved_iterations and facts.wait_cause == "budget":
        return (f"{head}{wait_story(facts)} Then it goes through in "
                f"{fmt_counted(facts.prompt_iterations, 'iteration')} of up to "
                f"{fmt_counted(facts.largest_chunk, 'prompt token')}: its first token comes after "
                f"**{fmt_seconds(facts.ttft_s)}**. Raise the budget above the number of streams.")
    if math.isnan(facts.prompt_iteration_s):
        return head + " No new prompt arrives, so there is nothing to split."
    wait = (f"the streams' longest wait {fmt_change(before.longest_wait_s, facts.longest_wait_s)}"
            if facts.streams else "no streams are running")
    ttft = (f"the new request's first token comes after **{fmt_seconds(facts.ttft_s)}** "
            f"(unchunked: {fmt_seconds(before.ttft_s)})")
    if not facts.split:
        beside = (f" beside {facts.decodes_in_it:,} stream tokens" if facts.decodes_in_it else "")
        return (f"{head}{wait_story(facts, before)} Here the budget of {budget:,} tokens has room for the "
                f"whole {facts.prompt_tokens_in_it:,}-token prompt{beside}, so nothing is split: "
                "one iteration carries all of it, taking "
                f"**{fmt_seconds(facts.prompt_iteration_s)}**; {wait}, and {ttft}. A budget "
                f"smaller than {_fits_whole(facts)} splits it.")
    return (f"{head}{wait_story(facts, before)}{chunk_story(facts)} The prompt goes through in "
            f"{facts.prompt_iterations:,} iterations, the longest "
            f"**{fmt_seconds(facts.prompt_iteration_s)}**; {wait}, and {ttft}.")


def _fits_whole(facts: Lane) -> str:
    """The least budget that carries the whole prompt in one iteration, as this run filled it: the
    prompt plus the stream tokens beside it."""
    if not facts.decodes_in_it:
        return f"the {facts.prompt_tokens_in_it:,}-token prompt"
    return (f"the prompt plus the stream tokens beside it, {facts.prompt_tokens_in_it:,} + "
            f"{facts.decodes_in_it:,} = {facts.prompt_tokens_in_it + facts.decodes_in_it:,}")


def freeze_story(facts: Lane) -> str:
    """What the top lane's rows show while the prompt goes through, by whether streams freeze
    and, where none does, why (a short pass, or streams that finished before it)."""
    if not facts.streams:
        return ""   # the stall story has said that no stream runs
    threshold, wait = fmt_seconds(STALL_S), fmt_seconds(facts.longest_wait_s)
    if not facts.frozen_streams and facts.streams_finished_first:
        return (f"Their longest wait between two tokens, **{wait}**, came before the prompt "
                f"started and is under the {threshold} a reader notices: no stream freezes.")
    if not facts.frozen_streams:
        return (f"Here that wait is under the {threshold} a reader notices, so no stream "
                f"freezes: a {fmt_seconds(facts.prompt_iteration_s)} pass is too short to hurt. "
                "A longer prompt freezes them.")
    who = ("all of them" if facts.frozen_streams == facts.streams
           else f"{facts.frozen_streams:,} of the {facts.streams:,}")
    return (f"A gap over {threshold} counts as a freeze. In the player the top lane's rows go "
            f"blank under a growing shaded block: {who} stopped for up to {wait}.")


def _who_froze(facts: Lane) -> str:
    if facts.frozen_streams == facts.streams:
        return "every stream freezes"
    return f"{facts.frozen_streams:,} of the {facts.streams:,} streams freeze"


def home_intro(unchunked: Trace, chunked: Trace, cost: CostModel) -> str:
    """Home's opening paragraph: what the two lanes show in this scenario, by regime (Markdown,
    with glossary hovers)."""
    comparison = compare(unchunked, chunked, cost)
    u, c = comparison.unchunked, comparison.chunked
    prompt = f"{u.prompt_tokens:,}" if u.prompt_tokens else "no"
    top, bottom = _intro_lane(u), _intro_lane(c)
    if u.streams and not u.streams_finished_first:
        top = (f" and {_who_froze(u)}" if u.frozen_streams else
               f": the streams wait {fmt_seconds(u.longest_wait_s)}, too short to notice")
    if bottom and top and shown_same(u.queue_s, c.queue_s):
        bottom = ", after the same wait"
    if c.streams and not c.streams_finished_first:
        bottom = (" and the streams keep ticking" if not c.frozen_streams
                  else f" and {_who_froze(c)}")
    how = ("in chunks" if c.split else
           "in one iteration too (the budget holds all of it)")
    streams = (f"{fmt_counted(u.streams, 'user')} {'is' if u.streams == 1 else 'are'} reading "
               f"{'a reply' if u.streams == 1 else 'replies'} that arrive a token at a time "
               f"({fmt_counted(u.streams, 'stream')}) when"
               if u.streams else "No streams are running when")
    return (f"Why {first('llm')} servers split long prompts into chunks. {streams} a new "
            f"{prompt}-token prompt arrives. **Press Play.** Top lane: the server reads the whole "
            f"prompt in one pass{top}. Bottom lane: it reads the prompt {how}{bottom}, while "
            f"the new prompt's {first('ttft')} {fmt_change(u.ttft_s, c.ttft_s)}.")


def _intro_lane(facts: Lane) -> str:
    """The intro's clause for a lane whose prompt waited until every stream had finished."""
    if not facts.streams_finished_first:
        return ""
    cause = " for KV memory" if facts.wait_cause == "memory" else ""
    return (f", after waiting {fmt_seconds(facts.queue_s)}{cause} until every stream has "
            "finished, so none is left to freeze")


def prefill_regime(facts: Lane) -> str:
    """Why the prompt's pass takes the time it does: its arithmetic or its weight read (from
    the cost model's two times for that iteration, never a fixed token count)."""
    if facts.compute_bound:
        return (": a lot of arithmetic, more than reading the weights takes, so it is "
                f"{term('compute_bound')}")
    return (": so few tokens that reading the weights still takes longer than their arithmetic, so "
            f"this pass is {term('memory_bound')}, like a decode step")


def decode_regime(facts: Lane) -> str:
    if not facts.streams:
        return " (none are running here)"
    if facts.decode_compute_bound:
        return (f" (here {facts.streams:,} of them): so many that one token each is more "
                "arithmetic than reading the weights takes, so here decode is "
                f"{term('compute_bound')} too")
    return (f" (here {facts.streams:,} of them): little arithmetic, but every weight is read "
            f"again for it, so it is {term('memory_bound')}")


def pass_times(facts: Lane) -> str:
    """The decode step and the prompt iteration, each under its own name."""
    prompt = f"the whole prompt in one pass takes **{fmt_seconds(facts.prompt_iteration_s)}**"
    if not facts.streams:
        return f"Here {prompt}."
    return (f"Here a decode step of the {facts.streams:,} streams takes "
            f"**{fmt_seconds(facts.decode_step_s)}**; {prompt}.")


def freeze_title(facts: Lane) -> str:
    """Chapter 2's title: whether the prompt's pass freezes the streams, how many, and, where
    none freezes, why."""
    if math.isnan(facts.prompt_iteration_s):
        return "No new prompt, nothing to wait for"
    if not facts.streams:
        return "One prompt in one pass, no stream to freeze"
    if facts.streams_finished_first and not facts.frozen_streams:
        return "The streams finish before the prompt starts: none left to freeze"
    if not facts.frozen_streams:
        return "A pass this short freezes no stream"
    if facts.frozen_streams == facts.streams:
        return "One long prompt freezes every stream"
    return f"One long prompt freezes {facts.frozen_streams:,} of the {facts.streams:,} streams"


def ttft_causes(u: Lane, c: Lane) -> list[str]:
    """Why the chunked lane's first token comes later, as events of its run: a longer queue, and
    its iterations taking longer together than the unchunked lane's, with what they carried
    (stream tokens) and what bound them (the weights' read, however few tokens they hold). Empty
    where neither happened."""
    causes = []
    if c.queue_iterations and c.queue_s > u.queue_s and not shown_same(c.queue_s, u.queue_s):
        causes.append(f"it waits {fmt_seconds(c.queue_s)} before its first chunk "
                      f"(unchunked: {_seconds(u.queue_s)})")
    if c.prompt_time_s > u.prompt_time_s and not shown_same(c.prompt_time_s, u.prompt_time_s):
        why = []
        if c.shared_iterations:
            why.append(f"{_of(c.shared_iterations, c.prompt_iterations)} also "
                       f"{_verb(c.shared_iterations, 'carry')} the stream tokens")
        if c.weight_bound_iterations:
            why.append(f"{_of(c.weight_bound_iterations, c.prompt_iterations)} "
                       f"{_verb(c.weight_bound_iterations, 'take')} as long as reading the "
                       "weights, however few tokens "
                       f"{'it holds' if c.weight_bound_iterations == 1 else 'they hold'}")
        causes.append(f"its {fmt_counted(c.prompt_iterations, 'iteration')} "
                      f"{_verb(c.prompt_iterations, 'take')} "
                      f"{fmt_seconds(c.prompt_time_s)} together, against "
                      f"{fmt_seconds(u.prompt_time_s)} unchunked"
                      + (f" ({'; '.join(why)})" if why else ""))
    return causes


def _of(part: int, whole: int) -> str:
    """Which of the prompt's iterations: "it" (its only one), "all 16" or "3 of them"."""
    if whole == 1:
        return "it"
    return f"all {whole:,}" if part == whole else f"{part:,} of them"


def _verb(n: int, verb: str) -> str:
    """The verb agreeing with a count: "1 takes", "16 take"."""
    if n != 1:
        return verb
    return verb[:-1] + "ies" if verb.endswith("y") else verb + "s"


def split_title(facts: Lane) -> str:
    """Chapter 3's title: "split it" only where the budget does split the prompt (as the
    chapter's text, a starved prompt first)."""
    rule = "budget B, a chunk C = B − D"
    if facts.starved_iterations:
        return f"A {rule}: here the streams' decode tokens fill the budget first"
    if facts.split:
        return f"Split it: a {rule}"
    if math.isnan(facts.prompt_iteration_s):
        return f"A {rule}: here no prompt to split"
    return f"A {rule}: here the budget holds the whole prompt"


def _gain(comparison: Comparison) -> str:
    """What chunking buys the streams here: "gain" (a shorter wait, and no more freezes), "fewer"
    (fewer freezes only), "little" (a shorter wait only), "nothing", or "no streams"; or what
    else shaped the streams' waits: "left out" (a budget smaller than the streams froze some of
    them, prompt or not), "waited" (the prompt waited until every stream had finished, so the
    streams' pace owes nothing to its chunks)."""
    u, c = comparison.unchunked, comparison.chunked
    if not u.streams:
        return "no streams"
    if c.left_out_iterations and c.frozen_streams:
        return "left out"
    if c.streams_finished_first and not u.streams_finished_first:
        return "waited"
    if comparison.shorter_wait and (comparison.fewer_frozen or not comparison.chunked.frozen_streams):
        return "gain"
    if comparison.fewer_frozen:
        return "fewer"
    return "little" if comparison.shorter_wait else "nothing"


TRADE_TITLES = {"gain": "What it costs, what it buys",
                "left out": "What it costs; here the budget leaves streams out",
                "waited": "What it costs; the streams keep their pace only because the prompt waits",
                "fewer": "What it costs, what it buys: fewer freezes only",
                "little": "What it costs, what it buys: little here",
                "nothing": "What it costs; here it buys nothing",
                "no streams": "What it costs; with no streams, it buys nothing"}


def trade_title(comparison: Comparison) -> str:
    """Chapter 4's title: a gain only where there is one."""
    return TRADE_TITLES[_gain(comparison)]


def trade_story(comparison: Comparison, reread: str) -> str:
    """Home's "what it costs, what it buys" paragraph: a gain only where there is one, and as a
    cause only what the chunked run did."""
    u, c = comparison.unchunked, comparison.chunked
    threshold = fmt_seconds(STALL_S)
    gain = _gain(comparison)
    if gain == "no streams":
        return ("No streams are running, so chunking has no gap to shorten; the new request's "
                f"{term('ttft')} is {fmt_seconds(c.ttft_s)} chunked, {fmt_seconds(u.ttft_s)} unchunked.")
    gap = f"the streams' longest wait {fmt_change(u.longest_wait_s, c.longest_wait_s)}"
    if u.frozen_streams == c.frozen_streams:
        frozen = (f"no stream freezes in either lane (no gap over {threshold})"
                  if not u.frozen_streams else
                  f"{c.frozen_streams:,} of the {c.streams:,} streams still freeze (a gap over "
                  f"{threshold}), as unchunked")
    else:
        frozen = (f"{c.frozen_streams:,} of the {c.streams:,} streams freeze (a gap over "
                  f"{threshold}) instead of {u.frozen_streams:,}")
    why_not = ("" if c.split or c.starved_iterations
               else " (the budget holds the whole prompt, so nothing is split)")
    if gain == "left out":
        buys = (f"Here the budget of {fmt_counted(c.budget, 'token')} is smaller than the "
                f"{c.streams:,} streams: {left_out_story(c)} So {frozen}, and {gap}.")
    elif gain == "waited":
        buys = (f"Here chunking buys no shorter stall: the streams keep their pace only because "
                f"the prompt waits {fmt_seconds(c.queue_s)} until every stream has finished; "
                f"{gap}, and {frozen}.")
    elif gain == "gain":
        buys = f"It buys: {gap}, and {frozen}."
    elif gain == "fewer":
        buys = f"It buys fewer freezes, {frozen}; but {gap}."
    elif gain == "little":
        buys = (f"It buys little here: {gap}, and {frozen}: a chunk of {c.largest_chunk:,} "
                "tokens is still a long iteration. A smaller budget buys more.")
    else:
        buys = f"Here it buys nothing{why_not}: {gap}, and {frozen}."
    if c.prefill_only_run > 1:
        buys += (f" Its {c.prefill_only_run:,} prompt iterations run back to back without the "
                 f"streams' tokens, {fmt_seconds(c.prefill_only_run_s)} in all, and every stream "
                 "waits through them.")
    ttft = f"the new request's {term('ttft')} {fmt_change(u.ttft_s, c.ttft_s)}"
    if not (c.ttft_s > u.ttft_s and not shown_same(c.ttft_s, u.ttft_s)):
        costs = f" And {ttft}"
    else:
        causes = ttft_causes(u, c)
        costs = f" It costs: {ttft}" + (f", because {_listed(causes)}" if causes else "")
    if c.split and c.decodes_in_it and not c.starved_iterations:
        if shown_same(c.prompt_iteration_s, c.decode_step_s):
            costs += (f"; each iteration that carries a chunk takes no longer than "
                      f"{_decode_step(c, u)}: reading the weights sets its time, so "
                      "the streams keep their pace")
        elif c.prompt_iteration_s > c.decode_step_s:
            costs += (f"; and each iteration that carries a chunk takes up to "
                      f"{fmt_seconds(c.prompt_iteration_s)} instead of {_decode_step(c, u)}, and "
                      "every stream waits for each of them")
    return buys + costs + "." + (f" {reread}" if reread else "")


def _decode_step(lane: Lane, unchunked: Lane) -> str:
    """The decode step by its one value (chapter 1's, the unchunked engine's), or, where this lane's
    engine prices it differently (its own CPU overhead), by that engine's name."""
    step = fmt_seconds(lane.decode_step_s)
    if step == fmt_seconds(unchunked.decode_step_s):
        return f"a {step} decode step"
    return f"{POLICIES[lane.policy].engine}'s {step} decode step"


def left_out_story(facts: Lane) -> str:
    """What a budget smaller than the streams does to them: some get no token at all, a freeze
    no prompt causes."""
    return (f"in {fmt_counted(facts.left_out_iterations, 'iteration')} it holds only some of their "
            f"decode tokens, leaving up to {fmt_counted(facts.most_left_out, 'stream')} without a token, "
            "a freeze that no prompt causes.")


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def reread_story(facts: Lane, cost: CostModel) -> str:
    """What later chunks re-read: the KV of the prompt tokens before them (the worked example
    prices it the same way), and whether this cost mode counts it."""
    if not facts.reread_tokens:
        return ""
    per_token = cost.kv_bytes_per_token
    total = facts.reread_tokens * per_token
    bandwidth = cost.gpu.bandwidth
    counted = ("the simple cost mode leaves it out, as the arithmetic of the lab's source "
               f"article, *{SOURCE_ARTICLE}*, does"
               if cost.mode == "simple" else f"the {cost.mode} cost mode counts it in each chunk's "
               "iteration")
    return (f"Each chunk after the first also re-reads the {first('kv')} cache of the prompt "
            "tokens before "
            f"it: {facts.reread_tokens:,} token-reads × {fmt_bytes(per_token)} = "
            f"{fmt_bytes(total)}, {fmt_seconds(total / bandwidth)} at "
            f"{bandwidth / 1e12:,.4g} TB/s ({counted}).")


def card_delta(card: Card, ref: Card, ratio: bool = True) -> str | None:
    """card − ref, with the ratio card / ref − 1 unless `ratio` is False, e.g. "+84 ms (+26%)";
    None when they are equal as shown, or either is undefined."""
    d = card.seconds - ref.seconds
    if not d or math.isnan(d) or card.value == ref.value:
        return None
    size = fmt_seconds(abs(d)) if card.unit == "s" else f"{abs(d):,.0f} {card.unit}"
    share = f" ({card.seconds / ref.seconds - 1:+.0%})" if ratio and ref.seconds else ""
    return f"{'+' if d > 0 else '-'}{size}{share}"   # st.metric reads the ASCII sign


def _seconds(s: float) -> str:
    return "0 ms" if s == 0 else fmt_seconds(s)


def lane_cards(trace: Trace, mode: str, tp: int = 1) -> list[Card]:
    """The numbers under a lane, the stall first: the streams' longest wait, how many froze and
    for how long, the new request's TTFT, and the steady inter-token latency (p99), each with how
    it is computed (`mode`: the cost mode, `tp`: the tensor-parallel degree)."""
    rule = cost_rule(mode, tp)
    times = request_times(trace)
    frozen = stalls(trace, STALL_S, trace.prefilled)
    every = stalls(trace, STALL_S)
    threshold = fmt_seconds(STALL_S)
    gap = frozen.largest_gap_s
    cards = [Card(
        GAP, fmt_seconds(gap),
        f"the streams' longest wait: max over the {frozen.streams:,} running streams of (time of "
        f"token k+1 − time of token k) = **{fmt_seconds(gap)}**. A stream waits for every "
        "iteration it is not in, and for the whole of each one it is in: one long prefill "
        "iteration is one long gap.", gap),
        Card(FROZEN, f"{frozen.frozen_streams:,} of {frozen.streams:,}",
             f"running streams with at least one freeze, a gap between two tokens longer than "
             f"{threshold}, about the longest pause that still feels instantaneous "
             f"({STALL_SOURCE}): "
             f"**{frozen.frozen_streams:,}** of {frozen.streams:,}.", float(frozen.frozen_streams),
             "streams"),
        Card(FROZEN_TIME, _seconds(frozen.frozen_per_stream_s),
             f"mean over the {frozen.streams:,} running streams of the sum of their freezes, each "
             f"a gap longer than {threshold} counted whole = "
             f"**{_seconds(frozen.frozen_per_stream_s)}**: how long each stream stood still.",
             frozen.frozen_per_stream_s)]
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
            f"first iteration ({_seconds(times.queue_s[r])}) plus the "
            f"{fmt_counted(n_prefill, 'iteration')} that carried its prompt, each priced {rule}.", ttft))
    cards.append(Card(
        STEADY, fmt_seconds(every.steady_gap_s),
        f"99th percentile (linear interpolation) of all {every.gaps:,} gaps between successive "
        f"tokens of any request = **{fmt_seconds(every.steady_gap_s)}**: 99% of the gaps are at "
        f"most this long (the longest {fmt_seconds(every.largest_gap_s)})."
        + (f" The largest gap is {every.largest_gap_s / every.steady_gap_s:,.3g}× the p99: a long "
           "gap that hits each stream once is a small share of its gaps, so the p99 leaves it out."
           if every.largest_gap_s > 2 * every.steady_gap_s else "")
        + f" Over the run: {trace.iterations:,} iterations, each priced {rule}.",
        every.steady_gap_s))
    return cards


def trade_notes(unchunked: Trace, chunked: Trace, cards_u: list[Card],
                cards_c: list[Card], cost: CostModel) -> dict[str, str]:
    """The sentence beside each chunked-lane number that got worse, by card label: what the
    fix costs, and why, as events of the run (a red arrow never stands alone)."""
    u = {c.label: c for c in cards_u}
    comparison = compare(unchunked, chunked, cost)
    before, facts = comparison.unchunked, comparison.chunked
    notes = {}
    for card in cards_c:
        ref = u.get(card.label)
        if ref is None or card_delta(card, ref) is None or card.seconds < ref.seconds:
            continue
        if card.label == TTFT:
            causes = ttft_causes(before, facts)
            notes[card.label] = ("The price of chunking: its first token comes later, because "
                                 f"{_listed(causes)}." if causes else
                                 "Its first token comes later here.")
        elif card.label == STEADY and facts.prompt_iteration_s > facts.decode_step_s:
            notes[card.label] = (f"Also a price: while the prompt is prefilled its iterations take "
                                 f"up to {fmt_seconds(facts.prompt_iteration_s)} instead of "
                                 f"{_decode_step(facts, before)}. The "
                                 "unchunked lane's longest wait is longer, but it hits each stream "
                                 "once, too rarely to reach the p99.")
        elif facts.prefill_only_run > 1:
            notes[card.label] = (f"Worse here: this policy runs {facts.prefill_only_run:,} of the "
                                 "prompt's iterations back to back without the streams' tokens, "
                                 f"{fmt_seconds(facts.prefill_only_run_s)} in all, and every "
                                 "stream waits through them: the stall chunking should prevent.")
        elif facts.prompt_iteration_s > before.prompt_iteration_s:
            notes[card.label] = ("Worse here: this policy's prompt iterations are longer than the "
                                 "unchunked lane's (see the bars).")
        else:
            notes[card.label] = "Worse here (see the bars)."
    return notes


def _stream_context(trace: Trace) -> int:
    """The context the streams hold when the prompt arrives (the textbook's streams hold one)."""
    contexts = trace.prompt[trace.prefilled]
    return int(contexts.max()) if len(contexts) else 0


def dial_story(facts: Lane, cost: CostModel, context: int, prompt: int) -> str:
    """What a larger budget does to the streams here: nothing up to the budget whose iteration
    still costs no more than their decode step (reading the weights sets its time, so a chunk
    that small rides free), every stream waiting for the longer iteration above it. Read off the
    cost model's iteration at each budget (`largest_budget_within`), on the lane's engine."""
    if not facts.streams:
        return ": with no stream running, a larger iteration keeps no one waiting"
    free = largest_budget_within(cost.for_engine(POLICIES[facts.policy].overhead), facts.streams,
                                 context, facts.decode_step_s, prompt)
    longer = "; above it each one takes longer, and every stream waits for it"
    if free is None:
        return ("; but here one prompt token beside the streams already makes an iteration "
                f"longer than their {fmt_seconds(facts.decode_step_s)} decode step, and every "
                "stream waits for each longer iteration")
    if free >= facts.streams + prompt:
        longer = ", the whole prompt included"
    return (f". Up to a budget of {free:,} here, an iteration costs no more than the streams' "
            f"{fmt_seconds(facts.decode_step_s)} decode step (its memory reads set its time), "
            f"so a chunk of up to {free - facts.streams:,} tokens beside them rides free{longer}")


def story_fields(unchunked: Trace, chunked: Trace, cost: CostModel) -> dict[str, str]:
    """Every field Home's chapters (ui.shell.story.CHAPTERS) and the tour quote, from the two lanes'
    runs (`cost`: the cost model they ran on), each sentence chosen by the regime it describes."""
    comparison = compare(unchunked, chunked, cost)
    u, c = comparison.unchunked, comparison.chunked
    new = np.flatnonzero(~unchunked.prefilled)
    return dict(
        decodes=f"{u.streams:,}",
        prompt=f"{int(unchunked.prompt[new[0]]):,}" if len(new) else "0",
        decode_step=fmt_seconds(u.decode_step_s),
        decode_regime=decode_regime(u),
        pass_times=pass_times(u),
        prompt_pass=fmt_seconds(u.prompt_iteration_s),
        prefill_regime=prefill_regime(u),
        prefill_step=fmt_seconds(c.prompt_iteration_s),
        stall_story=stall_story(unchunked, u),
        freeze_story=freeze_story(u),
        freeze_title=freeze_title(u),
        split_title=split_title(c),
        trade_title=trade_title(comparison),
        fix_story=fix_story(chunked, c, u),
        gap_change=fmt_change(u.longest_wait_s, c.longest_wait_s),
        trade_story=trade_story(comparison, reread_story(c, cost)),
        froze_u=f"{u.frozen_streams:,}",
        froze_c=f"{c.frozen_streams:,}",
        stall=fmt_seconds(STALL_S),
        dial_story=dial_story(u, cost, _stream_context(unchunked), u.prompt_tokens),
        ttft_u=fmt_seconds(u.ttft_s), ttft_c=fmt_seconds(c.ttft_s))


def player_cue(cards_u: list[Card], cards_c: list[Card], streams: int) -> str:
    """What to watch, shown above the player until it plays (plain text)."""
    u, c = ({card.label: card for card in cards} for cards in (cards_u, cards_c))
    ttfts = (f" The new request's first token: {u[TTFT].value} unchunked, {c[TTFT].value} chunked."
             if TTFT in u else "")
    if not streams:
        return "Press Play: no streams are running, so nothing can freeze." + ttfts
    return (f"Press Play and watch the rows: one per stream ({streams:,}), a tick per token. "
            f"Unchunked lane: the streams wait up to {u[GAP].value} for a token. "
            f"Chunked lane: up to {c[GAP].value}." + ttfts)


def timeline_legend() -> str:
    """How to read the side-by-side timeline (Markdown)."""
    return ("How to read it: in each lane the bars are iterations, as wide as they run (blue: "
            "decode tokens, orange: prefill tokens). Under them, each row is a stream and each "
            "tick a token it receives; a grey block grows over a row while it waits and turns red "
            f"once the wait is a freeze (a gap over {fmt_seconds(STALL_S)}), staying red after; the "
            "dashed line marks the largest gap so far. The new request's tokens are teal. *Streams "
            "frozen for*: how long the longest-waiting stream has gone without a token, once that "
            f"is over {fmt_seconds(STALL_S)} (until then the lane reads *no stream frozen*).")


def timeline_titles() -> str:
    """Under the side-by-side timeline (Markdown with glossary hovers): what the counters say once
    the run is over, and what a lane's title names (kept below the player, so that the lines above
    it leave the player its room on the first screen)."""
    return ("At the end of the run each lane's counter says what happened: how many streams froze "
            "and for up to how long, or *no stream froze*. A lane's title names its policy, how it "
            f"batches in brackets (e.g. {term('stall_free')}, {term('prefill_first')}) and the "
            "budget it runs at: vLLM V0 never splits a prompt, so it runs at its "
            f"{term('own_budget')}, large enough for any prompt.")


def rows_note(streams: int, rows: int, per_row: int, bin_ms: float | None) -> str:
    """Say how the streams' rows were thinned for display."""
    parts = []
    if per_row > 1:
        parts.append(f"{streams:,} streams drawn as {rows:,} rows of up to {per_row:,} (a row "
                     "ticks when any of its streams gets a token)")
    if bin_ms is not None:
        parts.append(f"ticks thinned to about one per {bin_ms:,.3g} ms, keeping both ends of "
                     "every longer gap, so no freeze is shortened")
    return "; ".join(parts) + ", to keep the page light. Every metric uses every token."
