"""The work estimator bounds real runs from above, within its stated factor; capacity's search
stays inside a work budget and above the lowest rate float arrival times allow."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import POLICIES, Limits, get_policy
from sim.serving.trace_files import MAX_ARRIVAL_S
from sim.serving.work import (
    ESTIMATE_FACTOR,
    Budget,
    WorkAccount,
    WorkTooLarge,
    combined,
    estimate_counts,
    estimate_run,
    least_iterations,
)
from sim.serving.workloads import make_workload, poisson, seed_scenario
from sim.studies.capacity import find_capacity, lowest_rate

# Roomy GPUs and small workloads: no preemption (the estimator's stated assumption).
GPUS = [get_gpu("b200"), get_gpu("h200"), get_gpu("mi300x")]
MODELS = [get_model(m) for m in ("dense-8b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b")]


@st.composite
def runs(draw):
    n_new = draw(st.integers(0, 12))
    n_streaming = draw(st.integers(0 if n_new else 1, 8))
    spread = draw(st.sampled_from([0.0, 0.05, 5.0, 500.0]))   # together ... one at a time
    arrivals = draw(st.lists(st.floats(0, spread), min_size=n_new, max_size=n_new))
    prompts = draw(st.lists(st.integers(1, 4000), min_size=n_new, max_size=n_new))
    outputs = draw(st.lists(st.integers(1, 60), min_size=n_new + n_streaming,
                            max_size=n_new + n_streaming))
    contexts = draw(st.lists(st.integers(1, 3000), min_size=n_streaming, max_size=n_streaming))
    workload = make_workload(np.r_[np.zeros(n_streaming), arrivals], np.r_[contexts, prompts],
                             outputs, np.r_[np.ones(n_streaming, bool), np.zeros(n_new, bool)])
    partials = draw(st.one_of(st.none(), st.integers(1, 4)))
    policy = POLICIES[draw(st.sampled_from(sorted(POLICIES)))]
    budget = draw(st.integers(1, 5000))
    limits = Limits(max_seqs=draw(st.integers(max(1, n_streaming), 32)),
                    max_partial_prefills=partials if policy.chunked else None)
    cost = CostModel(draw(st.sampled_from(GPUS)), draw(st.sampled_from(MODELS)),
                     draw(st.sampled_from(["simple", "roofline"])))
    return workload, policy, budget, limits, cost


def simulated(workload, policy, budget, limits, cost):
    try:
        return simulate(workload, policy, cost, budget=budget, limits=limits)
    except InputError:
        assume(False)   # refused up front (a request larger than the KV cache)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_the_estimate_bounds_a_run_from_above_within_its_factor(case):
    workload, policy, budget, limits, cost = case
    trace = simulated(*case)
    assume(trace.preemptions.sum() == 0)
    bound = estimate_counts(workload, policy, budget, limits, cost)
    assert least_iterations(workload) <= trace.iterations <= bound.iterations
    assert bound.decode_steps >= trace.decode_tokens.sum()
    assert bound.tokens == len(trace.token_s)
    assert bound.chunk_rows >= len(trace.chunk_request)
    assert bound.running >= trace.decode_tokens.max(initial=0)
    assert bound.changes >= len(trace.member_request)   # a row per stay in the running set
    real = bound.with_trace(trace)
    assert real.seconds() <= bound.seconds() <= ESTIMATE_FACTOR * real.seconds()
    assert real.bytes() <= bound.bytes()


def test_the_iteration_bound_is_reached_when_requests_run_one_at_a_time():
    """Requests 100 s apart under vLLM V0: each takes one prefill and output - 1 decode
    iterations, exactly what the bound counts."""
    workload = make_workload([0, 100, 200], [100, 200, 300], [5, 1, 7])
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
    trace = simulate(workload, get_policy("vllm-v0"), cost, budget=2048)
    assert estimate_counts(workload, get_policy("vllm-v0"), 2048, Limits(), cost).iterations == \
        trace.iterations == 3 + 4 + 0 + 6


def test_the_bound_is_loose_by_the_decoders_running_together():
    """The worked example's 64 streams: 256 iterations, counted as 64 x 256 decode steps."""
    workload = seed_scenario()
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    trace = simulate(workload, get_policy("sarathi"), cost, budget=576)
    bound = estimate_counts(workload, get_policy("sarathi"), 576, Limits(), cost)
    assert trace.iterations == 256 and bound.iterations >= 64 * 256
    assert bound.seconds() <= ESTIMATE_FACTOR * bound.with_trace(trace).seconds()


def test_work_over_a_budget_is_refused_with_the_estimate_and_the_remedy():
    workload = seed_scenario(decodes=1, decode_output=5_000_000, context=1, prompt=1,
                             prompt_output=1)
    cost = CostModel(get_gpu("b200"), get_model("dense-8b"))
    work = estimate_run(workload, get_policy("sarathi"), 576, Limits(), cost)
    # D = 5,000,000 decode steps; one new request; (P + D) // B = 5,000,001 // 576 = 8,680
    assert work.counts.iterations == 5_000_000 + 8_680 + 1
    with pytest.raises(WorkTooLarge) as error:
        work.check(Budget(60, 1.5e9), "this run", "use a smaller --decode-output")
    message = str(error.value)
    assert message.startswith("this run would take up to 5,008,681 iterations and 5,000,002 "
                              "output tokens")
    assert "over the 1.5 GB memory budget" in message and message.endswith("--decode-output")
    assert work.over(Budget(1e9, 1e12)) is None


def test_runs_one_after_another_add_their_time_not_their_memory():
    cost = CostModel(get_gpu("h200"), get_model("llama-3.1-8b"))
    workload = poisson(50, 5, prompt=300, output=20)
    works = [estimate_run(workload, get_policy("sarathi"), b, Limits(), cost) for b in (64, 4096)]
    both = combined(works)
    assert both.seconds == pytest.approx(sum(w.seconds for w in works))
    assert both.bytes == max(w.bytes for w in works) and both.runs == 2
    assert both.counts.iterations == max(w.counts.iterations for w in works)


# --- capacity within its budget -----------------------------------------------------------------
CAPACITY_COST = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"))


def test_capacity_stops_before_a_run_the_account_cannot_afford():
    def workload_at(qps):
        return poisson(40, qps, prompt=512, output=16, seed=0)
    bound = estimate_counts(workload_at(1.0), get_policy("sarathi"), 512, Limits(), CAPACITY_COST)
    account = WorkAccount(Budget(seconds=bound.seconds() * 2.5, bytes=1e12))
    result = find_capacity(workload_at, get_policy("sarathi"), CAPACITY_COST, budget=512,
                           tbt_slo_s=1e-4, max_runs=14, account=account)
    assert 2 <= len(result.points) < 14
    assert "the search stopped after" in result.reason and "past what is left" in result.reason
    assert account.spent_s <= account.budget.seconds


def test_capacity_never_tries_a_rate_whose_arrivals_outrun_float_precision():
    def workload_at(qps):
        return poisson(40, qps, prompt=512, output=16, seed=0)
    result = find_capacity(workload_at, get_policy("sarathi"), CAPACITY_COST, budget=512,
                           tbt_slo_s=1e-6, max_runs=60)
    floor = lowest_rate(40)
    assert floor == 40 / MAX_ARRIVAL_S
    assert result.capacity_qps == 0 and min(p.qps for p in result.points) >= floor
    assert len(result.points) < 60 and "were not tried" in result.reason
