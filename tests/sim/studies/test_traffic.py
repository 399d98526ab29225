"""Traffic: the burst drain, the budget frontier, capacity under SLO and KV memory (the CLI that
drives them: tests/cli/test_sweeps_cli.py). Workloads are small: the suite runs on two cores."""

from __future__ import annotations

import numpy as np
import pytest

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import GPUS, get_gpu
from sim.presets.models import get_model
from sim.serving.engine import SimulationLimitError, simulate
from sim.serving.metrics import request_times
from sim.serving.policies import CHUNKED, Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import burst, poisson, textbook_scenario
from sim.studies import capacity
from sim.studies.capacity import (
    SLO_PRESETS,
    compare_capacity,
    default_baseline_budget,
    evaluate,
    find_capacity,
    rate_curve,
    rate_grid,
)
from sim.studies.memory import kv_footprint
from sim.studies.sweep import (
    budget_grid,
    engine_defaults,
    fixed_share,
    misses,
    recommend,
    sweep,
)
from sim.studies.worked_example import worked_example
from sim.units import fmt_seconds

SEED_SIMPLE = CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple")
# the source article's prices in simple mode: 40 us of compute per token (16 GFLOP / 400 TFLOP/s), and a
# floor of 5.33 ms per iteration (16 GB of weights / 3 TB/s).
PER_TOKEN_S = 16e9 / 400e12


def last_ttft(workload, budget=576, policy="sarathi"):
    trace = simulate(workload, get_policy(policy), SEED_SIMPLE, budget=budget)
    return float(np.nanmax(request_times(trace).ttft_s)), trace


# --- the burst drain ---------------------------------------------------------------------------
def test_burst_drain_reproduces_the_worked_example_when_prompts_emit_one_token():
    """Ten 8,192-token prompts with 64 decoders at budget 576: chunks of 512, 160 iterations of
    576 tokens at 23.04 ms = 3.6864 s, the worked example's ceil(10 x 8192 / 512) x 23.04 ms. With
    one output token each, finished prompts leave at once and every chunk is exactly 512."""
    seconds, trace = last_ttft(burst(10, 8192, output=1, decodes=64))
    assert seconds == pytest.approx(160 * 576 * PER_TOKEN_S, rel=1e-12)
    assert seconds == pytest.approx(worked_example().values["burst_last_ttft_s"], rel=1e-12)
    assert set(trace.prefill_tokens[:160]) == {512}


def test_burst_drain_with_the_seed_outputs_takes_one_partial_iteration_more():
    """With the seed's 32 output tokens per prompt, each finished prompt decodes alongside the
    drain for 32 iterations, taking a token of every later chunk (chunk 510-511, not 512), so the
    81,920 tokens need 160 full iterations plus one partial: 3.6995 s, 13 ms above the worked
    example. The 64 decoders emit 256 tokens, so they outlast the 161-iteration drain."""
    seconds, trace = last_ttft(burst(10, 8192, output=32, decodes=64, decode_output=256))
    assert seconds == pytest.approx(3.69952, abs=1e-5)
    worked = worked_example().values["burst_last_ttft_s"]
    assert 0 < seconds - worked < 576 * PER_TOKEN_S
    first_token = np.flatnonzero(trace.prefill_tokens)[-1]
    assert first_token == 160 and trace.decode_tokens[first_token] >= 64


# --- the frontier ------------------------------------------------------------------------------
FRONTIER_BUDGETS = (192, 320, 576, 1088, 2112, 4160)   # 64 decodes + 128 ... 4,096 prefill tokens
# the source article's burst draining beside 64 decoders, swept over FRONTIER_BUDGETS
DRAIN = Run(workload=burst(10, 8192, output=1, decodes=64, decode_output=1000),
            policy=get_policy("sarathi"), cost=SEED_SIMPLE, budget=FRONTIER_BUDGETS[0])


def test_frontier_is_strictly_monotone_by_construction():
    """Ten 8,192-token prompts arrive with 64 decoders that outlast the drain; each prompt emits one
    token and leaves, so every drain iteration holds exactly 64 decodes + (budget - 64) prefill
    tokens, and budget - 64 divides 8,192. In simple mode at these budgets an iteration is
    compute-bound: t = budget x 40 us. Then prompt k's first token comes at
    k x 8192 / (budget - 64) x t, so p50 TTFT (the mean of k = 5 and 6) = 5.5 x 8192 x 40 us x
    budget / (budget - 64), strictly falling as the budget grows; and the drain's gaps are all t,
    over 1% of the decoders' 1,000 gaps each, so p99 TBT = t, strictly rising. (On general
    traffic the trend holds only loosely: prompts that do not divide into chunks, or that batch
    together at a large budget, can make a larger budget's median TTFT worse.)"""
    result = sweep(DRAIN, FRONTIER_BUDGETS)
    ttft = [p.metrics.ttft_s.p50 for p in result.points]
    tbt = [p.metrics.tbt_s.p99 for p in result.points]
    for budget, p50, p99 in zip(FRONTIER_BUDGETS, ttft, tbt):
        assert p50 == pytest.approx(5.5 * 8192 * PER_TOKEN_S * budget / (budget - 64), rel=1e-9)
        assert p99 == pytest.approx(budget * PER_TOKEN_S, rel=1e-9)
    assert all(a > b for a, b in zip(ttft, ttft[1:]))
    assert all(a < b for a, b in zip(tbt, tbt[1:]))


