"""Chunking is exact: a tiny decoder run on a prompt in one pass and in chunks gives the same
result, up to the order of floating-point sums.

The decoder is small but complete: token and sinusoidal position embeddings, LAYERS layers of
RMSNorm, causal multi-head attention and a SwiGLU MLP, each added to the residual stream, a final
RMSNorm and an unembedding to VOCAB logits. Its weights are random, drawn from a seed. A pass takes
a run of tokens at a starting position and a KV cache: it writes the run's keys and values into the
cache, and each of the run's queries attends to every cached key at or before its own position.

The one-pass prefill is one such pass over the whole prompt (scores for every pair of positions,
the ones above the diagonal masked). The chunked prefill is one pass per chunk, each chunk's
queries reading the keys and values the earlier chunks wrote plus its own: the same scores, row by
row, so the same outputs. What can differ is the order in which floating-point sums are taken
(a softmax row's sum and a product's inner sums run over rows of different lengths, which numpy
and BLAS may block differently), a few units in the last place; and greedy decoding can pick
another token only where its two best logits are within such a difference of each other (a near
tie). `near_tie_search` looks for one over other seeds, within a deadline.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from sim.errors import InputError, check_number

# The tiny decoder's shape.
LAYERS = 2
HEADS = 2
HEAD_DIM = 16
WIDTH = HEADS * HEAD_DIM      # the residual stream's width
FFN = 64                      # the MLP's inner width
VOCAB = 64
RMS_EPS = 1e-6
# Its inputs: the longest prompt (its one-pass score matrix, a head at a time, is 4,096² numbers:
# 134 MB in float64), the tokens it decodes greedily after the prompt, the seeds it draws from.
MAX_PROMPT = 4096
DEFAULT_PROMPT = 256
DEFAULT_CHUNK = 64
MAX_SEED = 2**31 - 1
NEW_TOKENS = 8
MAX_SEARCH_S = 10.0
DEFAULT_SEARCH_S = 1.0
DTYPES = ("float32", "float64")
# The unit in the last place at 1.0 of each dtype: the scale of one rounding.
EPSILON = {name: float(np.finfo(name).eps) for name in DTYPES}


def whole(name: str, value, low: int, high: int, hint: str) -> int:
    """`value` as a whole number in [low, high], else an InputError naming it, its range and
    `hint` (what the range means)."""
    if isinstance(value, bool):
        raise InputError(f"{name} must be a whole number from {low:,} to {high:,}, got {value!r}")
    try:
        return int(check_number(name, value, low=low, high=high, low_inclusive=True, integer=True))
    except InputError as e:
        raise InputError(f"{e} ({hint})") from None


def checked_prompt(prompt) -> int:
    return whole("prompt", prompt, 1, MAX_PROMPT,
                 f"the tiny decoder takes prompts of 1 to {MAX_PROMPT:,} tokens")


def checked_chunk(chunk) -> int:
    return whole("chunk", chunk, 1, MAX_PROMPT,
                 "tokens per chunk; a chunk as long as the prompt or longer is one pass")


def checked_seed(seed) -> int:
    return whole("seed", seed, 0, MAX_SEED, "the random seed of the weights and the prompt")


def chunk_bounds(prompt: int, chunk: int) -> list[tuple[int, int]]:
    """Each chunk's (start, end) positions in a prompt of `prompt` tokens: `chunk` tokens each,
    the last one what is left (a chunk longer than the prompt is the whole prompt)."""
    prompt, chunk = checked_prompt(prompt), checked_chunk(chunk)
    return [(start, min(start + chunk, prompt)) for start in range(0, prompt, chunk)]


@dataclass(frozen=True, eq=False)
class Weights:
    """The decoder's weights in one dtype (float64 draws cast, so both dtypes are one model)."""
    embed: np.ndarray         # (VOCAB, WIDTH)
    attn_norm: np.ndarray     # (LAYERS, WIDTH)
    wq: np.ndarray            # (LAYERS, WIDTH, WIDTH)
    wk: np.ndarray
    wv: np.ndarray
    wo: np.ndarray
    mlp_norm: np.ndarray      # (LAYERS, WIDTH)
    w_gate: np.ndarray        # (LAYERS, WIDTH, FFN)
    w_up: np.ndarray
    w_down: np.ndarray        # (LAYERS, FFN, WIDTH)
    final_norm: np.ndarray    # (WIDTH,)
    unembed: np.ndarray       # (WIDTH, VOCAB)

    @property
    def dtype(self) -> np.dtype:
        return self.embed.dtype


