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
    with pytest.raises(KvOverflow, match="1 KV tokens asked for with 0 of 100 free"):
        pool.reserve(2, 1)
    with pytest.raises(KvOverflow):
        pool.append(np.array([0]))
    assert pool.used == 100 and pool.newest() == 1   # nothing changed


def test_preempting_an_empty_pool_is_a_bug():
    with pytest.raises(KvOverflow, match="^KV exhausted with nothing to preempt$"):
        KvPool(10, 0, 1).preempt_newest()


def test_watermark_is_kept_for_the_policies_to_read():
    assert KvPool(1000, 10, 1).watermark == 10
