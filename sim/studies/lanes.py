"""What a scenario's two lanes show, as numbers: the facts every sentence about them quotes
(Home's chapters, the metric cards, the player's cue, the tour), computed once from the runs so
that no page says one idea with two values.

Two quantities are easy to mix up and are kept apart here:
- the **prompt iteration**: the longest iteration that carries the new prompt's tokens (327.7 ms
  at the defaults, the source article's "whole prompt in one pass");
- the streams' **longest wait**: the largest gap between two tokens of a running stream (333 ms at
  the defaults: that iteration plus the decode step after it, which brings the token).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.serving.engine import Trace
from sim.serving.metrics import request_times
from sim.studies.stalls import STALL_S, stalls


@dataclass(frozen=True)
class Lane:
    """One run of the textbook scenario (streams running, one new prompt arriving), as facts."""
    policy: str
    budget: int
    streams: int                # running streams counted (those with two tokens or more)
    decode_step_s: float        # the decode-only iteration after the prompt's last (NaN: none)
    decode_compute_bound: bool  # that step's arithmetic takes longer than its memory reads
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

    @property
    def split(self) -> bool:
        """The prompt went through in more than one iteration."""
        return self.prompt_iterations > 1


def lane(trace: Trace) -> Lane:
    """The facts of one lane, from its run."""
    new = np.flatnonzero(~trace.prefilled)
    frozen = stalls(trace, STALL_S, trace.prefilled)
    carrying = np.unique(trace.chunk_iteration[np.isin(trace.chunk_request, new)])
    if len(carrying):
        longest = int(carrying[np.argmax(trace.duration_s[carrying])])
        prompt_s = float(trace.duration_s[longest])
        in_it = int(trace.chunk_length[(trace.chunk_iteration == longest)
                                       & np.isin(trace.chunk_request, new)].sum())
        decodes_in_it = int(trace.decode_tokens[longest])
        compute_bound = bool(trace.compute_s[longest] > trace.memory_s[longest])
        largest_chunk = int(trace.chunk_length[np.isin(trace.chunk_request, new)].max())
        after = int(carrying.max()) + 1
    else:
        prompt_s, in_it, decodes_in_it, compute_bound, largest_chunk, after = (
            math.nan, 0, 0, False, 0, 0)
    decode_only = np.flatnonzero((trace.prefill_tokens == 0) & (trace.decode_tokens > 0))
    later = decode_only[decode_only >= after]
    step = later[0] if len(later) else (decode_only[0] if len(decode_only) else None)
    ttft = float(request_times(trace).ttft_s[new[0]]) if len(new) else math.nan
    return Lane(trace.policy, trace.budget, frozen.streams,
                math.nan if step is None else float(trace.duration_s[step]),
                step is not None and bool(trace.compute_s[step] > trace.memory_s[step]), prompt_s, in_it,
                decodes_in_it, compute_bound, len(carrying), largest_chunk, frozen.largest_gap_s,
                frozen.frozen_streams, frozen.frozen_per_stream_s, ttft, trace.starved_iterations,
                int(trace.chunk_start[np.isin(trace.chunk_request, new)].sum()))


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


def compare(unchunked: Trace, chunked: Trace) -> Comparison:
    return Comparison(lane(unchunked), lane(chunked))
