"""The work estimator (sim/serving/work.py): its bound is never below a real run's counts, item by
item; its likely estimate keeps within LIKELY_FACTOR of the run; caps keep a command's runs within
its budget and give each at least its likely iterations; capacity's search stays inside a work
budget and above the lowest rate float arrival times allow."""

import tracemalloc
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import SimulationLimitError, simulate
from sim.serving.metrics import summarize
from sim.serving.policies import POLICIES, Limits, get_policy
from sim.serving.trace_files import MAX_ARRIVAL_S
from sim.serving.work import (
    ITEM_COSTS,
    LIKELY_FACTOR,
    Budget,
    Counts,
    RunEstimate,
    Work,
    WorkAccount,
    WorkTooLarge,
    combined,
    estimate_run,
    least_iterations,
)
from sim.serving.workloads import make_workload, poisson, seed_scenario
from sim.studies.capacity import find_capacity, lowest_rate

# Roomy GPUs and small workloads: no preemption (the estimator's stated assumption).
GPUS = [get_gpu("b200"), get_gpu("h200"), get_gpu("mi300x")]
MODELS = [get_model(m) for m in ("dense-8b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b")]
B200 = CostModel(get_gpu("b200"), get_model("dense-8b"))


@st.composite
def runs(draw):
    n_new = draw(st.integers(0, 12))
    n_streaming = draw(st.integers(0 if n_new else 1, 8))
    spread = draw(st.sampled_from([0.0, 0.05, 5.0, 500.0]))   # together ... one at a time
    arrivals = draw(st.lists(st.floats(0, spread), min_size=n_new + n_streaming,
                             max_size=n_new + n_streaming))
    prompts = draw(st.lists(st.integers(1, 4000), min_size=n_new, max_size=n_new))
    outputs = draw(st.lists(st.integers(1, 60), min_size=n_new + n_streaming,
                            max_size=n_new + n_streaming))
    contexts = draw(st.lists(st.integers(1, 3000), min_size=n_streaming, max_size=n_streaming))
    # streams arrive together (one group) or at their own times
    together = draw(st.booleans())
    stream_arrivals = np.zeros(n_streaming) if together else arrivals[:n_streaming]
    workload = make_workload(np.r_[stream_arrivals, arrivals[n_streaming:]],
                             np.r_[contexts, prompts], outputs,
                             np.r_[np.ones(n_streaming, bool), np.zeros(n_new, bool)])
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


def real_counts(trace, cost) -> Counts:
    return Counts.of_trace(trace, cost.model.sliding_window > 0)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_the_bound_is_never_below_a_run_and_the_likely_estimate_keeps_within_its_factor(case):
    workload, policy, budget, limits, cost = case
    trace = simulated(*case)
    assume(trace.preemptions.sum() == 0)
    estimate = estimate_run(workload, policy, budget, limits, cost)
    real = real_counts(trace, cost)
    for item in ITEM_COSTS:
        assert getattr(estimate.bound, item) >= getattr(real, item), item
    assert estimate.likely.tokens == estimate.bound.tokens == real.tokens          # exact
    assert estimate.likely.stays == estimate.bound.stays == real.stays
    assert least_iterations(workload) == estimate.least_iterations <= real.iterations
    assert real.iterations / LIKELY_FACTOR <= estimate.likely.iterations \
        <= LIKELY_FACTOR * real.iterations
    assert real.seconds() / LIKELY_FACTOR <= estimate.likely.seconds() \
        <= LIKELY_FACTOR * real.seconds()
    # at its likely iterations' cap, a run that needs more stops there, and says which cap
    cap = estimate.iterations_at(1.0)
    if cap < real.iterations:
        with pytest.raises(SimulationLimitError) as stopped:
            simulate(workload, policy, cost, budget=budget,
                     limits=Limits(max_seqs=limits.max_seqs, max_iterations=cap,
                                   max_partial_prefills=limits.max_partial_prefills))
        assert stopped.value.cap == cap


def test_the_bound_is_reached_when_requests_run_one_at_a_time():
    """Requests 100 s apart under vLLM V0: each takes one prefill and output - 1 decode
    iterations, a join and a leave: exactly what the bound counts."""
    workload = make_workload([0, 100, 200], [100, 200, 300], [5, 1, 7])
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
    trace = simulate(workload, get_policy("vllm-v0"), cost, budget=2048)
    bound = estimate_run(workload, get_policy("vllm-v0"), 2048, Limits(), cost).bound
    assert bound.iterations == trace.iterations == 3 + 4 + 0 + 6
    assert bound.changes == real_counts(trace, cost).changes == 2 + 2


