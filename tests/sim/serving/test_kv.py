"""The KV pool: every change of KV in use, and who a full cache evicts."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sim.serving.kv import KvOverflow, KvPool, round_up


def pool_with(*holdings, capacity=100):
    """A pool where requests 0, 1, ... were admitted in that order holding `holdings` tokens."""
    pool = KvPool(capacity, watermark=1, requests=10)
    for request, tokens in enumerate(holdings):
        pool.reserve(request, tokens)
    return pool


def test_reserve_counts_tokens_per_request_and_in_total():
    pool = pool_with(30, 20)
    pool.reserve(0, 5)                      # a later chunk of request 0
    assert pool.used == 55 and pool.free_tokens == 45
    assert held(pool, 3) == [35, 20, 0]


def held(pool, requests):
    return [pool.held_of(r) for r in range(requests)]


def test_a_step_gives_each_stepping_decoder_one_token():
    pool = pool_with(30, 20, 10)
    pool.start_decoding([0, 2])
    pool.step(np.array([0, 2]), np.array([], np.int64))
    assert held(pool, 3) == [31, 20, 11] and pool.used == 62
    pool.step(np.array([0]), np.array([2]))          # the budget skipped request 2
    assert held(pool, 3) == [32, 20, 11] and pool.used == 63


def test_free_gives_back_all_a_request_holds():
    pool = pool_with(30, 20, 10)
    pool.free([0, 2])
    assert pool.used == 20 and held(pool, 3) == [0, 20, 0]
    assert pool.newest() == 1


def test_preempt_newest_evicts_the_last_admitted():
    pool = pool_with(30, 20, 10)
    pool.reserve(0, 5)                      # more KV for an old request does not make it newer
    assert pool.preempt(pool.newest()) == 2
    assert pool.used == 55 and pool.held_of(2) == 0
    assert pool.preempt(pool.newest()) == 1
    assert pool.preempt(pool.newest()) == 0
    assert pool.used == 0 and pool.newest() is None


def test_a_request_admitted_again_is_the_newest():
    pool = pool_with(30, 20)
    pool.free([0])                          # preempted ...
    pool.reserve(0, 7)                      # ... and admitted again
    assert pool.admission_number(0) > pool.admission_number(1)
    assert pool.preempt(pool.newest()) == 0


def test_admission_numbers_follow_first_reservations():
    pool = pool_with(5, 5, 5)
    assert [pool.admission_number(r) for r in range(3)] == [0, 1, 2]


def test_taking_more_than_is_free_is_a_bug_not_a_clamp():
    pool = pool_with(60, capacity=100)
    pool.reserve(1, 40)                     # exactly full is fine
    assert pool.free_tokens == 0
    with pytest.raises(KvOverflow, match="1 KV slots asked for with 0 of 100 free"):
        pool.reserve(2, 1)
    pool.start_decoding([0])
    with pytest.raises(KvOverflow):
        pool.step(np.array([0]), np.array([], np.int64))
    assert pool.used == 100 and pool.newest() == 1   # nothing changed


def test_preempting_an_empty_pool_is_a_bug():
    with pytest.raises(KvOverflow, match="^KV exhausted with nothing to preempt$"):
        KvPool(10, 0, 1).preempt(None)


def test_watermark_is_kept_for_the_policies_to_read():
    assert KvPool(1000, 10, 1).watermark == 10


def test_blocks_round_each_request_up_and_decoders_take_a_block_when_full():
    """vLLM and Sarathi-Serve allocate KV in blocks of 16 tokens (vllm/config/cache.py:185
    DEFAULT_BLOCK_SIZE = 16 at v0.33.0): a 17-token prompt holds two blocks, and its decoder
    takes a third only when the 32nd token is written."""
    pool = KvPool(160, 0, 3, block_tokens=16)
    pool.reserve(0, 17)
    assert pool.allocated == 32 and pool.used == 17 and pool.free_tokens == 128
    pool.start_decoding([0])
    for _ in range(15):
        pool.step(np.array([0]), np.array([], np.int64))
    assert pool.allocated == 32 and pool.decode_slots(np.array([0])) == 16
    pool.step(np.array([0]), np.array([], np.int64))
    assert pool.allocated == 48 and pool.held_of(0) == 33


def test_a_floor_allocates_ahead_and_decodes_use_it_first():
    """Orca as Sarathi-Serve runs it allocates ceil(max_model_len / 16) blocks per request
    (sarathi/core/block_space_manager/orca_block_space_manager.py:14-17, osdi-sarathi-serve)."""
    pool = KvPool(1000, 0, 2, block_tokens=16)
    assert pool.slots_for(0, 100, floor=512) == 512
    pool.reserve(0, 100, floor=512)
    pool.start_decoding([0])
    pool.step(np.array([0]), np.array([], np.int64))
    assert pool.allocated == 512 and pool.decode_slots(np.array([0])) == 0


def test_capacity_and_watermark_are_whole_blocks():
    pool = KvPool(1000, 10, 1, block_tokens=16)
    assert (pool.capacity, pool.watermark) == (992, 0)


def test_a_decoder_that_outgrows_its_floor_is_a_bug():
    """A floor is max_model_len, which no request outgrows; one that did would have written
    tokens past its slots without a block."""
    pool = KvPool(1000, 0, 1, block_tokens=16)
    pool.reserve(0, 30, floor=32)
    pool.start_decoding([0])
    for _ in range(3):
        pool.step(np.array([0]), np.array([], np.int64))
    with pytest.raises(KvOverflow, match="grew to 33 tokens past its floor of 32"):
        pool.free([0])
    pool = KvPool(1000, 0, 1, block_tokens=16)
    pool.reserve(0, 30, floor=32)
    pool.start_decoding([0])
    for _ in range(2):
        pool.step(np.array([0]), np.array([], np.int64))
    pool.free([0])                                   # at its floor exactly: no block was due
    assert pool.allocated == 0 and pool.used == 0


@settings(deadline=None)
@given(st.integers(1, 16), st.lists(st.tuples(st.integers(1, 70), st.integers(0, 2)), min_size=1,
                                    max_size=6),
       st.lists(st.integers(0, 6), max_size=60), st.integers(0, 2**32 - 1))
@example(block=4, requests=[(8, 1)], steps=[1], seed=0)   # a floor it holds exactly
def test_steps_allocate_as_a_decoder_by_decoder_count_would(block, requests, steps, seed):
    """The pool never stores a decoder's tokens or slots; whatever the steps (some decoders
    skipped, some leaving, joining late; some with a floor they hold already, some with one no
    step outgrows, as the engine's max_model_len), it allocates exactly what counting each
    decoder's tokens and whole blocks one by one gives."""
    rng = np.random.default_rng(seed)
    pool = KvPool(10**6, 0, len(requests), block_tokens=block)
    tokens, floors, decoding = {}, {}, []
    for request, (prompt, floored) in enumerate(requests):
        floor = (0, prompt // block * block, round_up(prompt + len(steps), block))[floored]
        pool.reserve(request, prompt, floor)
        tokens[request], floors[request] = prompt, floor
    waiting = list(range(len(requests)))
    pool.start_decoding([0])
    decoding.append(waiting.pop(0))
    for k in steps:
        if waiting and rng.random() < 0.3:
            joining = [waiting.pop(0)]
            pool.start_decoding(joining)
            decoding += joining
        k = min(k, len(decoding))
        stepping, skipped = np.array(decoding[:k], np.int64), np.array(decoding[k:], np.int64)
        due = [r for r in decoding if tokens[r] >= max(round_up(tokens[r], block), floors[r])]
        assert pool.decode_slots(np.array(decoding, np.int64)) == block * len(due)
        assert pool.decode_slots(stepping) == block * len(set(due) & set(decoding[:k]))
        pool.step(stepping, skipped)
        for r in decoding[:k]:
            tokens[r] += 1
        assert [pool.held_of(r) for r in tokens] == list(tokens.values())
        assert pool.allocated == sum(max(round_up(t, block), floors[r]) for r, t in tokens.items()
                                     if r in pool._holders)
        if decoding and rng.random() < 0.2:
            leaving = decoding.pop(int(rng.integers(len(decoding))))
            pool.free([leaving])
            del tokens[leaving]
    assert pool.used == sum(tokens.values())
