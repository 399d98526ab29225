"""Prefix caching (sim/serving/kv.py `PrefixCache`): hits in whole blocks and at most prompt - 1
tokens, least-recently-used eviction under KV pressure, a preempted request's blocks found again,
caching off leaving every figure as it was, and the cached prefix skipped before the per-request
hook's other caps."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import custom_gpu, get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.kv import KvPool, PrefixCache
from sim.serving.policies import POLICIES, Limits, get_policy
from sim.serving.workloads import conversations, make_workload, poisson
from tests.support.traces import same_trace

H100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
TIGHT = CostModel(custom_gpu(150, 1, 18.2), get_model("dense-8b"))   # 2,899 KV tokens at 10%


def shared(arrival, prompt, output, group, tokens):
    """A workload whose requests share `tokens` of their start with their `group`."""
    return make_workload(arrival, prompt, output, prefix_group=group, prefix_tokens=tokens)


def run(w, policy, caching="on", cost=H100, budget=8192, reserve=None, **limits):
    return simulate(w, get_policy(policy), cost, budget=budget, reserve_fraction=reserve,
                    limits=Limits(prefix_caching=caching, **limits))


# --- hits: whole blocks, at most prompt - 1 -------------------------------------------------
@pytest.mark.parametrize("policy, block", [("vllm-v1", 16), ("sglang", 1)])
def test_a_hit_is_whole_blocks_of_the_shared_prefix(policy, block):
    """Two requests share 500 tokens of their 1,000-token prompts; the second, arriving after
    the first has finished, finds 496 cached with vLLM's 16-token blocks (31 blocks: the 32nd
    holds tokens of both), all 500 with SGLang's 1-token pages."""
    w = shared([0.0, 5.0], [1000, 1000], [4, 4], [0, 0], [500, 500])
    trace = run(w, policy)
    assert trace.cached_tokens.tolist() == [0, 500 // block * block]
    assert trace.chunk_start[trace.chunk_request == 1].min() == 500 // block * block


@pytest.mark.parametrize("policy, hit", [("vllm-v1", 992), ("sglang", 999)])
def test_a_hit_leaves_at_least_one_prompt_token_to_compute(policy, hit):
    """The same 1,000-token prompt twice: the second finds at most prompt - 1 = 999 tokens
    (vLLM V1: 992, the whole blocks below 999), so its first token still has logits to come
    from."""
    w = shared([0.0, 5.0], [1000, 1000], [4, 4], [0, 0], [1004, 1004])
    trace = run(w, policy)
    assert trace.cached_tokens.tolist() == [0, hit]
    assert trace.chunk_length[trace.chunk_request == 1].sum() == 1000 - hit
    assert trace.prefix_hit_tokens == hit and trace.prefix_hit_rate == hit / 2000


def test_a_conversations_next_turn_finds_the_last_turn_and_its_answer():
    """Turn 2's prompt (700 tokens) begins with turn 1's prompt and answer (400 + 100): it
    finds 496 of them (31 blocks of 16)."""
    group, tokens = conversations(np.array([400, 700]), np.array([100, 50]))
    assert group.tolist() == [0, 0] and tokens.tolist() == [500, 750]
    trace = run(shared([0.0, 5.0], [400, 700], [100, 50], group, tokens), "vllm-v1")
    assert trace.cached_tokens.tolist() == [0, 496]


def test_a_row_shorter_than_the_last_turn_and_its_answer_starts_a_conversation():
    group, _ = conversations(np.array([400, 499, 500, 10]), np.array([100, 1, 1, 5]))
    assert group.tolist() == [0, 1, 1, 2]


def test_a_shared_prefix_is_put_before_the_drawn_prompts_of_its_share():
    w = poisson(2000, 4, seed=3, prompt=100, output=10, prefix_tokens=2000, prefix_share=0.25)
    has = w.prefix_tokens > 0
    assert abs(has.mean() - 0.25) < 0.03
    assert set(w.prompt[has].tolist()) == {2100} and set(w.prompt[~has].tolist()) == {100}
    assert len(set(w.prefix_group[has].tolist())) == 1
    assert len(set(w.prefix_group[~has].tolist())) == int((~has).sum())   # each its own
    # the arrivals are the seed's without a prefix
    np.testing.assert_array_equal(w.arrival_s, poisson(2000, 4, seed=3).arrival_s)


def test_the_prefix_columns_are_part_of_the_workloads_digest():
    a = poisson(10, 4, seed=3, prefix_tokens=100, prefix_share=1.0)
    b = make_workload(a.arrival_s, a.prompt, a.output)
    assert a != b and a.digest != b.digest


# --- eviction: least recently used, under pressure ------------------------------------------
def test_the_least_recently_used_entry_is_evicted_first_each_from_its_tail():
    """A pool of 10 blocks of 16: groups 0 and 1 each leave 3 blocks cached, 0 first; taking 8
    blocks, 4 more than are free, evicts group 0's 3 blocks whole and 1 of group 1's, its
    tail."""
    cache = PrefixCache(16, np.array([0, 1, 2]), np.array([48, 48, 0]))
    pool = KvPool(160, 0, 3, block_tokens=16)
    pool.cache = cache
    for request in (0, 1):
        pool.reserve(request, 48)
        pool.attach_cached(request, 48)   # nothing cached yet: a miss
        pool.free((request,))
    assert cache.tokens == {0: 48, 1: 48} and list(cache.lru) == [0, 1]
    assert pool.free_tokens == 160 and pool.in_use == 0
    pool.reserve(2, 8 * 16)
    assert cache.tokens == {1: 32}
    assert pool.allocated == 160 and cache.evictable == 32


def test_an_entry_a_running_request_reads_is_not_evicted():
    """Group 0's 3 cached blocks are read by a running request: the 7 blocks a new request
    takes evict group 1's blocks only, and 3 more than that do not fit."""
    cache = PrefixCache(16, np.array([0, 1, 0, 2, 3]), np.array([48, 48, 48, 0, 0]))
    pool = KvPool(160, 0, 5, block_tokens=16)
    pool.cache = cache
    for request in (0, 1):
        pool.reserve(request, 48)
        pool.attach_cached(request, 48)
        pool.free((request,))
    assert pool.attach_cached(2, 64) == 48   # reads group 0's 48 (3 blocks) of its 64
    pool.reserve(2, 16)
    assert cache.evictable == 48 and pool.free_tokens == 160 - 64
    pool.reserve(3, 6 * 16)
    assert cache.tokens == {0: 48} and pool.free_tokens == 0
    with pytest.raises(RuntimeError):
        pool.reserve(4, 16)


def test_under_kv_pressure_an_older_prefix_is_evicted_and_missed():
    """On 2,896 KV tokens (181 blocks): prompts of groups 0 and 1 (1,000 tokens, all shared)
    run in turn and each leaves 62 blocks cached; then a 2,600-token prompt of its own takes 163
    blocks, 57 free and 106 evicted: group 0's 62 (used least recently) and 44 of group 1's. A
    later prompt of group 1 finds the 18 blocks left (288 tokens); one of group 0, nothing."""
    w = shared([0.0, 10.0, 20.0, 40.0, 50.0], [1000, 1000, 2600, 1000, 1000], [2, 2, 2, 2, 2],
               [0, 1, 2, 1, 0], [1000, 1000, 0, 1000, 1000])
    trace = run(w, "vllm-v1", cost=TIGHT, budget=4096, reserve=0.1)
    assert trace.kv_capacity_tokens == 181 * 16
    assert trace.cached_tokens.tolist() == [0, 0, 0, 18 * 16, 0]


def test_the_trace_records_the_kv_cached_blocks_nobody_reads_hold_each_iteration():
    """The same run, iteration by iteration (each request prefills, then decodes its second
    token): request 0's 62 blocks (992 tokens) cached once it is done, group 1's beside them, the
    2,600-token prompt leaving only 18 blocks (288 tokens, 2,896 − 2,608) while it runs, then
    its own 162 full blocks cached too; cached and in use never pass the pool. Caching off:
    none."""
    w = shared([0.0, 10.0, 20.0, 40.0, 50.0], [1000, 1000, 2600, 1000, 1000], [2, 2, 2, 2, 2],
               [0, 1, 2, 1, 0], [1000, 1000, 0, 1000, 1000])
    trace = run(w, "vllm-v1", cost=TIGHT, budget=4096, reserve=0.1)
    assert trace.kv_cached_tokens.tolist() == [0, 992, 992, 1984, 288, 288 + 162 * 16,
                                               1888, 2880, 1888, 2880]
    assert (trace.kv_cached_tokens + trace.kv_used_tokens <= trace.kv_capacity_tokens).all()
    off = run(w, "vllm-v1", "off", cost=TIGHT, budget=4096, reserve=0.1)
    assert not off.kv_cached_tokens.any()


# --- a preempted request's blocks -------------------------------------------------------------
def test_a_preempted_request_finds_its_blocks_cached_again():
    """vLLM V1 at budget 10 on 2,899 KV tokens: the new 850-token prompt is preempted after 704
    tokens; its full blocks stay cached, and though the decoders' growth evicts some of them
    before it is readmitted, it finds the rest (272 tokens, 17 blocks) and recomputes 432, where
    without caching it recomputes all 704."""
    w = make_workload([0.0, 0.0, 0.0], [1000, 1000, 850], [300, 300, 2], [True, True, False])
    off = simulate(w, get_policy("vllm-v1"), TIGHT, budget=10, reserve_fraction=0.1,
                   limits=Limits(prefix_caching="off"))
    on = simulate(w, get_policy("vllm-v1"), TIGHT, budget=10, reserve_fraction=0.1)
    assert off.preemptions.tolist() == on.preemptions.tolist() == [0, 0, 1]
    assert off.recomputed_tokens.tolist() == [0, 0, 704]
    assert on.cached_tokens.tolist() == [0, 0, 272]
    assert on.recomputed_tokens.tolist() == [0, 0, 704 - 272]
    assert on.chunk_length[on.chunk_request == 2].sum() == 850 + 704 - 272
    readmitted = on.chunk_start[on.chunk_request == 2]
    assert readmitted[np.argmax(np.diff(readmitted, prepend=0) < 0)] == 272


# --- caching off: every figure as without it ----------------------------------------------------
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_with_caching_off_every_figure_is_the_run_without_shared_prefixes(policy):
    """Caching off, a workload that shares prefixes runs exactly as the same rows without them
    (the engine's path without caching), and the engines that ship it off run so by default."""
    w = poisson(60, 20, seed=2, prompt=300, output=20, prefix_tokens=600, prefix_share=0.5)
    plain = make_workload(w.arrival_s, w.prompt, w.output)
    off = run(w, policy, "off", cost=TIGHT, budget=4096, reserve=0.1)
    same_trace(off, run(plain, policy, "off", cost=TIGHT, budget=4096, reserve=0.1))
    assert off.cached_tokens is None and off.prefix_hit_rate == 0
    if not POLICIES[policy].profile.prefix_caching:
        same_trace(off, run(w, policy, None, cost=TIGHT, budget=4096, reserve=0.1))


def test_the_engines_ship_it_on_or_off_as_released():
    shipped = {name: p.profile.prefix_caching for name, p in POLICIES.items()}
    assert shipped == {"sarathi": False, "vllm-v1": True, "sglang": True, "vllm-v0": False,
                       "orca": False}


def test_orcas_kv_up_front_refuses_prefix_caching():
    with pytest.raises(InputError, match="turn prefix caching off"):
        run(make_workload([0.0], [100], [2]), "orca")


def test_a_prefix_caching_value_other_than_on_or_off_is_refused():
    with pytest.raises(InputError, match="on or off"):
        Limits(prefix_caching="yes")
    with pytest.raises(InputError, match="fcfs, lpm"):
        Limits(order="lifo")


# --- the per-request hook: the cached prefix skipped first ---------------------------------
def test_the_long_prefill_threshold_caps_the_uncached_rest():
    """vLLM V1 with a 256-token threshold: the first request, alone, computes its 1,000 tokens
    at once; the second arrives while it decodes, finds 992 of their shared 1,000 cached, and
    computes the other 608 of its 1,600 in chunks of at most 256 from token 992."""
    w = shared([0.0, 1.0], [1000, 1600], [500, 4], [0, 0], [1000, 1000])
    trace = run(w, "vllm-v1", long_prefill_token_threshold=256)
    assert trace.chunk_length[trace.chunk_request == 0].tolist() == [1000]
    second = trace.chunk_request == 1
    assert trace.chunk_start[second].tolist() == [992, 1248, 1504]
    assert trace.chunk_length[second].tolist() == [256, 256, 96]


def test_dynamic_chunks_are_sized_from_the_cached_prefix_on():
    """SGLang's dynamic chunking sizes a chunk by its prefix: a request that finds 3,000 tokens
    cached takes the chunk a request 3,000 tokens in would, not the budget's first chunk."""
    w = shared([0.0, 30.0], [3100, 6100], [2, 2], [0, 0], [3000, 3000])
    plain = make_workload([0.0], [6100], [2])
    cached = run(w, "sglang", budget=1024, chunking="dynamic")
    uncached = run(plain, "sglang", "off", budget=1024, chunking="dynamic")
    second = cached.chunk_length[cached.chunk_request == 1]
    assert cached.cached_tokens[1] == 3000 and second[0] < 1024
    starts = uncached.chunk_start.tolist()
    at_3000 = uncached.chunk_length[starts.index(min(s for s in starts if s >= 3000))]
    assert abs(int(second[0]) - int(at_3000)) <= 64


def test_longest_prefix_match_admits_the_request_with_the_longest_hit_first():
    """SGLang with lpm: of three prompts waiting together, the one whose 2,000 tokens are cached
    is admitted before the two unique ones queued ahead of it; with FCFS it waits its turn."""
    w = shared([0.0, 1.0, 1.0, 1.0], [2100, 3000, 3000, 2100], [2, 2, 2, 2], [0, 1, 2, 0],
               [2000, 0, 0, 2000])
    def first_tokens(order):
        t = run(w, "sglang", budget=2048, order=order)
        return [t.tokens_of(r)[0] for r in (1, 2, 3)]
    fcfs, lpm = first_tokens("fcfs"), first_tokens("lpm")
    assert fcfs[2] >= max(fcfs[:2])
    assert lpm[2] < min(lpm[:2])


# --- random runs: what a run with caching keeps true -----------------------------------------
@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from(["vllm-v1", "sglang", "sarathi", "vllm-v0"]),
       seed=st.integers(0, 1000), share=st.sampled_from([0.0, 0.5, 1.0]),
       prefix=st.sampled_from([0, 200, 1500]), qps=st.sampled_from([2.0, 50.0]))
