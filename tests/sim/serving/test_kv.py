"""The KV pool: every change of KV in use, and who a full cache evicts."""

import numpy as np
import pytest

from sim.serving.kv import KvOverflow, KvPool


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
    assert pool.held.tolist()[:3] == [35, 20, 0]


def test_append_gives_each_stepping_decoder_one_token():
    pool = pool_with(30, 20, 10)
    pool.append(np.array([0, 2]))
    assert pool.held.tolist()[:3] == [31, 20, 11] and pool.used == 62


def test_free_gives_back_all_a_request_holds():
    pool = pool_with(30, 20, 10)
    pool.free([0, 2])
    assert pool.used == 20 and pool.held.tolist()[:3] == [0, 20, 0]
    assert pool.newest() == 1


def test_preempt_newest_evicts_the_last_admitted():
    pool = pool_with(30, 20, 10)
    pool.reserve(0, 5)                      # more KV for an old request does not make it newer
    assert pool.preempt_newest() == 2
    assert pool.used == 55 and pool.held[2] == 0
    assert pool.preempt_newest() == 1
    assert pool.preempt_newest() == 0
    assert pool.used == 0 and pool.newest() is None


def test_a_request_admitted_again_is_the_newest():
    pool = pool_with(30, 20)
    pool.free([0])                          # preempted ...
    pool.reserve(0, 7)                      # ... and admitted again
    assert pool.admission_number(0) > pool.admission_number(1)
    assert pool.preempt_newest() == 0


def test_admission_numbers_follow_first_reservations():
    pool = pool_with(5, 5, 5)
    assert [pool.admission_number(r) for r in range(3)] == [0, 1, 2]


def test_taking_more_than_is_free_is_a_bug_not_a_clamp():
    pool = pool_with(60, capacity=100)
    pool.reserve(1, 40)                     # exactly full is fine
    assert pool.free_tokens == 0
    with pytest.raises(KvOverflow, match="1 KV slots asked for with 0 of 100 free"):
        pool.reserve(2, 1)
    with pytest.raises(KvOverflow):
        pool.append(np.array([0]))
    assert pool.used == 100 and pool.newest() == 1   # nothing changed


def test_preempting_an_empty_pool_is_a_bug():
    with pytest.raises(KvOverflow, match="^KV exhausted with nothing to preempt$"):
        KvPool(10, 0, 1).preempt_newest()


def test_watermark_is_kept_for_the_policies_to_read():
    assert KvPool(1000, 10, 1).watermark == 10


def test_blocks_round_each_request_up_and_decoders_take_a_block_when_full():
    """vLLM and Sarathi-Serve allocate KV in blocks of 16 tokens (vllm/config/cache.py:185
    DEFAULT_BLOCK_SIZE = 16 at v0.33.0): a 17-token prompt holds two blocks, and its decoder
    takes a third only when the 32nd token is written."""
    pool = KvPool(160, 0, 3, block_tokens=16)
    pool.reserve(0, 17)
    assert pool.allocated == 32 and pool.used == 17 and pool.free_tokens == 128
    for _ in range(15):
        pool.append(np.array([0]))
    assert pool.allocated == 32 and pool.decode_slots(np.array([0])) == 16
    pool.append(np.array([0]))
    assert pool.allocated == 48 and pool.held[0] == 33


def test_a_floor_allocates_ahead_and_decodes_use_it_first():
    """Orca as Sarathi-Serve runs it allocates ceil(max_model_len / 16) blocks per request
    (sarathi/core/block_space_manager/orca_block_space_manager.py:14-17, osdi-sarathi-serve)."""
    pool = KvPool(1000, 0, 2, block_tokens=16)
    assert pool.slots_for(0, 100, floor=512) == 512
    pool.reserve(0, 100, floor=512)
    pool.append(np.array([0]))
    assert pool.allocated == 512 and pool.decode_slots(np.array([0])) == 0


def test_capacity_and_watermark_are_whole_blocks():
    pool = KvPool(1000, 10, 1, block_tokens=16)
    assert (pool.capacity, pool.watermark) == (992, 0)