def test_streams_that_arrive_together_are_bounded_by_the_longest_of_them():
    """The worked example's 64 streams step together: 256 decode iterations, not 64 x 256; the
    prompt adds its 31 decodes and its prefill iterations (one that finishes it, and those the
    budget fills: (prompt + decode rows) // budget)."""
    workload = seed_scenario()
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    trace = simulate(workload, get_policy("sarathi"), cost, budget=576)
    bound = estimate_run(workload, get_policy("sarathi"), 576, Limits(), cost).bound
    decode_rows = 64 * 256 + 31
    assert trace.iterations == 256
    assert bound.iterations == 256 + 31 + 1 + (8192 + decode_rows) // 576 == 330
    # the same streams arriving one by one may each run on its own
    apart = make_workload(np.r_[np.arange(64.0), 0], workload.prompt, workload.output,
                          workload.prefilled)
    assert estimate_run(apart, get_policy("sarathi"), 576, Limits(), cost).bound.iterations == \
        64 * 256 + 31 + 1 + (8192 + decode_rows) // 576


def test_a_budget_that_caps_the_decodes_counts_every_decode_step():
    """vLLM V1 with more decoders than its budget steps only the head of the running list: each
    decode-only iteration is bounded by one decode row, and the skipped steps are explicit rows."""
    workload = seed_scenario(decodes=50, context=10, prompt=10, decode_output=20, prompt_output=2)
    estimate = estimate_run(workload, get_policy("vllm-v1"), 40, Limits(), B200)
    trace = simulate(workload, get_policy("vllm-v1"), B200, budget=40)
    assert estimate.bound.partial_rows == 50 * 20 + 1 >= len(trace.partial_step_request) > 0
    assert estimate.bound.iterations >= 50 * 20 + 1
    under = estimate_run(workload, get_policy("vllm-v1"), 60, Limits(), B200)
    assert under.bound.partial_rows == 0 and under.bound.iterations < 100


def test_every_counted_item_has_a_price():
    assert list(ITEM_COSTS) == [f.name for f in fields(Counts)]
    assert all(cost.seconds > 0 and cost.bytes >= 0 for cost in ITEM_COSTS.values())
    one = Counts(runs=1, iterations=10, tokens=100)
    assert one.seconds() == pytest.approx(ITEM_COSTS["runs"].seconds
                                          + 10 * ITEM_COSTS["iterations"].seconds
                                          + 100 * ITEM_COSTS["tokens"].seconds)
    assert (one + one) == Counts(runs=2, iterations=20, tokens=200)


def test_fewer_iterations_keep_at_most_as_many_windowed_more_count_every_added_one():
    counts = Counts(runs=1, iterations=100, window_iterations=40)
    assert counts.with_iterations(30).window_iterations == 30
    assert counts.with_iterations(60).window_iterations == 40
    assert counts.with_iterations(150).window_iterations == 90
    assert Counts(iterations=100).with_iterations(150).window_iterations == 0


def test_the_iterations_within_seconds_and_bytes_leave_room_for_the_rest():
    counts = Counts(runs=1, iterations=5, tokens=1_000_000, window_iterations=5)
    rest = counts.with_iterations(0)
    per = ITEM_COSTS["iterations"].seconds + ITEM_COSTS["window_iterations"].seconds
    fit = counts.iterations_within(10.0)
    assert fit == int((10.0 - rest.seconds()) / per)
    assert counts.with_iterations(fit).seconds() <= 10.0 < counts.with_iterations(fit + 1).seconds()
    per_b = ITEM_COSTS["iterations"].bytes + ITEM_COSTS["window_iterations"].bytes
    assert counts.iterations_within(1e9, rest.bytes() + 10 * per_b) == 10
    assert counts.iterations_within(rest.seconds() / 2) == 0


# --- a command's caps -------------------------------------------------------------------------
def estimate(likely: int, bound: int, cap: int = 5_000_000, tokens: int = 0) -> RunEstimate:
    return RunEstimate(Counts(runs=1, iterations=likely, tokens=tokens),
                       Counts(runs=1, iterations=bound, tokens=tokens), 1, cap)


