"""Chunking is exact (sim/studies/exactness.py): the tiny decoder's chunked prefill, each chunk
reading the cache the earlier ones wrote, gives the one-pass prefill's last hidden state, logits
and greedy tokens, to within rounding; bad input is refused with its range; the near-tie search
keeps its deadline."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sim.errors import InputError
from sim.studies import exactness as ex

FLOAT64_TOLERANCE = 1e-12
FLOAT32_TOLERANCE = 1e-4


@st.composite
def prompts_and_chunks(draw):
    prompt = draw(st.integers(1, 300))
    chunk = draw(st.one_of(st.just(1), st.just(prompt), st.integers(1, prompt + 10)))
    return prompt, chunk, draw(st.integers(0, ex.MAX_SEED))


@settings(deadline=None)
@given(prompts_and_chunks())
@example((257, 1, 3))          # every token its own chunk
@example((300, 300, 4))        # one chunk: the one-pass prefill itself
@example((100, 64, 5))         # a ragged last chunk of 36
def test_chunked_prefill_matches_one_pass_to_rounding(case):
    prompt, chunk, seed = case
    result = ex.exactness(prompt, chunk, seed)
    assert result.by_dtype["float64"].max_abs_diff < FLOAT64_TOLERANCE
    assert result.by_dtype["float32"].max_abs_diff < FLOAT32_TOLERANCE
    assert result.by_dtype["float64"].same_tokens


def test_a_chunk_as_long_as_the_prompt_is_the_one_pass_bit_for_bit():
    for chunk in (200, 201, ex.MAX_PROMPT):
        result = ex.exactness(200, chunk, seed=7)
        assert len(result.chunks) == 1
        assert all(a.bit_identical and a.same_tokens for a in result.by_dtype.values())


def test_the_chunks_cover_the_prompt_in_order_the_last_one_ragged():
    assert ex.chunk_bounds(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert ex.chunk_bounds(10, 10) == ex.chunk_bounds(10, 99) == [(0, 10)]
    assert ex.chunk_bounds(3, 1) == [(0, 1), (1, 2), (2, 3)]


def test_the_chunked_pass_reads_the_cache_the_earlier_chunks_wrote():
    """After the chunks, the cache holds the one pass's keys and values at every position."""
    raw, tokens = ex.draw(11, 50)
    w = ex.in_dtype(raw, "float64")
    whole, chunked = ex.prefill(w, tokens, 50), ex.prefill(w, tokens, 8)
    assert chunked.cache.length == whole.cache.length == 50
    np.testing.assert_allclose(chunked.cache.keys[:, :, :50], whole.cache.keys[:, :, :50],
                               rtol=0, atol=FLOAT64_TOLERANCE)


def test_a_later_token_changes_no_earlier_hidden_state():
    """Causality, the reason a chunk need not wait for the tokens after it: the first 30
    positions' states are the same whether the prompt stops there or goes on."""
    raw, tokens = ex.draw(2, 60)
    w = ex.in_dtype(raw, "float64")
    short = ex.forward(w, tokens[:30], ex.KVCache(60, w.dtype))
    longer = ex.forward(w, tokens, ex.KVCache(60, w.dtype))
    np.testing.assert_allclose(longer[:30], short, rtol=0, atol=FLOAT64_TOLERANCE)


def test_the_greedy_tokens_and_margins_are_read_off_the_logits():
    assert ex.margin(np.array([0.5, 2.0, 1.25, -3.0])) == 0.75
    result = ex.exactness(64, 16, seed=1)
    float32 = result.by_dtype["float32"]
    assert len(float32.tokens_one_pass) == ex.NEW_TOKENS
    assert all(0 <= t < ex.VOCAB for t in float32.tokens_one_pass)
    assert 0 <= float32.smallest_margin <= float32.largest_logit * 2


def test_the_json_has_the_documented_keys():
    out = ex.exactness(40, 16, seed=3, search_s=0).as_dict()
    assert (out["chunks"], out["last_chunk"]) == (3, 8)
    for key in ("max_abs_diff_float32", "max_abs_diff_float64", "same_greedy_tokens",
                "smallest_logit_margin_float32"):
        assert key in out
    assert "near_tie_search" not in out


