"""KV memory: each engine's KV capacity, the one its runs hold, and the source article's arithmetic
against it (the Memory page's words: tests/ui/claims_memory.py)."""

from __future__ import annotations

import re

import pytest

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import POLICIES, Limits, get_policy, lane_budget
from sim.serving.workloads import burst
from sim.studies.memory import (
    admission_rule,
    kv_capacities,
    kv_capacity,
    kv_pressure,
    kv_usage,
    memory_steps,
)

SEED_SIMPLE = CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple")


@pytest.mark.parametrize("gpu, model, tp, budget", [
    ("illustrative", "dense-8b", 1, 576), ("l4", "llama-3.1-8b", 1, 2048),
    ("h100-sxm", "llama-3.1-70b", 4, 16384), ("b200", "mixtral-8x7b", 1, 8192)])
def test_each_engines_capacity_is_the_one_its_runs_hold(gpu, model, tp, budget):
    """The capacity the page shows for an engine is the one its run's KV pool has, to the token
    (its own reserve, its blocks): one value, computed as the run computes it."""
    cost = CostModel(get_gpu(gpu), get_model(model), tp=tp)
    workload = burst(2, prompt=64, output=2)
    for capacity in kv_capacities(cost, budget):
        spec = capacity.policy
        trace = simulate(workload, spec, cost, budget=lane_budget(spec, workload, budget))
        assert capacity.tokens.value == trace.kv_capacity_tokens, spec.name
        assert kv_usage(trace, cost).capacity_tokens == capacity.tokens.value