def test_a_run_whose_bound_fits_keeps_its_own_cap():
    """Its own cap where that fits (a preempted prompt computed again can pass the bound);
    else at least its bound, and what more fits."""
    work = Work((estimate(100, 10_000, cap=50_000),))
    assert work.caps(Budget(60, 1.5e9)) == (50_000,)
    assert Work((estimate(100, 10**8, cap=50_000),)).caps(Budget(60, 1.5e9)) == (50_000,)
    per = ITEM_COSTS["iterations"].seconds
    room = ITEM_COSTS["runs"].seconds + 20_000 * per
    (cap,) = work.caps(Budget(room, 1.5e9))
    assert cap == pytest.approx(20_000, abs=2)
    two = Work((estimate(100, 10_000, cap=50_000), estimate(100, 1_000, cap=50_000)))
    caps = two.caps(Budget(2 * ITEM_COSTS["runs"].seconds + 22_000 * per, 1.5e9))
    assert caps[0] >= 10_000 and caps[1] >= 1_000 and caps[0] == pytest.approx(10 * caps[1], abs=10)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**6), st.integers(0, 10**8), st.integers(0, 10**8)),
                min_size=1, max_size=8),
       st.floats(1, 120), st.booleans())
def test_caps_keep_every_run_within_the_budget_and_at_least_at_its_likely_iterations(
        runs_, seconds, held):
    work = Work(tuple(estimate(likely, likely + extra, tokens=tokens)
                      for likely, extra, tokens in runs_), held_together=held)
    budget = Budget(seconds, 1.5e9)
    caps = work.caps(budget)
    at_likely = work.cost(work.caps_at(1.0))
    if caps is None:
        assert at_likely[0] > budget.seconds or at_likely[1] > budget.bytes
        return
    cost = work.cost(caps)
    assert cost[0] <= budget.seconds and cost[1] <= budget.bytes
    bounds_fit = work.fits(work.most_caps(), budget)
    for run, cap in zip(work.runs, caps):
        assert run.likely.iterations <= cap <= run.cap
        assert cap >= run.most_iterations if bounds_fit else cap <= run.most_iterations


def test_caps_above_the_likely_iterations_grow_with_the_budget():
    work = Work((estimate(10_000, 10**8),))
    small, large = work.caps(Budget(1, 1e12))[0], work.caps(Budget(10, 1e12))[0]
    assert 10_000 <= small < large and Work((estimate(10_000, 10**8),)).caps(Budget(0.01, 1e12)) \
        is None
    per = ITEM_COSTS["iterations"].seconds
    assert large == pytest.approx((10 - ITEM_COSTS["runs"].seconds) / per, rel=1e-6)


def test_work_over_a_budget_is_refused_with_the_likely_estimate_and_the_remedy():
    workload = seed_scenario(decodes=1, decode_output=5_000_000, context=1, prompt=1,
                             prompt_output=1)
    run = estimate_run(workload, get_policy("sarathi"), 576, Limits(max_iterations=5_000_000),
                       B200)
    # likely: one iteration per token of the one decoder (and the prompt's), within the cap
    assert run.likely.iterations == 5_000_001 and run.iterations_at(1.0) == 5_000_000
    with pytest.raises(WorkTooLarge) as error:
        Work((run,)).check(Budget(30, 1.5e9), "this run", "use a smaller --decode-output")
    message = str(error.value)
    seconds, nbytes = Work((run,)).cost((5_000_000,))
    assert message.startswith("this run would take about 5,000,000 iterations and 5,000,002 "
                              f"output tokens: ≈ {seconds:,.0f} s and {nbytes / 1e9:.3g} GB")
    assert "over the 30 s time budget" in message and "memory" not in message
    assert message.endswith("; use a smaller --decode-output")
    assert Work((run,)).check(Budget(1e9, 1e12), "this run", "") == (5_000_000,)


def test_check_most_refuses_what_the_runs_could_take_at_their_caps():
    work = Work((estimate(10, 10**7, cap=2_000_000), estimate(10, 100)))
    work.check_most(Budget(60, 1.5e9), "the search", "fewer requests")
    with pytest.raises(WorkTooLarge) as error:
        work.check_most(Budget(10, 1.5e9), "the search", "fewer requests")
    assert "2 runs of up to 2,000,000 iterations" in str(error.value)


