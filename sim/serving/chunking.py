"""How big a request's next prompt chunk is: fixed (what the token budget leaves, the lab's rule
everywhere) or dynamic, SGLang's dynamic chunking, which sizes each chunk so its time stays level
as the prompt's prefix grows.

SGLang 0.5.23 (python/sglang/srt/managers/scheduler_components/dynamic_chunk_sizer.py) turns it on
only with pipeline parallelism (`--enable-dynamic-chunking` and pp_size > 1, scheduler.py:1383):
a chunk that takes longer than its neighbours leaves the later stages idle. At start-up the first
stage times 128 lone prefills of lengths from 1.25 x the base chunk down (:145-153), fits
f(l) = a*l^2 + b*l + c by least squares, the first sample left out (:281-298; a <= 0 disables it,
a negative b is set to 0: :305-316), and sets the target T = f(base) - f(0) (:338). Each later
chunk of the request being chunked, after `history` tokens, is the x with
f(history + x) - f(history) = T (:368-383), smoothed towards the base, base + 0.75 (x - base)
(:393-396; SGLANG_DYNAMIC_CHUNKING_SMOOTH_FACTOR, environ.py:652), at least a quarter of the base
(:398), rounded down to 64 tokens (:400-417) and at most max_prefill_tokens (:409-412). The
scheduler asks it only for the request it is chunking (`chunked_req`, scheduler.py:4143-4147); a
new request's first chunk is the base.

The lab prices the profile on the same cost model as the run (the first stage's time for a
pipeline, as SGLang's first stage measures it, without the CPU overhead its engine adds), and
applies the size as a cap on that request's chunk (`PREFILL_CAPS`, sim/serving/policies.py).
SGLang sizes the whole prefill batch with it; the lab leaves what the budget has left to other
requests, as it does for every cap. SGLang's `context_len - history - 100` bound is not modelled:
a prompt's tokens left already bound its chunk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.cost.iteration import CostModel, attended_pairs

CHUNKINGS = ("fixed", "dynamic")
# each as a reader is shown it (a link and the command line spell its key)
CHUNKING_NAMES = {"fixed": "Fixed: what the budget leaves",
                  "dynamic": "Dynamic: SGLang's, each chunk's time level"}
SMOOTH_FACTOR = 0.75          # SGLANG_DYNAMIC_CHUNKING_SMOOTH_FACTOR (environ.py:652)
PROFILE_SAMPLES = 128         # dynamic_chunk_sizer.py:151
PROFILE_REACH = 1.25          # the longest sample, x the base chunk (:146)
ALIGNMENT = 64                # max(page_size, 64) with SGLang's default page size of 1 (:401)
MAX_PREFILL_TOKENS = 16384    # SGLang's --max-prefill-tokens default, the most a chunk may take
MIN_FIT_SAMPLES = 8           # fewer and the fit is refused (:284-288)


@dataclass(frozen=True)
class DynamicChunks:
    """SGLang's fitted prefill time f(l) = a l^2 + b l + c (seconds, l tokens) and the base chunk
    it levels chunks to. `target_s` = f(base) - f(0), the time each chunk is sized to add."""
    a: float
    b: float
    c: float
    base: int

    @property
    def target_s(self) -> float:
        return self.f(self.base) - self.f(0)

    def f(self, length: float) -> float:
        return self.a * length * length + self.b * length + self.c

    def exact(self, history: int) -> float:
        """The chunk x with f(history + x) - f(history) = target, before smoothing:
        the positive root of a x^2 + (2 a history + b) x - target = 0."""
        b = 2 * self.a * history + self.b
        return (-b + math.sqrt(b * b + 4 * self.a * self.target_s)) / (2 * self.a)

    def chunk(self, history: int) -> int:
        """The next chunk of a request `history` tokens into its prompt, as SGLang sizes it:
        smoothed towards the base, at least a quarter of it, rounded down to 64 tokens (at least
        64), at most max_prefill_tokens."""
        smoothed = self.base + SMOOTH_FACTOR * (self.exact(history) - self.base)
        size = max(int(smoothed), self.base // 4) // ALIGNMENT * ALIGNMENT
        return min(max(size, ALIGNMENT), MAX_PREFILL_TOKENS)


def profile_lengths(base: int) -> np.ndarray:
    """The prompt lengths SGLang times: from 1.25 x base down in 128 equal steps (:145-153)."""
    reach = int(base * PROFILE_REACH)
    step = max(1, reach // PROFILE_SAMPLES)
    lengths = reach - step * np.arange(PROFILE_SAMPLES)
    return lengths[lengths > 0]


def lone_prefill_s(cost: CostModel, length: int) -> float:
    """The GPU time of one request's whole `length`-token prompt alone in a pass (it emits its
    first token: one LM-head row), without the engine's CPU overhead."""
    _, _, time_s, overhead_s = cost.time(length, float(attended_pairs(0, length)), 0.0, 1)
    return time_s - overhead_s


def fit_dynamic_chunks(cost: CostModel, base: int) -> DynamicChunks | None:
    """SGLang's fit of its profile, priced on `cost`; None where SGLang turns dynamic chunking
    off: too few samples, or a fitted a <= 0 (no quadratic term: the `simple` cost mode prices
    no attention) or a target <= 0."""
    lengths = profile_lengths(base)[1:]   # the first sample left out, as SGLang does
    if len(lengths) < MIN_FIT_SAMPLES:
        return None
    times = np.array([lone_prefill_s(cost, int(n)) for n in lengths])
    design = np.column_stack([lengths.astype(np.float64) ** 2, lengths, np.ones(len(lengths))])
    (a, b, c), *_ = np.linalg.lstsq(design, times, rcond=None)
    if a <= 0:
        return None
    fit = DynamicChunks(float(a), max(float(b), 0.0), float(c), base)
    return fit if fit.target_s > 0 else None