def test_recommendation_is_the_largest_budget_meeting_the_tbt_slo():
    result = sweep(DRAIN, FRONTIER_BUDGETS, tbt_slo_s=0.05)
    assert result.recommended == 1088          # 43.5 ms meets 50 ms; 2,112 gives 84.5 ms
    assert "1,088" in result.reason and "2,112" in result.reason
    none, why = recommend(result.points, 0.001)
    assert none is None and "no budget" in why


def test_a_ttft_target_picks_the_largest_budget_meeting_both_or_names_the_miss():
    """The burst at budgets around the source's: p50 TTFT falls and p99 TBT rises with the
    budget. With a TTFT target too, the pick meets both targets, or the reason names the one
    it misses; never a budget presented as meeting a target it misses."""
    result = sweep(DRAIN, FRONTIER_BUDGETS)
    by_budget = {p.budget: p for p in result.points}
    p1088 = by_budget[1088]
    loose = p1088.metrics.ttft_s.p50 + 1e-9          # 1,088 meets it, so it stays the pick
    assert recommend(result.points, 0.05, loose)[0] == 1088
    assert misses(p1088, 0.05, loose) == []
    tight = p1088.metrics.ttft_s.p50 - 1e-9          # only larger budgets are fast enough
    pick, why = recommend(result.points, 0.05, tight)
    assert pick == 1088 and misses(p1088, 0.05, tight) == [
        f"p50 TTFT {fmt_seconds(p1088.metrics.ttft_s.p50)} > {fmt_seconds(tight)}"]
    assert "misses the TTFT target" in why and "no budget in the sweep meets both" in why
    assert misses(by_budget[2112], 0.05) == [
        f"p99 TBT {fmt_seconds(by_budget[2112].metrics.tbt_s.p99)} > 50 ms"]


def test_regime_flags():
    """Tiny budgets: a full iteration costs less than two empty ones (fixed share > 1/2). Budgets
    at or above the longest prompt + peak decodes never split a prompt."""
    assert fixed_share(SEED_SIMPLE, 192) == pytest.approx((16e9 / 3e12) / (192 * PER_TOKEN_S))
    result = sweep(Run(workload=poisson(40, 2, prompt=500, output=8, seed=1),
                       policy=get_policy("sarathi"), cost=SEED_SIMPLE, budget=128),
                   (128, 320, 4096))   # the boundary: 2 x 5.33 ms / 40 us = 267
    tiny, mid, huge = result.points
    assert tiny.overhead_dominated and not mid.overhead_dominated
    assert huge.chunking_inactive and huge.split_prompts == 0
    assert not tiny.chunking_inactive and tiny.split_prompts == 40


@pytest.mark.parametrize("gpu, vllm, sglang", [
    ("h100-sxm", 8192, 8192), ("h200", 8192, 8192), ("a100-80gb", 2048, 8192),
    ("a100-40gb", 2048, 4096), ("l40s", 2048, 4096), ("l4", 2048, 4096),
    ("rtx-4090", 2048, 4096), ("b200", 16384, 16384), ("mi300x", 16384, 16384)])
def test_engine_default_budgets(gpu, vllm, sglang):
    """The marks a sweep shows are the engine profiles' defaults (vLLM 0.33.0: 16,384 with >= 160
    GiB; SGLang 0.5.23: 4,096 for 20-35 GiB)."""
    assert [d.budget for d in engine_defaults(GPUS[gpu])] == [vllm, sglang]