def test_runs_one_after_another_add_their_time_and_hold_the_largest_memory_unless_kept():
    cost = CostModel(get_gpu("h200"), get_model("llama-3.1-8b"))
    workload = poisson(50, 5, prompt=300, output=20)
    works = [Work((estimate_run(workload, get_policy("sarathi"), b, Limits(), cost),))
             for b in (64, 4096)]
    caps = (works[0].runs[0].most_iterations, works[1].runs[0].most_iterations)
    each = [w.cost(w.most_caps()) for w in works]
    in_turn, together = combined(works).cost(caps), combined(works, held_together=True).cost(caps)
    assert in_turn[0] == together[0] == pytest.approx(sum(s for s, _ in each))
    assert in_turn[1] == max(b for _, b in each)
    assert together[1] == pytest.approx(sum(b for _, b in each))


def test_an_account_charges_a_finished_run_by_its_own_counts():
    workload = poisson(40, 5, prompt=512, output=16, seed=0)
    trace = simulate(workload, get_policy("sarathi"), CAPACITY_COST, budget=512)
    account = WorkAccount(Budget(60, 1e12))
    account.charge(trace, windowed=False)
    assert account.spent_s == real_counts(trace, CAPACITY_COST).seconds()
    run = estimate_run(workload, get_policy("sarathi"), 512, Limits(), CAPACITY_COST)
    assert account.affords(run)
    account.spent_s = 60 - run.most().seconds() / 2
    assert not account.affords(run)


# --- the prices against what runs cost here ----------------------------------------------------
MARGIN = 1.5   # a run here allocates at most this much more than its counts priced
MEASURED = {   # each dominated by other counted items
    "iterations": (seed_scenario(decodes=1, context=1, prompt=1, decode_output=60_000,
                                 prompt_output=1), "sarathi", 576, Limits(), B200),
    "window iterations": (seed_scenario(decodes=1, context=1, prompt=1, decode_output=20_000,
                                        prompt_output=1), "sarathi", 576, Limits(),
                          CostModel(get_gpu("b200"), get_model("mistral-7b"))),
    "requests and stays": (poisson(5000, 1, prompt=16, output=2), "vllm-v0", 2048, Limits(),
                           B200),
    "partial rows and passes": (seed_scenario(decodes=5000, context=1, prompt=1, decode_output=10,
                                              prompt_output=1), "vllm-v1", 10,
                                Limits(max_seqs=100_000), B200),
    "tokens": (poisson(1000, 1000, lengths="sharegpt", seed=1), "sarathi", 2048, Limits(),
               CostModel(get_gpu("h200"), get_model("llama-3.1-8b"))),
}


def _run_and_summarize(workload, policy, budget, limits, cost):
    summarize(simulate(workload, get_policy(policy), cost, budget=budget, limits=limits))


@pytest.mark.parametrize("case", sorted(MEASURED))
def test_the_prices_bound_what_a_real_run_allocates_within_the_margin(case):
    """A run's own counts, priced, against the Python memory it allocates at the peak (tracemalloc
    counts bytes, not time, so the check holds on a busy machine): at least MARGIN times less than
    priced, and the prices not so high that they refuse what runs (within 4x). The bound and the
    likely estimate, priced, are at least the real counts' price and within LIKELY_FACTOR. The
    prices in seconds are measured by benchmarks/work_bench.py, never asserted here."""
    workload, policy, budget, limits, cost = MEASURED[case]
    _run_and_summarize(*MEASURED[case])           # numpy's first calls
    tracemalloc.start()
    try:
        _run_and_summarize(*MEASURED[case])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    real = real_counts(simulate(workload, get_policy(policy), cost, budget=budget,
                                limits=limits), cost)
    assert peak <= MARGIN * real.bytes() <= 4 * MARGIN * peak, (peak, real.bytes())
    estimate = estimate_run(workload, get_policy(policy), budget, limits, cost)
    assert estimate.bound.seconds() >= real.seconds() and estimate.bound.bytes() >= real.bytes()
    assert real.seconds() / LIKELY_FACTOR <= estimate.likely.seconds() \
        <= LIKELY_FACTOR * real.seconds()


# --- capacity within its budget -----------------------------------------------------------------
CAPACITY_COST = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"))


def test_capacity_stops_before_a_run_the_account_cannot_afford():
    def workload_at(qps):
        return poisson(40, qps, prompt=512, output=16, seed=0)
    most = estimate_run(workload_at(1.0), get_policy("sarathi"), 512, Limits(),
                        CAPACITY_COST).most()
    account = WorkAccount(Budget(seconds=most.seconds() * 2.5, bytes=1e12))
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


def test_no_run_takes_fewer_iterations_than_its_longest_output():
    assert least_iterations(make_workload([0, 1], [5, 5], [3, 9])) == 9
