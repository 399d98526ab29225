"""Invariants of the engine over random workloads, budgets, GPUs, models and policies.

`replay` re-derives, from a trace's chunks, preemptions and token times alone, who must run and
emit in every iteration and how much KV that holds, the way the schedulers' sources describe it,
and checks the engine's own record against it, request by request.
"""

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import custom_gpu, get_gpu
from sim.presets.models import get_model
from sim.serving.engine import SimulationLimitError, simulate
from sim.serving.policies import POLICIES, Limits
from sim.serving.workloads import make_workload

# Small-memory custom GPUs put KV under pressure, so admission and preemption get exercised.
GPUS = [get_gpu("illustrative"), get_gpu("a100-80gb"), get_gpu("l4"),
        custom_gpu(300, 2, 19.0), custom_gpu(150, 1, 18.2)]
TIGHT_GPU = custom_gpu(150, 1, 18.2)   # dense-8b leaves (18.2 x 0.9 - 16) GB = ~2,900 KV tokens
MAX_ITERATIONS = 100_000   # the longest scenario (30 requests x 900 tokens at budget 1) needs < 30,000
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
    return dict(workload=workload,
                # small budgets too, below the running decoders (vLLM V1 then skips some)
                budget=draw(st.one_of(st.integers(1, 12), st.integers(1, 4096))),
                max_seqs=draw(st.integers(1, 64)),
                gpu=TIGHT_GPU if tight else draw(st.sampled_from(GPUS)),
                model=MODELS[0] if tight else draw(st.sampled_from(MODELS)),
                mode=draw(st.sampled_from(["simple", "roofline"])))


def run(s):
    """The scenario under s["policy"], 10% of memory kept back whatever the engine's own reserve
    (so the small GPUs keep their KV pressure), vLLM V0 at a budget its prompts fit (it refuses
    a longer prompt). Every one finishes in far fewer iterations than the cap: a run that
    reaches it is a scheduling bug (a livelock), not a refusal."""
    spec, w = POLICIES[s["policy"]], s["workload"]
    budget = max(s["budget"], int(w.prompt.max())) if spec.profile.prompt_limit else s["budget"]
    try:
        return simulate(w, spec, CostModel(s["gpu"], s["model"], s["mode"]), budget=budget,
                        limits=Limits(max_seqs=s["max_seqs"], max_iterations=MAX_ITERATIONS,
                                      prefix_caching=s.get("prefix_caching", "off")),
                        reserve_fraction=0.1)
    except SimulationLimitError:
        raise
    except InputError:
        assume(False)   # the workload cannot fit this GPU (refused up front, by design)


def emitted_per_iteration(trace) -> list[Counter]:
    """Who emitted a token at the end of each iteration (from the token times alone). A stream's
    token from before the run (at its arrival) is left out; every other token must land on the
    end of an iteration."""
    emitters = [Counter() for _ in range(trace.iterations)]
    for r in range(len(trace.arrival_s)):
        times = trace.tokens_of(r)[1:] if trace.prefilled[r] else trace.tokens_of(r)
        its = np.searchsorted(trace.end_s, times)
        assert np.all(its < trace.iterations)
        np.testing.assert_array_equal(trace.end_s[its], times)
        for i in its:
            emitters[i][r] += 1
    return emitters