# --- capacity ----------------------------------------------------------------------------------
def test_chunked_capacity_beats_unchunked_under_a_strict_tbt_slo():
    """Mistral-7B's strict SLO (p99 TBT 0.1 s) on an A100: whole 1,024-token prompts stall every
    decoder, so vLLM V0 hits the TBT limit at a lower rate than Sarathi at budget 512, whose
    iterations stay near 512 tokens (~25 ms) at any load."""
    cost = CostModel(get_gpu("a100-80gb"), get_model("mistral-7b"))
    calls = []
    result = compare_capacity(
        lambda qps: poisson(150, qps, prompt=1024, output=64, seed=3), cost,
        policy=get_policy("sarathi"), budget=512, baseline=get_policy("vllm-v0"),
        baseline_budget=2048, tbt_slo_s=SLO_PRESETS["mistral-7b-strict"].tbt_slo_s,
        max_runs=8, progress=lambda fraction, text: calls.append(fraction))
    ours, theirs = result.policy, result.baseline
    assert theirs.capacity_qps > 0
    first_miss = next(p for p in theirs.points if not p.sustained)
    assert first_miss.p99_tbt_s > 0.1 and first_miss.median_delay_s <= 2   # TBT-limited
    assert all(p.p99_tbt_s < 0.05 for p in ours.points)
    assert ours.capacity_qps >= theirs.capacity_qps and result.ratio >= 1
    assert 0 < len(calls) <= 16 and calls == sorted(calls) and calls[-1] <= 1
    for r in (ours, theirs):
        assert len(r.points) <= 8
        passed = {p.qps for p in r.points if p.sustained}
        assert r.capacity_qps in passed
        assert r.failed_qps is None or not any(p.sustained for p in r.points
                                               if p.qps == r.failed_qps)


def test_a_search_the_run_cap_ends_before_any_rate_passes_has_no_capacity():
    """Three runs missed: the capacity is below the lowest rate tried, not known to be 0."""
    cost = CostModel(get_gpu("a100-80gb"), get_model("mistral-7b"))
    result = find_capacity(lambda qps: poisson(30, qps, prompt=1024, output=16, seed=0),
                           get_policy("sarathi"), cost, budget=512, tbt_slo_s=1e-4, max_runs=3)
    assert result.capacity_qps == 0 and len(result.points) == 3 and result.undefined
    assert result.cut_short == "the search stopped at its cap of 3 runs"
    assert result.reason.endswith("every rate tried, down to "
                                  f"{min(p.qps for p in result.points):.3g} QPS; {result.cut_short}")


def test_capacity_is_zero_when_no_rate_down_to_the_lowest_worth_trying_meets_the_slo():
    cost = CostModel(get_gpu("a100-80gb"), get_model("mistral-7b"))
    result = find_capacity(lambda qps: poisson(3, qps, prompt=64, output=4, seed=0),
                           get_policy("sarathi"), cost, budget=512, tbt_slo_s=1e-6, max_runs=100)
    assert result.capacity_qps == 0 and not result.undefined and result.cut_short == ""
    assert "were not tried (their arrivals would spread" in result.reason


MISTRAL = CostModel(get_gpu("a100-80gb"), get_model("mistral-7b"))


def forty_requests(qps):
    return poisson(40, qps, seed=0, lengths="fixed", prompt=512, output=20)


def test_a_search_that_meets_the_iteration_cap_keeps_what_it_proved():
    """A run at the cap raised out of the whole comparison: the chunked policy's finished search
    (and 29 s of CPU) were thrown away. Now the capped search ends there and says so."""
    result = compare_capacity(forty_requests, MISTRAL, policy=get_policy("sarathi"), budget=512,
                              baseline=get_policy("vllm-v0"), baseline_budget=2048,
                              tbt_slo_s=0.03, limits=Limits(max_iterations=300))
    ours, theirs = result.policy, result.baseline
    assert ours.capacity_qps == ours.ceiling_qps and "compute ceiling" in ours.reason
    assert theirs.capacity_qps == 0 and len(theirs.points) == 2
    assert theirs.capped and not ours.capped
    assert "stopped when a run at 10.4 QPS needed more than 300 iterations" in theirs.reason
    assert result.ratio is None


def test_a_cap_met_mid_bisection_reports_the_best_rate_proved(monkeypatch):
    real, calls = capacity._evaluate, []

    def capped_on_the_eighth_run(qps, *args, **kwargs):
        calls.append(qps)
        if len(calls) == 8:
            raise SimulationLimitError("capped", 10_000)
        return real(qps, *args, **kwargs)
    monkeypatch.setattr(capacity, "_evaluate", capped_on_the_eighth_run)
    result = find_capacity(forty_requests, get_policy("sarathi"), MISTRAL, budget=512,
                           tbt_slo_s=0.022)
    proved = max(p.qps for p in result.points if p.sustained)
    assert len(result.points) == 7 and result.capacity_qps == proved > 0
    assert result.failed_qps is not None and result.failed_qps > proved
    assert f"stopped when a run at {calls[-1]:.3g} QPS" in result.reason


