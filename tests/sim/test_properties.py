"""Invariants of the engine over random workloads, budgets, GPUs, models and policies."""

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import custom_gpu, get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import POLICIES, Limits
from sim.serving.workloads import make_workload

# Small-memory custom GPUs put KV under pressure, so admission and preemption get exercised.
GPUS = [get_gpu("illustrative"), get_gpu("a100-80gb"), get_gpu("l4"),
        custom_gpu(300, 2, 19.0), custom_gpu(150, 1, 18.2)]
TIGHT_GPU = custom_gpu(150, 1, 18.2)   # dense-8b leaves (18.2 x 0.9 - 16) GB = ~2,900 KV tokens
MODELS = [get_model(m) for m in ("dense-8b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "llama-2-7b")]


@st.composite
def scenarios(draw, tight=False):
    """Random workloads; `tight` packs many requests onto a GPU with ~2,900 KV tokens, so that
    admission control and preemption run in most examples."""
    n_new = draw(st.integers(1, 30 if tight else 10))
    n_streaming = draw(st.integers(0, 6))
    arrivals = draw(st.lists(st.floats(0, 0.2 if tight else 2), min_size=n_new, max_size=n_new))
    prompts = draw(st.lists(st.integers(1, 600 if tight else 3000), min_size=n_new, max_size=n_new))
    outputs = draw(st.lists(st.integers(1, 300 if tight else 40), min_size=n_new + n_streaming,
                            max_size=n_new + n_streaming))
    contexts = draw(st.lists(st.integers(1, 2000), min_size=n_streaming, max_size=n_streaming))
    workload = make_workload(np.r_[np.zeros(n_streaming), arrivals], np.r_[contexts, prompts],
                             outputs, np.r_[np.ones(n_streaming, bool), np.zeros(n_new, bool)])
    return dict(workload=workload, policy=draw(st.sampled_from(sorted(POLICIES))),
                budget=draw(st.integers(1, 4096)), max_seqs=draw(st.integers(1, 64)),
                gpu=TIGHT_GPU if tight else draw(st.sampled_from(GPUS)),
                model=MODELS[0] if tight else draw(st.sampled_from(MODELS)),
                mode=draw(st.sampled_from(["simple", "roofline"])))


def run(s):
    try:
        return simulate(s["workload"], POLICIES[s["policy"]], CostModel(s["gpu"], s["model"], s["mode"]),
                        budget=s["budget"], limits=Limits(s["max_seqs"]))
    except InputError:
        assume(False)   # the workload cannot fit this GPU (refused up front, by design)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(scenarios(), scenarios(tight=True)))
def test_engine_invariants(s):
    w, trace = s["workload"], run(s)
    n = len(w)
    # every request finishes exactly once: all its tokens, no more
    # (streams also carry the token they emitted before the run)
    counts = np.diff(trace.token_offsets)
    np.testing.assert_array_equal(counts, w.output + w.prefilled)
    # prefill tokens processed = prompt (plus recomputed tokens after a preemption)
    prefill = np.bincount(trace.chunk_request, trace.chunk_length, minlength=n)
    np.testing.assert_array_equal(prefill, np.where(w.prefilled, 0, w.prompt) + trace.recomputed_tokens)
    # KV in use never exceeds capacity
    assert np.all(trace.kv_used_tokens <= trace.kv_capacity_tokens)
    assert np.all(trace.kv_used_tokens >= 0)
    # the clock never goes back
    assert np.all(trace.end_s > trace.start_s)
    assert np.all(trace.start_s[1:] >= trace.end_s[:-1])
    # tokens of one request come out in order, each at the end of an iteration
    assert np.all(np.diff(trace.token_s)[np.diff(np.repeat(np.arange(n), counts)) == 0] > 0)
    _check_budget(s, trace)


def _check_budget(s, trace):
    budget, dec, pre = s["budget"], trace.decode_tokens, trace.prefill_tokens
    policy = s["policy"]
    if policy == "vllm-v1":
        assert np.all(dec + pre <= budget)
    elif policy == "sarathi":   # every decode always runs; only the prefill share is capped
        assert np.all(pre <= np.maximum(budget - dec, 0))
    elif policy == "sglang":    # prefill batches run alone, within the chunk size
        assert np.all(pre <= budget)
        assert np.all(dec[pre > 0] == 0)
    elif policy == "vllm-v0":   # prefill-only iterations
        assert np.all(dec[pre > 0] == 0)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(scenarios(), scenarios(tight=True)))
def test_sarathi_never_skips_a_running_decode(s):
    s["policy"] = "sarathi"
    trace = run(s)
    ends = trace.end_s
    for r in range(len(s["workload"])):
        if trace.preemptions[r]:
            continue
        times = trace.tokens_of(r)[1:] if s["workload"].prefilled[r] else trace.tokens_of(r)
        its = np.searchsorted(ends, times)
        np.testing.assert_array_equal(ends[its], times)       # tokens land on iteration ends
        assert np.all(np.diff(its) == 1)                       # one in every iteration
        if s["workload"].prefilled[r]:
            assert its[0] == 0                                 # from the very first iteration