def replay(trace, spec) -> None:
    """Walk the iterations as the schedulers' sources describe them and check, per iteration:
    the victims of its preemptions were each the newest running request; it emitted one token
    for each of the first `decode_tokens` running decoders (admission order; the rest, skipped,
    emit nothing) and one for each prompt whose prefill it completed, and nothing else; its KV
    in use is what the running requests hold (a decoder: its context; a partial prefill: its
    whole prompt when reserved at admission, else the chunks so far), in whole KV blocks, and at
    least max_model_len for a request Orca admits. A stream joins the running set in the
    iteration its first stay starts (it waits for a seat under max_seqs)."""
    whole_prompt, block = spec.reserve_whole_prompt, spec.profile.kv_block_tokens
    n = len(trace.arrival_s)
    prompt, output = trace.prompt.tolist(), trace.output.tolist()
    floor = -(-max(p + o for p, o in zip(prompt, output)) // block) * block \
        if spec.profile.kv_floor else 0
    emitters = emitted_per_iteration(trace)
    streams_at, chunks_at = {}, {}   # iteration -> streams that join / chunks that run
    for r in np.flatnonzero(trace.prefilled):
        joined = int(trace.member_first[trace.member_request == r].min())
        assert trace.arrival_s[r] <= trace.start_s[joined]
        streams_at.setdefault(joined, []).append(int(r))
    for i, r, start, length in zip(*(c.tolist() for c in (
            trace.chunk_iteration, trace.chunk_request, trace.chunk_start, trace.chunk_length))):
        chunks_at.setdefault(i, []).append((r, start, length))
    preempted = Counter(trace.preemption_iteration.tolist())
    victims = iter(trace.preemption_request.tolist())
    kv, emitted, target = [0] * n, [0] * n, list(prompt)
    floored: set[int] = set()             # requests Orca gave max_model_len up front
    admitted_as: dict[int, int] = {}     # running request -> its admission number
    admissions = 0
    decoding: set[int] = set()
    for i in range(trace.iterations):
        for r in streams_at.get(i, ()):
            kv[r], admitted_as[r], admissions = prompt[r], admissions, admissions + 1
            decoding.add(r)
        for _ in range(preempted[i]):
            victim = next(victims)
            assert admitted_as[victim] == max(admitted_as.values()), "not the newest running"
            del admitted_as[victim]
            kv[victim] = 0
            floored.discard(victim)
            decoding.discard(victim)
            target[victim] = prompt[victim] + emitted[victim]
        stepping = sorted(decoding, key=admitted_as.get)[:trace.decode_tokens[i]]
        completed = []
        for r, start, length in chunks_at.get(i, ()):
            if start == 0:   # (re)admitted
                admitted_as[r], admissions = admissions, admissions + 1
                kv[r] = target[r] if whole_prompt else 0
                floored.add(r)
            kv[r] += 0 if whole_prompt else length
            if start + length == target[r]:
                completed.append(r)
        assert emitters[i] == Counter(stepping + completed), f"iteration {i}"
        for r in stepping:
            kv[r] += 1
        for r in stepping + completed:
            emitted[r] += 1
            decoding.add(r)
            if emitted[r] == output[r]:
                kv[r] = 0
                floored.discard(r)
                decoding.discard(r)
                del admitted_as[r]
        slots = [max(-(-held // block) * block, floor if r in floored else 0)
                 for r, held in enumerate(kv) if r in admitted_as]
        assert trace.kv_used_tokens[i] == sum(slots), f"iteration {i}"
    assert emitted == output and not admitted_as


@pytest.mark.parametrize("policy", sorted(POLICIES))
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(scenarios(), scenarios(tight=True)))
def test_engine_invariants(policy, s):
    """Without prefix caching (the replay admits a request at its prompt's first token;
    tests/sim/serving/test_prefix_caching.py checks the runs with it)."""
    s["policy"] = policy
    w, trace = s["workload"], run(s)
    n = len(w)
    event("preempted" if trace.preemptions.any() else "no preemption")
    event("the budget skipped decoders" if len(trace.partial_step_iteration) else "no decoder skipped")
    # every request emits exactly its output tokens (streams also carry the token they emitted
    # before the run), at strictly increasing times
    counts = np.diff(trace.token_offsets)
    np.testing.assert_array_equal(counts, w.output + w.prefilled)
    assert np.all(np.diff(trace.token_s)[np.diff(np.repeat(np.arange(n), counts)) == 0] > 0)
    # prefill tokens processed = prompt (plus recomputed tokens after a preemption)
    prefill = np.bincount(trace.chunk_request, trace.chunk_length, minlength=n)
    np.testing.assert_array_equal(prefill, np.where(w.prefilled, 0, w.prompt) + trace.recomputed_tokens)
    np.testing.assert_array_equal(np.bincount(trace.preemption_request, minlength=n), trace.preemptions)
    # KV in use never exceeds capacity, and all of it is given back
    assert np.all(trace.kv_used_tokens <= trace.kv_capacity_tokens)
    assert np.all(trace.kv_used_tokens >= 0) and trace.kv_used_tokens[-1] == 0
    # the clock never goes back
    assert np.all(trace.end_s > trace.start_s)
    assert np.all(trace.start_s[1:] >= trace.end_s[:-1])
    replay(trace, POLICIES[s["policy"]])
    _check_budget(s, trace)


def _check_budget(s, trace):
    budget, dec, pre = s["budget"], trace.decode_tokens, trace.prefill_tokens
    policy = s["policy"]
    if policy == "vllm-v1":
        assert np.all(dec + pre <= budget)
        # no request is admitted (first chunk at position 0) in an iteration that preempted
        admitting = np.unique(trace.chunk_iteration[trace.chunk_start == 0])
        assert not np.any(trace.iteration_preemptions[admitting])
    elif policy == "sarathi":   # every decode always runs; only the prefill share is capped
        assert np.all(pre <= np.maximum(budget - dec, 0))
        np.testing.assert_array_equal(dec, trace.running_decoders)
    elif policy == "sglang":    # prefill batches run alone, within the chunk size
        assert np.all(pre <= budget)
        assert np.all(dec[pre > 0] == 0)
    elif policy == "vllm-v0":   # prefill-only iterations
        assert np.all(dec[pre > 0] == 0)
    else:                       # orca: every decode, whole prompts, no budget
        np.testing.assert_array_equal(dec, trace.running_decoders)
        assert np.all(np.isin(trace.chunk_start, 0))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