def test_the_capacity_is_memory_less_the_engines_own_reserve_less_the_weights():
    """On the textbook GPU (80 GB, 16 GB of weights): Sarathi-Serve keeps back 15% (52 GB,
    396,720 tokens in 16-token blocks), vLLM V1 8% and its profile run's activations and CUDA
    graphs (56.4 GB, 430,464), not a flat 10% (56 GB, 427,246) for every engine."""
    by_name = {c.policy.name: c for c in kv_capacities(SEED_SIMPLE, 576)}
    assert list(by_name) == list(POLICIES)
    sarathi, v1, sglang = by_name["sarathi"], by_name["vllm-v1"], by_name["sglang"]
    assert sarathi.bytes.value == pytest.approx(80e9 * 0.85 - 16e9)
    assert sarathi.tokens.value == 396_720 and v1.tokens.value == 430_464
    # the MLP over 576 tokens, the sampler's 576 rows of float32 logits, 0.5 GiB of graphs
    profiled = 576 * 3 * 14336 * 2 + 576 * 2 * 128256 * 4 + 2**29
    assert v1.bytes.value == pytest.approx(80e9 * 0.92 - 16e9 - profiled)
    assert v1.kept_back.startswith("0.09472 of 80 GB = 7.58 GB: 8% (gpu_memory_utilization 0.92) "
                                   "+ the profile run's activations, estimated: 576 tokens × 3 × "
                                   "14,336 × 2 B = 0.05 GB in the feed-forward layers, 576 rows × "
                                   "2 × 128,256 × 4 B")
    assert sarathi.bytes.substituted == "80 GB × (1 − 0.15) − 16 GB"
    assert sarathi.bytes.formula == "memory × (1 − reserve) − weights"
    assert sarathi.tokens.substituted == "⌊52 GB / 131 kB / 16⌋ × 16"
    # SGLang: 10 GiB at least above 60 GiB, a share rounded to 3 places, 1-token pages
    assert sglang.bytes.value == pytest.approx(80e9 * (1 - 0.134) - 16e9)
    assert sglang.tokens.value == int(sglang.bytes.value // 131072)
    assert "⌋ ×" not in sglang.tokens.substituted
    assert sglang.kept_back.startswith(
        "0.134 of 80 GB = 10.7 GB: 512 × 2²⁰ B + 1.5 × 2²⁰ B × 2,048 + 1/8 × 2³⁰ B + 2 × 2²⁰ B × "
        "256 decode graphs + 8 × 2²⁰ B × 31 prefill graphs = 4,472 × 2²⁰ B, raised to its "
        "10 × 2³⁰ B floor")
    assert "iB" not in sglang.kept_back
    assert sarathi.kept_back == "0.15 of 80 GB = 12 GB: 15% (gpu_memory_utilization 0.85)"
    # SGLang's reserve grows with its chunk: on an L4 (below 60 GiB, no 10 GiB floor) 1.5 MiB a
    # token and 8 MiB a prefill graph (42 to 2,048 tokens, 50 to 4,096), as a rounded share
    l4 = CostModel(get_gpu("l4"), get_model("llama-3.1-8b"))
    small, large = (kv_capacity(l4, get_policy("sglang"), b) for b in (2048, 4096))
    mib = l4.gpu.memory_bytes / 2**20
    assert large.reserve - small.reserve == pytest.approx(
        round((mib - 512 - 1.5 * 2048 - 128 - 2 * 48 - 8 * 42) / mib, 3)
        - round((mib - 512 - 1.5 * 4096 - 128 - 2 * 48 - 8 * 50) / mib, 3))
    assert large.bytes.value < small.bytes.value


def test_capacity_steps_are_per_gpu_under_tp():
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-70b"), tp=4)
    steps = {s.key: s for s in memory_steps(cost)}
    assert steps["weights"].value == get_model("llama-3.1-70b").weight_bytes / 4
    assert "/ 4 GPUs" in steps["weights"].substituted
    v1 = kv_capacity(cost, get_policy("vllm-v1"), 8192)
    # per GPU: a quarter of the MLP's activations, all of the sampler's and the graphs'
    profiled = 8192 * 3 * 28672 / 4 * 2 + 1024 * 2 * 128256 * 4 + 2**29
    assert steps["gpu_memory"].value == 81559 * 2**20
    assert v1.bytes.value == pytest.approx(81559 * 2**20 * 0.92 - steps["weights"].value - profiled)
    assert v1.tokens.value == int(v1.bytes.value // steps["kv_bytes_per_token"].value) // 16 * 16


def test_weights_that_fit_beside_some_engines_reserves_leave_out_only_the_others():
    """On an L4 at budget 8,192 SGLang keeps back 57% of memory (1.5 MiB per chunk token), and an
    8B model's weights fit beside it no more: SGLang has no KV cache, the others theirs; where no
    engine has room the error says so."""
    l4 = CostModel(get_gpu("l4"), get_model("llama-3.1-8b"))
    fits = {c.policy.name: c.fits for c in kv_capacities(l4, 8192)}
    assert fits == {"sarathi": True, "vllm-v1": True, "sglang": False, "vllm-v0": True,
                    "orca": True}
    sglang = kv_capacity(l4, get_policy("sglang"), 8192)
    assert sglang.tokens.value == 0 and sglang.bytes.value < 0
    pressure = kv_pressure(l4, 1, 1000, 1, 1000, 8192)
    assert pressure.left_out == ("SGLang",)
    assert "SGLang" not in {e for s in pressure.shares for e in s.engines}
    with pytest.raises(InputError, match="do not fit"):
        kv_capacities(CostModel(get_gpu("l4"), get_model("yi-34b")), 2048)


def test_kv_pressure_is_the_source_articles_arithmetic_against_each_engines_capacity():
    """The source article: 20 x 8,192 tokens x 128 KiB = 20 GiB; 64 streams x 4,000 tokens =
    31.25 GiB; together 55 GB: more than Sarathi-Serve's 52 GB (106%), within vLLM V1's 57.6 GB.
    Engines that keep back the same share are one row."""
    pressure = kv_pressure(SEED_SIMPLE, 20, 8192, 64, 4000, 576)
    assert pressure.prompts.value == 20 * 2**30 and pressure.streams.value == 31.25 * 2**30
    assert pressure.together.value == pressure.prompts.value + pressure.streams.value
    shares = {s.engines: s for s in pressure.shares}
    assert list(shares) == [("Sarathi-Serve", "vLLM V0", "Orca"), ("vLLM V1",), ("SGLang",)]
    capacities = {c.policy.engine: c for c in kv_capacities(SEED_SIMPLE, 576)}
    for engines, share in shares.items():
        for engine in engines:
            assert share.capacity.value == capacities[engine].bytes.value
        assert share.share.value == pytest.approx(pressure.together.value / share.capacity.value)
    assert shares[("vLLM V1",)].share.value < 1 < shares[("SGLang",)].share.value
    assert shares[("Sarathi-Serve", "vLLM V0", "Orca")].capacity.title == \
        "KV capacity under Sarathi-Serve, vLLM V0 and Orca"
    with pytest.raises(InputError, match="do not fit"):
        kv_pressure(CostModel(get_gpu("l4"), get_model("yi-34b")), 1, 1, 0, 1, 2048)


def test_kv_pressure_formulas_name_the_numbers_they_show():
    """Each step's formula has the terms its substituted numbers have, in the same operations:
    the streams' KV is streams x context, not prompts x tokens; each capacity is memory × (1 −
    reserve) − weights with those numbers, as in the capacity table."""
    pressure = kv_pressure(SEED_SIMPLE, 20, 8192, 64, 4000, 576)
    steps = {s.title: s for s in pressure.steps}
    streams = steps["KV of the running streams"]
    assert streams.formula == "streams × context × KV bytes per token"
    assert streams.substituted == "64 × 4,000 × 131 kB"
    assert steps["KV of the simultaneous prompts"].formula == "prompts × tokens × KV bytes per token"
    assert steps["KV capacity under vLLM V1"].substituted == "80 GB × (1 − 0.09472) − 16 GB"

    def operations(text):
        return re.findall(r" [×+−/] ", text)
    for step in pressure.steps:
        assert operations(step.formula) == operations(step.substituted), step.title
    with pytest.raises(InputError, match="streams must be"):
        kv_pressure(SEED_SIMPLE, 20, 8192, -1, 4000, 576)
    with pytest.raises(InputError, match="context must be"):
        kv_pressure(SEED_SIMPLE, 20, 8192, 64, 0.5, 576)


def test_preemptions_are_counted_and_priced():
    cost = CostModel(get_gpu("l4"), get_model("llama-3.1-8b"))
    # per-chunk allocation (vLLM V1) admits every prompt, then decodes outgrow the cache
    trace = simulate(burst(24, prompt=2000, output=400), get_policy("vllm-v1"), cost, budget=2048)
    usage = kv_usage(trace, cost)
    assert usage.preemptions > 0 and usage.recomputed_tokens > 0
    assert usage.peak_used_tokens <= usage.capacity_tokens
    assert usage.wasted.value == pytest.approx(
        usage.recomputed_tokens * cost.model.flops_per_token / cost.gpu.peak_flops)


def test_the_most_kv_cached_blocks_nobody_reads_hold_is_counted_with_caching_on_only():
    """vLLM V1 caches prefixes as it ships: a burst's finished requests leave their full blocks
    cached (at most the pool); Sarathi-Serve, which ships caching off, has none to count."""
    cost = CostModel(get_gpu("l4"), get_model("llama-3.1-8b"))
    work = burst(8, prompt=2000, output=20)
    cached = kv_usage(simulate(work, get_policy("vllm-v1"), cost, budget=2048), cost)
    trace = simulate(work, get_policy("vllm-v1"), cost, budget=2048)
    assert cached.peak_cached_tokens == trace.kv_cached_tokens.max() > 0
    assert cached.peak_cached_tokens <= cached.capacity_tokens
    off = kv_usage(simulate(work, get_policy("sarathi"), cost, budget=2048), cost)
    assert off.peak_cached_tokens is None


def test_sglangs_admission_words_say_what_the_running_requests_keep():
    """All of their output's KV while they ignore EOS (the default, as SGLang's benchmark sends
    requests), new_token_ratio of it when they may stop at EOS; the other engines' words are
    their own either way."""
    sglang, sarathi = get_policy("sglang"), get_policy("sarathi")
    chat = Limits(disable_ignore_eos=True)
    assert admission_rule(sglang).endswith("; they keep all of it, as requests that ignore EOS "
                                           "(as SGLang's benchmark sends them)")
    assert admission_rule(sglang, chat).endswith("; they keep new_token_ratio of it (0.7, "
                                                 "falling to 0.098), as requests that may stop at EOS")
    assert admission_rule(sarathi, chat) == admission_rule(sarathi) and "EOS" not in admission_rule(sarathi)