@pytest.mark.parametrize("call, words", [
    (lambda: ex.exactness(0, 1), "prompt must be ≥ 1, got 0"),
    (lambda: ex.exactness(4097, 1), "prompt must be ≤ 4,096, got 4097"),
    (lambda: ex.exactness(10, 0), "chunk must be ≥ 1, got 0"),
    (lambda: ex.exactness(10, 2.5), "chunk must be a whole number, got 2.5"),
    (lambda: ex.exactness(10, True), "chunk must be a whole number from 1 to 4,096, got True"),
    (lambda: ex.exactness(10, 4, seed=-1), "seed must be ≥ 0, got −1"),
    (lambda: ex.exactness("many", 4), "prompt must be a number, got 'many'"),
    (lambda: ex.exactness(10, 4, search_s=11), "search seconds must be ≤ 10, got 11"),
])
def test_bad_input_is_refused_with_its_range(call, words):
    with pytest.raises(InputError) as caught:
        call()
    assert words in str(caught.value)


class Clock:
    """A clock that moves only when a try runs: each try takes `try_s`."""

    def __init__(self, try_s: float):
        self.now, self.try_s = 0.0, try_s

    def __call__(self) -> float:
        return self.now


def slow_tries(monkeypatch, clock: Clock, flip_at_seed: int | None = None) -> None:
    """Each try of the search advances `clock`; at `flip_at_seed` the chunked pass's first greedy
    token differs (a near tie this decoder may never meet)."""
    real = ex.agreement

    def timed(raw, tokens, chunk, dtype, in_time=ex.always):
        clock.now += clock.try_s
        found = real(raw, tokens, chunk, dtype, in_time)
        if flip_at_seed is not None and np.array_equal(
                raw["embed"], ex.draw(flip_at_seed, len(tokens))[0]["embed"]):
            flipped = [found.tokens_one_pass[0] + 1, *found.tokens_one_pass[1:]]
            return ex.Agreement(dtype, found.max_abs_diff_hidden, found.max_abs_diff_logits,
                                found.largest_logit, found.tokens_one_pass, flipped,
                                found.smallest_margin)
        return found
    monkeypatch.setattr(ex, "agreement", timed)


def test_the_search_starts_no_try_that_could_pass_its_deadline(monkeypatch):
    """Tries of 1 s against 5 s: the fourth ends at 4 s, and a fifth could reach the deadline.
    Told beforehand that a try takes 3 s, it starts two (at 0 and 1 s; 2 + 3 is not under 5);
    given no time, none."""
    clock = Clock(1.0)
    slow_tries(monkeypatch, clock)
    search = ex.near_tie_search(16, 4, after_seed=0, seconds=5, clock=clock)
    assert (search.found_seed, search.seeds_tried, search.elapsed_s) == (None, 4, 4.0)
    assert search.smallest_margin > 0 and 1 <= search.smallest_margin_seed <= 4
    told = ex.near_tie_search(16, 4, after_seed=0, seconds=5, clock=clock, first_try_s=3)
    assert (told.seeds_tried, told.elapsed_s) == (2, 2.0)
    assert ex.near_tie_search(16, 4, 0, seconds=0, clock=clock).seeds_tried == 0


def test_a_try_that_runs_past_the_deadline_is_given_up_between_two_passes():
    """A clock that moves 0.4 s a read: the first try starts in time and is cut short by its
    own passes' checks, well before its 14 passes could run."""
    reads = iter(range(1000))
    search = ex.near_tie_search(64, 8, after_seed=0, seconds=2,
                                clock=lambda: next(reads) * 0.4)
    assert search.seeds_tried == 0 and search.elapsed_s <= 2 + 2 * 0.4


def test_the_search_stops_at_the_first_seed_whose_greedy_tokens_differ(monkeypatch):
    clock = Clock(0.001)
    slow_tries(monkeypatch, clock, flip_at_seed=4)
    search = ex.near_tie_search(16, 4, after_seed=1, seconds=ex.MAX_SEARCH_S, clock=clock)
    assert (search.found_seed, search.seeds_tried) == (4, 3)
    assert search.found.tokens_one_pass != search.found.tokens_chunked