# --- max partial prefills ------------------------------------------------------------------------
@pytest.mark.parametrize("policy", CHUNKED)
def test_max_concurrent_prefills_caps_prefills_per_iteration(policy):
    """Twenty 100-token prompts at budget 1,024: uncapped, one iteration admits ten whole prompts
    and part of an eleventh; capped at 2, no iteration holds more than two prefills."""
    workload = burst(20, prompt=100, output=3)
    spec = get_policy(policy)
    free = simulate(workload, spec, SEED_SIMPLE, budget=1024)
    capped = simulate(workload, spec, SEED_SIMPLE, budget=1024, limits=Limits(max_concurrent_prefills=2))
    assert np.bincount(free.chunk_iteration).max() > 2
    assert np.bincount(capped.chunk_iteration).max() <= 2
    assert np.array_equal(np.diff(capped.token_offsets), workload.output)


# --- KV memory -----------------------------------------------------------------------------------
def test_the_source_articles_kv_arithmetic():
    """The source article: 'using the example layout (128 KiB per token), 20 simultaneous 8,192-token
    prompts need 20 GiB of KV'."""
    per_token = get_model("dense-8b").kv_bytes_per_token
    assert per_token == 128 * 1024
    assert kv_footprint(20, 8192, per_token).value == 20 * 2**30


def test_slo_presets_name_models_the_simulator_has():
    for preset in SLO_PRESETS.values():
        assert get_model(preset.model).name.split()[0].lower() in preset.label.lower()


# --- what the traffic pages add to sim ----------------------------------------------------------
def test_budget_grid_doubles_and_keeps_the_budgets_worth_knowing():
    assert budget_grid(128, 16384, extra=(576, 2048, 8192, 99_999)) == (
        128, 256, 512, 576, 1024, 2048, 4096, 8192, 16384)
    assert budget_grid(100, 1000) == (100, 200, 400, 800, 1000)
    assert budget_grid(3, 3) == (3,)
    with pytest.raises(InputError, match="above the largest"):
        budget_grid(2048, 128)
    with pytest.raises(InputError, match="at most 32"):
        budget_grid(1, 10_000_000, extra=range(100, 110))


def test_preemptions_are_recorded_in_the_iteration_that_needed_the_room():
    cost = CostModel(get_gpu("l4"), get_model("llama-3.1-8b"))
    trace = simulate(burst(24, prompt=2000, output=400), get_policy("vllm-v1"), cost, budget=2048)
    per_iteration = trace.iteration_preemptions
    assert len(per_iteration) == trace.iterations
    assert per_iteration.sum() == trace.preemptions.sum() > 0
    # the first preemption comes when the cache is full: the iteration before left no room for
    # one more token per running request
    first = int(np.flatnonzero(per_iteration)[0])
    room = trace.kv_capacity_tokens - trace.kv_used_tokens[first - 1]
    assert room < trace.decode_tokens[first - 1] + trace.prefill_tokens[first - 1]


def test_default_baseline_budget():
    workload = poisson(20, 1, prompt=3000, output=200, seed=0)
    assert default_baseline_budget(get_policy("vllm-v0"), 512, workload) == 3200
    assert default_baseline_budget(get_policy("orca"), 512, poisson(5, 1, prompt=100)) == 2048
    assert default_baseline_budget(get_policy("vllm-v1"), 512, workload) == 512


def test_rate_curve_runs_each_rate_and_agrees_with_the_search():
    cost = CostModel(get_gpu("a100-80gb"), get_model("mistral-7b"))
    workload_at = lambda qps: poisson(60, qps, prompt=1024, output=32, seed=2)  # noqa: E731
    rates = rate_grid(8.0, points=4)
    assert rates == (2.0, 4.0, 6.0, 8.0)
    seen = []
    curve = rate_curve(workload_at, get_policy("vllm-v0"), cost, rates, budget=2048,
                       tbt_slo_s=0.1, progress=lambda done, point: seen.append(done))
    assert [p.qps for p in curve] == list(rates) and seen == [1, 2, 3, 4]
    again = evaluate(4.0, workload_at(4.0), get_policy("vllm-v0"), cost, budget=2048,
                     tbt_slo_s=0.1)
    assert curve[1] == again


def test_a_starving_budget_is_never_recommended():
    """Budget 64 with 64 decoders meets any TBT SLO by giving the prompt nothing: not a choice."""
    result = sweep(Run(workload=textbook_scenario(decode_output=20, prompt=2048),
                       policy=get_policy("sarathi"), cost=SEED_SIMPLE, budget=64),
                   [64, 576], tbt_slo_s=0.05)
    assert result.points[0].starved and not result.points[1].starved
    assert result.recommended == 576
