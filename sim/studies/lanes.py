"""What a scenario's two lanes show, as numbers: the facts every sentence about them quotes
(Home's chapters, the metric cards, the player's cue, the tour), computed once from the runs so
that no page says one idea with two values.

Three quantities are easy to mix up and are kept apart here:
- the **decode step**: the running streams' decode tokens alone in one iteration, priced at the
  context they hold when the prompt arrives (5.333 ms at the defaults);
- the **prompt iteration**: the longest iteration that carries the new prompt's tokens (327.7 ms
  at the defaults, the source article's "whole prompt in one pass");
- the streams' **longest wait**: the largest gap between two tokens of a running stream (333 ms at
  the defaults: that iteration plus the one after it, which brings the token).

The events say why: how long the prompt queued and for what (a budget the streams' decodes take
whole, or KV memory the streams hold), whether streams were still running when it started,
which of its iterations carried stream tokens, ran back to back without them, or were bound by
the weights' read; and whether a budget smaller than the streams left some of them out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.cost.iteration import Composition, CostModel, IterationCost, prefix_read
from sim.serving.engine import Trace
from sim.serving.metrics import RequestTimes, request_times
from sim.serving.policies import POLICIES
from sim.studies.stalls import STALL_S, stalls


@dataclass(frozen=True)
class Lane:
    """One run of the textbook scenario (streams running, one new prompt arriving), as facts: its
    numbers, and the events that explain them, each read off the trace."""
    policy: str
    budget: int
    streams: int                # running streams counted (those with two tokens or more)
    decode_step_s: float        # the streams' decode step: D decode tokens alone, priced (NaN: none)
    decode_compute_bound: bool  # that step's arithmetic takes longer than its memory reads
    next_iteration_s: float     # the iteration after the prompt's last (NaN: none)
    prompt_iteration_s: float   # the longest iteration carrying the new prompt (NaN: no prompt)
    prompt_tokens_in_it: int    # the new prompt's tokens in that iteration
    decodes_in_it: int          # decode tokens (stream tokens) in that iteration
    compute_bound: bool         # that iteration's arithmetic takes longer than its memory reads
    prompt_iterations: int      # iterations that carry the new prompt's tokens
    largest_chunk: int          # the most prompt tokens one of them carries
    longest_wait_s: float       # the largest gap between two tokens of a running stream
    frozen_streams: int         # streams with a gap over STALL_S (a freeze)
    frozen_per_stream_s: float  # mean over the streams of their freezes' whole lengths
    ttft_s: float               # the new prompt's time to first token (NaN: no prompt)
    starved_iterations: int     # iterations whose budget the decodes took whole
    reread_tokens: int          # KV of earlier prompt tokens each chunk re-reads, summed
    # --- what happened to the prompt, as events -------------------------------------------------
    prompt_tokens: int          # the new prompt's length
    queue_s: float              # arrival to its first iteration's start (NaN: no prompt)
    queue_iterations: int       # iterations that ran while it waited
    wait_cause: str             # why it waited: "" (it did not), "budget", "memory" or "other"
    kv_held_tokens: int         # KV held when it began to wait (the streams'), of ...
    kv_capacity_tokens: int     # ... the KV that fits
    streams_at_start: int       # streams still running when its first iteration starts
    prompt_time_s: float        # its iterations' time together
    shared_iterations: int      # its iterations that also carry stream tokens
    prefill_only_run: int       # most of its iterations back to back with no stream token, streams running
    prefill_only_run_s: float   # their time together
    weight_bound_iterations: int  # its iterations whose memory reads take longer than their arithmetic
    # --- what the budget did to the streams ----------------------------------------------------
    left_out_iterations: int    # iterations whose budget held some running streams' tokens, not all
    most_left_out: int          # the most streams one such iteration left out
    streams_at_longest: int     # streams still running when the prompt's longest iteration began

    @property
    def split(self) -> bool:
        """The prompt went through in more than one iteration."""
        return self.prompt_iterations > 1

    @property
    def streams_finished_first(self) -> bool:
        """Every stream had emitted its last token before the prompt's first iteration began."""
        return self.streams > 0 and self.streams_at_start == 0


def streams_step(cost: CostModel, policy: str, contexts: tuple[int, ...]) -> IterationCost:
    """The streams' decode step, one value for every page: one iteration of the running streams'
    decode tokens alone at the contexts they hold, priced on `policy`'s engine (the Roofline
    table's "decodes alone")."""
    return cost.for_engine(POLICIES[policy].overhead).price(Composition(contexts))


def decode_step_s(trace: Trace, cost: CostModel) -> tuple[float, bool]:
    """A lane's decode step (`streams_step` at the streams' context when the prompt arrives), and
    whether its arithmetic bounds it."""
    contexts = tuple(int(n) for n in trace.prompt[trace.prefilled])
    if not contexts:
        return math.nan, False
    priced = streams_step(cost, trace.policy, contexts)
    return priced.time_s, priced.compute_s > priced.memory_s