def draw(seed: int, prompt: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The float64 weights and the prompt's tokens that `seed` draws (weights scaled so every
    layer's output is of the order of its input)."""
    rng = np.random.default_rng(checked_seed(seed))

    def normal(*shape: int, fan_in: int) -> np.ndarray:
        return rng.standard_normal(shape) / math.sqrt(fan_in)

    raw = dict(embed=rng.standard_normal((VOCAB, WIDTH)),
               attn_norm=1 + 0.1 * rng.standard_normal((LAYERS, WIDTH)),
               wq=normal(LAYERS, WIDTH, WIDTH, fan_in=WIDTH),
               wk=normal(LAYERS, WIDTH, WIDTH, fan_in=WIDTH),
               wv=normal(LAYERS, WIDTH, WIDTH, fan_in=WIDTH),
               wo=normal(LAYERS, WIDTH, WIDTH, fan_in=WIDTH),
               mlp_norm=1 + 0.1 * rng.standard_normal((LAYERS, WIDTH)),
               w_gate=normal(LAYERS, WIDTH, FFN, fan_in=WIDTH),
               w_up=normal(LAYERS, WIDTH, FFN, fan_in=WIDTH),
               w_down=normal(LAYERS, FFN, WIDTH, fan_in=FFN),
               final_norm=1 + 0.1 * rng.standard_normal(WIDTH),
               unembed=normal(WIDTH, VOCAB, fan_in=WIDTH) * 4)
    tokens = rng.integers(0, VOCAB, size=checked_prompt(prompt))
    return raw, tokens


def in_dtype(raw: dict[str, np.ndarray], dtype: str) -> Weights:
    return Weights(**{name: array.astype(dtype) for name, array in raw.items()})


class KVCache:
    """Every layer's keys and values, position by position, for up to `capacity` positions."""

    def __init__(self, capacity: int, dtype: np.dtype):
        self.keys = np.zeros((LAYERS, HEADS, capacity, HEAD_DIM), dtype)
        self.values = np.zeros((LAYERS, HEADS, capacity, HEAD_DIM), dtype)
        self.length = 0   # positions written so far


def positions(start: int, count: int, dtype: np.dtype) -> np.ndarray:
    """Sinusoidal position embeddings of positions start .. start + count − 1 (computed in
    float64, then cast: a position's embedding is the same whichever pass computes it)."""
    where = np.arange(start, start + count, dtype=np.float64)[:, None]
    rates = 10_000.0 ** (-np.arange(0, WIDTH, 2, dtype=np.float64) / WIDTH)
    angles = where * rates
    out = np.empty((count, WIDTH))
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out.astype(dtype)


def rms_norm(x: np.ndarray, gain: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + x.dtype.type(RMS_EPS)) * gain


def attend(q: np.ndarray, keys: np.ndarray, values: np.ndarray, start: int) -> np.ndarray:
    """Causal attention of a run's queries (HEADS, n, HEAD_DIM), the first at position `start`,
    over the cache's keys and values at positions 0 .. start + n − 1: query i sees keys 0 ..
    start + i. One head at a time, so a 4,096-token pass holds one score matrix."""
    n, seen = q.shape[1], keys.shape[1]
    hidden = np.arange(seen)[None, :] > start + np.arange(n)[:, None]   # keys after the query
    q = q * q.dtype.type(1 / math.sqrt(HEAD_DIM))   # scaled before the product: n × HEAD_DIM
    out = np.empty_like(q)                            # numbers, not n × seen
    scores = np.empty((n, seen), q.dtype)   # one buffer for every head: a fresh 134 MB each
    for head in range(HEADS):               # costs more in page faults than the product
        np.matmul(q[head], keys[head].T, out=scores)
        scores[hidden] = -np.inf
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        # the weights' sums divide the output rows, not the n × seen weights
        out[head] = (scores @ values[head]) / scores.sum(axis=1, keepdims=True)
    return out


def split_heads(x: np.ndarray) -> np.ndarray:
    """(n, WIDTH) -> (HEADS, n, HEAD_DIM)."""
    return x.reshape(len(x), HEADS, HEAD_DIM).transpose(1, 0, 2)


def forward(w: Weights, tokens: np.ndarray, cache: KVCache) -> np.ndarray:
    """One pass over `tokens`, which follow the cache's positions: their keys and values are
    written into the cache, and each attends to the cache up to itself. Returns the tokens' last
    hidden states (after the final RMSNorm), (n, WIDTH)."""
    start, n = cache.length, len(tokens)
    x = w.embed[tokens] + positions(start, n, w.dtype)
    for layer in range(LAYERS):
        h = rms_norm(x, w.attn_norm[layer])
        q, k, v = (split_heads(h @ m[layer]) for m in (w.wq, w.wk, w.wv))
        cache.keys[layer, :, start:start + n] = k
        cache.values[layer, :, start:start + n] = v
        mixed = attend(q, cache.keys[layer, :, :start + n], cache.values[layer, :, :start + n],
                       start)
        x = x + mixed.transpose(1, 0, 2).reshape(n, WIDTH) @ w.wo[layer]
        h = rms_norm(x, w.mlp_norm[layer])
        gate = h @ w.w_gate[layer]
        x = x + (gate / (1 + np.exp(-gate)) * (h @ w.w_up[layer])) @ w.w_down[layer]
    cache.length = start + n
    return rms_norm(x, w.final_norm)


@dataclass(frozen=True)
class Prefill:
    """A prompt's prefill: the last position's hidden state and logits, and its cache."""
    hidden: np.ndarray
    logits: np.ndarray
    cache: KVCache


class PastDeadline(Exception):
    """A try of the near-tie search cut short: its deadline came between two passes."""


def always() -> bool:
    return True


def prefill(w: Weights, tokens: np.ndarray, chunk: int, in_time=always) -> Prefill:
    """The prompt in chunks of `chunk` tokens, each pass reading the cache the earlier ones
    wrote (a chunk as long as the prompt: the one-pass prefill). `in_time()` is asked before
    each pass; False ends it with PastDeadline."""
    cache = KVCache(len(tokens) + NEW_TOKENS, w.dtype)
    for start, end in chunk_bounds(len(tokens), chunk):
        if not in_time():
            raise PastDeadline
        hidden = forward(w, tokens[start:end], cache)
    last = hidden[-1]
    return Prefill(last, last @ w.unembed, cache)


def margin(logits: np.ndarray) -> float:
    """How far the best logit is ahead of the second: how much a difference must be to change
    the greedy pick."""
    top2 = np.partition(logits, -2)[-2:]
    return float(top2[1] - top2[0])


def greedy(w: Weights, done: Prefill, count: int = NEW_TOKENS,
           in_time=always) -> tuple[list[int], list[float]]:
    """`count` tokens decoded greedily after the prompt, one pass each over the cache, and the
    logit margin of each pick."""
    tokens, margins, logits = [], [], done.logits
    for _ in range(count):
        if not in_time():
            raise PastDeadline
        token = int(np.argmax(logits))
        tokens.append(token)
        margins.append(margin(logits))
        logits = forward(w, np.array([token]), done.cache)[-1] @ w.unembed
    return tokens, margins


@dataclass(frozen=True)
class Agreement:
    """One dtype's one-pass and chunked prefills side by side."""
    dtype: str
    max_abs_diff_hidden: float    # the last position's hidden state, largest |one pass − chunked|
    max_abs_diff_logits: float
    largest_logit: float          # the scale the logits' difference is read against
    tokens_one_pass: list[int]    # greedy tokens after the prompt
    tokens_chunked: list[int]
    smallest_margin: float        # the smallest top-1 − top-2 logit gap over both passes' picks

    @property
    def max_abs_diff(self) -> float:
        return max(self.max_abs_diff_hidden, self.max_abs_diff_logits)

    @property
    def bit_identical(self) -> bool:
        return self.max_abs_diff == 0

    @property
    def same_tokens(self) -> bool:
        return self.tokens_one_pass == self.tokens_chunked


def agreement(raw: dict[str, np.ndarray], tokens: np.ndarray, chunk: int, dtype: str,
              in_time=always) -> Agreement:
    w = in_dtype(raw, dtype)
    whole_pass = prefill(w, tokens, len(tokens), in_time)
    chunked = prefill(w, tokens, chunk, in_time)
    one_tokens, one_margins = greedy(w, whole_pass, NEW_TOKENS, in_time)
    chunk_tokens, chunk_margins = greedy(w, chunked, NEW_TOKENS, in_time)
    return Agreement(
        dtype, float(np.max(np.abs(whole_pass.hidden - chunked.hidden))),
        float(np.max(np.abs(whole_pass.logits - chunked.logits))),
        float(np.max(np.abs(whole_pass.logits))), one_tokens, chunk_tokens,
        min(one_margins + chunk_margins))


@dataclass(frozen=True)
class NearTieSearch:
    """Seeds after the asked one, tried in float32 until greedy decoding differs between the two
    prefills or the deadline comes."""
    seconds: float                  # the deadline it was given
    elapsed_s: float
    seeds_tried: int
    found_seed: int | None          # the first seed whose greedy tokens differ, or None
    found: Agreement | None
    smallest_margin: float | None   # the smallest margin over every seed tried
    smallest_margin_seed: int | None


def near_tie_search(prompt: int, chunk: int, after_seed: int, seconds: float,
                    clock=time.monotonic, first_try_s: float = 0.0) -> NearTieSearch:
    """Try seeds after_seed + 1, + 2, ... until one's float32 greedy tokens differ between the
    one-pass and chunked prefills, or until another try could pass `seconds` (at most
    MAX_SEARCH_S): a try starts only while the time used plus the longest try so far (before
    the first, `first_try_s`: the same computation timed on the asked seed) is under it, and
    one that runs longer is given up at the deadline, between two passes."""
    seconds = float(check_number("search seconds", seconds, low=0, high=MAX_SEARCH_S,
                                 low_inclusive=True))
    began = clock()
    longest, tried, smallest, smallest_seed = first_try_s, 0, None, None
    seed = checked_seed(after_seed)

    def in_time() -> bool:
        return clock() - began < seconds
    while seed < MAX_SEED and clock() - began + longest < seconds:
        seed += 1
        started = clock()
        raw, tokens = draw(seed, prompt)
        try:
            found = agreement(raw, tokens, chunk, "float32", in_time)
        except PastDeadline:
            break
        longest = max(longest, clock() - started)
        tried += 1
        if smallest is None or found.smallest_margin < smallest:
            smallest, smallest_seed = found.smallest_margin, seed
        if not found.same_tokens:
            return NearTieSearch(seconds, clock() - began, tried, seed, found, smallest,
                                 smallest_seed)
    return NearTieSearch(seconds, clock() - began, tried, None, None, smallest, smallest_seed)


@dataclass(frozen=True)
class Exactness:
    prompt: int
    chunk: int
    seed: int
    chunks: list[tuple[int, int]]
    by_dtype: dict[str, Agreement]
    search: NearTieSearch | None

    @property
    def same_greedy_tokens(self) -> bool:
        return all(a.same_tokens for a in self.by_dtype.values())

    def as_dict(self) -> dict:
        """What `python -m sim exactness --json` prints."""
        out = {"prompt": self.prompt, "chunk": self.chunk, "seed": self.seed,
               "chunks": len(self.chunks), "last_chunk": self.chunks[-1][1] - self.chunks[-1][0],
               "same_greedy_tokens": self.same_greedy_tokens, "new_tokens": NEW_TOKENS,
               "decoder": {"layers": LAYERS, "heads": HEADS, "head_dim": HEAD_DIM,
                           "width": WIDTH, "ffn": FFN, "vocab": VOCAB}}
        for name, a in self.by_dtype.items():
            out |= {f"max_abs_diff_{name}": a.max_abs_diff,
                    f"max_abs_diff_hidden_{name}": a.max_abs_diff_hidden,
                    f"max_abs_diff_logits_{name}": a.max_abs_diff_logits,
                    f"largest_logit_{name}": a.largest_logit,
                    f"bit_identical_{name}": a.bit_identical,
                    f"greedy_tokens_one_pass_{name}": a.tokens_one_pass,
                    f"greedy_tokens_chunked_{name}": a.tokens_chunked,
                    f"smallest_logit_margin_{name}": a.smallest_margin,
                    f"machine_epsilon_{name}": EPSILON[name]}
        if self.search is not None:
            s = self.search
            out["near_tie_search"] = {
                "seconds": s.seconds, "elapsed_s": s.elapsed_s, "seeds_tried": s.seeds_tried,
                "found": s.found_seed is not None}
            if s.found_seed is not None:
                out["near_tie_search"] |= {
                    "found_seed": s.found_seed,
                    "found_tokens_one_pass": s.found.tokens_one_pass,
                    "found_tokens_chunked": s.found.tokens_chunked,
                    "found_smallest_margin": s.found.smallest_margin}
            if s.smallest_margin is not None:
                out["near_tie_search"] |= {"smallest_margin": s.smallest_margin,
                                           "smallest_margin_seed": s.smallest_margin_seed}
        return out


def exactness(prompt: int = DEFAULT_PROMPT, chunk: int = DEFAULT_CHUNK, seed: int = 0,
              search_s: float = 0.0) -> Exactness:
    """The prompt prefilled in one pass and in chunks, in float32 and float64, compared; with
    `search_s` > 0, a near-tie search over the seeds after `seed` within that many seconds."""
    prompt, chunk, seed = checked_prompt(prompt), checked_chunk(chunk), checked_seed(seed)
    raw, tokens = draw(seed, prompt)
    started = time.monotonic()
    by_dtype = {"float32": agreement(raw, tokens, chunk, "float32")}
    one_try_s = time.monotonic() - started   # what each of the search's tries computes
    by_dtype["float64"] = agreement(raw, tokens, chunk, "float64")
    search = near_tie_search(prompt, chunk, seed, search_s,
                             first_try_s=one_try_s) if search_s else None
    return Exactness(prompt, chunk, seed, chunk_bounds(prompt, chunk), by_dtype, search)