def test_a_cached_run_computes_what_it_did_not_find(policy, seed, share, prefix, qps):
    """Under KV pressure (2,899 tokens): each request computes what it looked up less what it
    found; every hit is whole blocks and leaves a token to compute; KV in use stays within the
    capacity and is all given back."""
    w = poisson(40, qps, seed=seed, lengths="uniform", prompt=900, output=60,
                prefix_tokens=prefix, prefix_share=share)
    policy_spec = get_policy(policy)
    budget = 4096
    trace = simulate(w, policy_spec, TIGHT, budget=budget, reserve_fraction=0.1,
                     limits=Limits(prefix_caching="on", max_seqs=8))
    n = len(w)
    computed = np.bincount(trace.chunk_request, trace.chunk_length, minlength=n)
    np.testing.assert_array_equal(computed, trace.looked_up_tokens - trace.cached_tokens)
    block = policy_spec.profile.kv_block_tokens
    assert np.all(trace.cached_tokens % block == 0)
    admissions = trace.preemptions + 1
    assert np.all(trace.cached_tokens <= trace.looked_up_tokens - admissions)
    assert np.all(trace.kv_used_tokens <= trace.kv_capacity_tokens)
    assert trace.kv_used_tokens[-1] == 0
    np.testing.assert_array_equal(np.diff(trace.token_offsets), w.output)


# --- a trace file says which prompts share their start -------------------------------------
def test_a_trace_files_prefix_columns_are_read_together_and_checked():
    from sim.serving.trace_files import load_trace
    head = "arrival_s,prompt_tokens,output_tokens,prefix_group,prefix_tokens\n"
    w = load_trace((head + "0,100,10,0,110\n1,200,10,0,110\n2,50,5,-1,0\n").encode())
    assert w.prefix_group.tolist() == [0, 0, -1] and w.prefix_tokens.tolist() == [110, 110, 0]
    with pytest.raises(InputError, match=r"in no prefix group \(-1\) shares no tokens"):
        load_trace((head + "0,100,10,-1,50\n").encode())
    with pytest.raises(InputError, match="go together"):
        load_trace(b"arrival_s,prompt_tokens,output_tokens,prefix_group\n0,100,10,0\n")
    with pytest.raises(InputError, match=r"row 2, column prefix_tokens: '111' must be a whole "
                                         r"number in \[0, 110\]"):
        load_trace((head + "0,100,10,0,111\n").encode())