def lane(trace: Trace, cost: CostModel) -> Lane:
    """The facts of one lane, from its run (`cost`: the cost model it ran on)."""
    new = np.flatnonzero(~trace.prefilled)
    frozen = stalls(trace, STALL_S, trace.prefilled)
    mine = np.isin(trace.chunk_request, new)
    carrying = np.unique(trace.chunk_iteration[mine])
    step_s, step_compute_bound = decode_step_s(trace, cost)
    times = request_times(trace)
    running = streams_running(trace, times)
    if len(carrying):
        longest = int(carrying[np.argmax(trace.duration_s[carrying])])
        prompt_s = float(trace.duration_s[longest])
        in_it = int(trace.chunk_length[(trace.chunk_iteration == longest) & mine].sum())
        decodes_in_it = int(trace.decode_tokens[longest])
        compute_bound = bool(trace.compute_s[longest] > trace.memory_s[longest])
        largest_chunk = int(trace.chunk_length[mine].max())
        after = int(carrying.max()) + 1
        next_s = float(trace.duration_s[after]) if after < trace.iterations else math.nan
        running_then = running(trace.start_s[longest])
    else:
        prompt_s, in_it, decodes_in_it, compute_bound, largest_chunk, next_s = (
            math.nan, 0, 0, False, 0, math.nan)
        running_then = 0
    ttft = float(times.ttft_s[new[0]]) if len(new) else math.nan
    # streams a budget smaller than them left out (an iteration with no stream token at all is a
    # prefill-only one: its own event)
    left_out = np.where(trace.decode_tokens > 0, trace.running_decoders - trace.decode_tokens, 0)
    reread = int(prefix_read(trace.chunk_start[mine], cost.model.sliding_window).sum())
    return Lane(trace.policy, trace.budget, frozen.streams, step_s, step_compute_bound, next_s,
                prompt_s, in_it, decodes_in_it, compute_bound, len(carrying), largest_chunk,
                frozen.largest_gap_s,
                frozen.frozen_streams, frozen.frozen_per_stream_s, ttft, trace.starved_iterations,
                reread, **_prompt_events(trace, new, carrying, running),
                left_out_iterations=int(np.count_nonzero(left_out > 0)),
                most_left_out=int(left_out.max(initial=0)), streams_at_longest=running_then)


def _prompt_events(trace: Trace, new: np.ndarray, carrying: np.ndarray,
                   running: Callable[[float], int]) -> dict:
    """What happened to the new prompt: how long it queued and why, which streams were still
    running when it started, and what its iterations carried."""
    if not len(carrying):
        return dict(prompt_tokens=0, queue_s=math.nan, queue_iterations=0, wait_cause="",
                    kv_held_tokens=0, kv_capacity_tokens=trace.kv_capacity_tokens,
                    streams_at_start=0, prompt_time_s=0.0, shared_iterations=0, prefill_only_run=0,
                    prefill_only_run_s=0.0, weight_bound_iterations=0)
    arrival, prompt = float(trace.arrival_s[new[0]]), int(trace.prompt[new[0]])
    start = float(trace.start_s[carrying[0]])
    waited = np.flatnonzero((trace.start_s >= arrival) & (np.arange(trace.iterations) < carrying[0]))
    held = int(trace.kv_used_tokens[waited[0]]) if len(waited) else 0
    if not len(waited):
        cause = ""
    elif trace.starved_iterations and np.any(trace.decode_tokens[waited] >= trace.budget):
        cause = "budget"
    elif trace.kv_capacity_tokens - held < prompt:
        cause = "memory"
    else:
        cause = "other"
    prefill_only = [int(i) for i in carrying
                    if not trace.decode_tokens[i] and running(trace.start_s[i])]
    run, run_s = _longest_back_to_back(prefill_only, trace.duration_s)
    return dict(prompt_tokens=prompt, queue_s=start - arrival, queue_iterations=len(waited),
                wait_cause=cause, kv_held_tokens=held,
                kv_capacity_tokens=trace.kv_capacity_tokens, streams_at_start=running(start),
                prompt_time_s=float(trace.duration_s[carrying].sum()),
                shared_iterations=int(np.count_nonzero(trace.decode_tokens[carrying])),
                prefill_only_run=run, prefill_only_run_s=run_s,
                weight_bound_iterations=int(np.count_nonzero(
                    trace.memory_s[carrying] >= trace.compute_s[carrying])))


def streams_running(trace: Trace, times: RequestTimes) -> Callable[[float], int]:
    """How many streams (requests already streaming at the start) still have a token to come
    after time t, as a function of t: their last tokens, sorted once."""
    last = times.finish_s[trace.prefilled]
    last = np.sort(last[~np.isnan(last)])
    return lambda t: int(len(last) - np.searchsorted(last, t, side="right"))


def _longest_back_to_back(iterations: list[int], duration_s: np.ndarray) -> tuple[int, float]:
    """The longest run of consecutive iteration numbers in `iterations`, and its time."""
    best, best_s, run, run_s = 0, 0.0, 0, 0.0
    for k, i in enumerate(iterations):
        run, run_s = (run + 1, run_s + duration_s[i]) if k and i == iterations[k - 1] + 1 \
            else (1, float(duration_s[i]))
        if run > best:
            best, best_s = run, run_s
    return best, float(best_s)


@dataclass(frozen=True)
class Comparison:
    """The two lanes side by side: what chunking buys and what it costs in this scenario."""
    unchunked: Lane
    chunked: Lane

    @property
    def shorter_wait(self) -> bool:
        """Chunking shortens the streams' longest wait by more than 0.1%, a gain worth reporting
        (a smaller change does not show in four significant figures)."""
        return self.chunked.longest_wait_s < self.unchunked.longest_wait_s * (1 - 1e-3)

    @property
    def fewer_frozen(self) -> bool:
        return self.chunked.frozen_streams < self.unchunked.frozen_streams


def compare(unchunked: Trace, chunked: Trace, cost: CostModel) -> Comparison:
    return Comparison(lane(unchunked, cost), lane(chunked, cost))
