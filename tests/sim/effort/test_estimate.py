"""The run-effort estimate (sim/effort/estimate.py): its bound is never below a real run's counts,
item by item, for every policy and for one that declares its prompt iterations may neither finish
a prompt nor fill the budget; what each policy says under its limits (`finishes_or_fills`)
holds on random runs; the likely estimate keeps within LIKELY_FACTOR of the run; the prices bound what a
run allocates."""

import math
import tracemalloc
from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.effort.estimate import (
    ITEM_COSTS,
    LIKELY_FACTOR,
    Counts,
    _kv_tokens_at_most,
    _streams_after_prompts,
    estimate_run,
    least_iterations,
)
from sim.errors import InputError
from sim.knobs import KNOBS
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving import policies
from sim.serving.engine import (
    RESERVE_FRACTION,
    SimulationLimitError,
    kv_capacity_tokens,
    policy_reserve,
    simulate,
)
from sim.serving.metrics import summarize
from sim.serving.pipeline import make_pipeline
from sim.serving.policies import CHUNKED, POLICIES, Limits, PrefillCap, get_policy, sarathi
from sim.serving.run import Run
from sim.serving.workloads import make_workload, poisson, textbook_scenario
from tests.support.runs import estimated

# Roomy GPUs and small workloads: no preemption (the estimator's stated assumption).
GPUS = [get_gpu("b200"), get_gpu("h200"), get_gpu("mi300x")]
MODELS = [get_model(m) for m in ("dense-8b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b")]
B200 = CostModel(get_gpu("b200"), get_model("dense-8b"))


# Limits fields a run is not drawn with, and why; every other field is drawn from its knob.
NOT_DRAWN = {"max_iterations": "a run over its cap stops with an error; it has no counts"}
SMALL = 32   # the most a drawn limit allows: small runs, where the limits bind


@st.composite
def drawn_limits(draw, policy, streams: int) -> Limits:
    """Every field of `Limits` (read from the dataclass itself, so a field is drawn the day it is
    added) from its knob's range up to SMALL (a switch on or off: SGLang's mixed chunk), None
    among the values where the knob's default is None; left at its default for a policy the
    knob does not apply to. max_seqs holds the streams, which all start at once in some runs."""
    values = {}
    for field in fields(Limits):
        if field.name in NOT_DRAWN:
            continue
        knob = KNOBS[field.name]
        if policy.name not in knob.policies:
            continue
        if knob.kind == "switch":
            values[field.name] = draw(st.booleans())
            continue
        if knob.choices:   # chunk sizing
            values[field.name] = draw(st.sampled_from(knob.choices))
            continue
        low = max(int(knob.low), streams) if field.name == "max_seqs" else int(knob.low)
        value = st.integers(low, max(SMALL, low))   # 0 where it means off (a threshold)
        values[field.name] = draw(st.one_of(st.none(), value) if field.default is None else value)
    if (values.get("max_long_partial_prefills") is not None or values.get("cap_lone_prefill")) \
            and not values.get("long_prefill_token_threshold"):   # which prompts are long, or capped
        values["long_prefill_token_threshold"] = draw(st.integers(1, SMALL))
    return Limits(**values)


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
    policy = POLICIES[draw(st.sampled_from(sorted(POLICIES)))]
    budget = draw(st.integers(1, 5000))
    limits = draw(drawn_limits(policy, n_streaming))
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


def prompt_work_finishes_or_fills(trace, policy) -> bool:
    """Whether every iteration of `trace` with prompt work finishes a prompt (a chunk reaches its
    request's prompt length) or fills the budget (with the decodes, where they share it)."""
    finishes = np.zeros(trace.iterations, bool)
    ends = trace.chunk_start + trace.chunk_length == trace.prompt[trace.chunk_request]
    finishes[trace.chunk_iteration[ends]] = True
    shared = trace.decode_tokens if policy.prefill_with_decodes else 0
    fills = trace.prefill_tokens + shared >= trace.budget
    return bool(np.all(finishes | fills | (trace.prefill_tokens == 0)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_the_bound_is_never_below_a_run_and_the_likely_estimate_keeps_within_its_factor(case):
    workload, policy, budget, limits, cost = case
    trace = simulated(*case)
    assume(trace.preemptions.sum() == 0)
    if policy.finishes_or_fills(limits):   # what the policy declares, the run does
        assert prompt_work_finishes_or_fills(trace, policy.under(limits))
    estimate = estimated(workload, policy, budget, limits, cost)
    real = real_counts(trace, cost)
    for item in ITEM_COSTS:
        assert getattr(estimate.bound, item) >= getattr(real, item), item
    assert estimate.likely.tokens == estimate.bound.tokens == real.tokens          # exact
    assert estimate.likely.stays == estimate.bound.stays == real.stays
    assert estimate.likely.requests == estimate.bound.requests == real.requests
    assert least_iterations(workload) == estimate.least_iterations <= real.iterations
    # the likely estimate takes chunks to fill the budget (module docstring of the estimate): a
    # cap that stops them short leaves it low, which the bound absorbs
    if policy.finishes_or_fills(limits):
        assert real.iterations / LIKELY_FACTOR <= estimate.likely.iterations \
            <= LIKELY_FACTOR * real.iterations
        assert real.seconds() / LIKELY_FACTOR <= estimate.likely.seconds() \
            <= LIKELY_FACTOR * real.seconds()
    # at its likely iterations' cap, a run that needs more stops there, and says which cap
    cap = estimate.iterations_at(1.0)
    if cap < real.iterations:
        with pytest.raises(SimulationLimitError) as stopped:
            simulate(workload, policy, cost, budget=budget,
                     limits=replace(limits, max_iterations=cap))
        assert stopped.value.cap == cap


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([2, 4]))
def test_a_pipelined_runs_bound_is_never_below_it(case, stages):
    """Through pipeline stages (sim/serving/pipeline.py) the bound is its virtual engines' bounds
    summed, and every micro-batch passes each stage."""
    workload, policy, budget, limits, cost = case
    run = Run(workload=workload, policy=policy, cost=cost, budget=budget, limits=limits,
              pipeline=make_pipeline(cost.model, cost.gpu, stages))
    try:
        trace = run.simulate()
    except InputError:
        assume(False)   # refused up front (a request larger than a virtual engine's KV)
    assume(trace.preemptions.sum() == 0)
    estimate = estimate_run(run)
    real = replace(real_counts(trace, cost), stage_passes=trace.iterations * stages)
    for item in ITEM_COSTS:
        assert getattr(estimate.bound, item) >= getattr(real, item), item
    assert estimate.least_iterations <= real.iterations


@pytest.mark.parametrize("qps", [2, 20])
def test_a_pipelined_runs_likely_iterations_keep_within_the_factor(qps):
    """A virtual engine steps its requests once its micro-batch has passed every stage: priced on
    one stage's layers, Little's law counts four stage times a step (counting one, the estimate
    at 2 QPS is over four times the run's iterations)."""
    gpu, model = get_gpu("h100-sxm"), get_model("llama-3.1-70b")
    run = Run(workload=poisson(300, qps, lengths="sharegpt", seed=0), policy=get_policy("sarathi"),
              cost=CostModel(gpu, model), budget=512, limits=Limits(max_seqs=128),
              pipeline=make_pipeline(model, gpu, 4))
    real = run.simulate().iterations
    assert real / LIKELY_FACTOR <= estimate_run(run).likely.iterations <= LIKELY_FACTOR * real


def test_the_bound_is_reached_when_requests_run_one_at_a_time():
    """Requests 100 s apart under vLLM V0: each takes one prefill and output - 1 decode
    iterations, a join and a leave: exactly what the bound counts."""
    workload = make_workload([0, 100, 200], [100, 200, 300], [5, 1, 7])
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
    trace = simulate(workload, get_policy("vllm-v0"), cost, budget=2048)
    bound = estimated(workload, get_policy("vllm-v0"), 2048, Limits(), cost).bound
    assert bound.iterations == trace.iterations == 3 + 4 + 0 + 6
    assert bound.changes == real_counts(trace, cost).changes == 2 + 2


WORKED = textbook_scenario()   # 64 streams of 256 tokens and an 8,192-token prompt of 32
ILLUSTRATIVE = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
DECODE_ROWS = 64 * 256 + 31


@pytest.mark.parametrize("policy, prompt_iterations", [
    ("sarathi", 1 + (8192 + DECODE_ROWS) // 576),   # the decodes share the prompt iterations
    ("sglang", 1 + 8192 // 576),                     # prompt chunks run alone
    ("orca", 1),                                     # the whole prompt in one iteration
])
def test_streams_that_arrive_together_are_bounded_by_the_longest_of_them(policy,
                                                                         prompt_iterations):
    """The worked example's 64 streams step together: 256 decode iterations, not 64 x 256; the
    prompt adds its 31 decodes and its prefill iterations (one that finishes it, and where the
    policy chunks it, those the budget fills)."""
    trace = simulate(WORKED, get_policy(policy), ILLUSTRATIVE, budget=576)
    bound = estimated(WORKED, get_policy(policy), 576, Limits(), ILLUSTRATIVE).bound
    assert trace.iterations <= bound.iterations == 256 + 31 + prompt_iterations


def test_streams_that_arrive_apart_are_bounded_by_each_of_their_outputs():
    apart = make_workload(np.r_[np.arange(64.0), 0], WORKED.prompt, WORKED.output,
                          WORKED.prefilled)
    assert estimated(apart, get_policy("sarathi"), 576, Limits(), ILLUSTRATIVE
                        ).bound.iterations == 64 * 256 + 31 + 1 + (8192 + DECODE_ROWS) // 576


def test_the_likely_estimate_of_the_worked_example_follows_its_run():
    """Sarathi-Serve at budget 576: the streams' 256 iterations; the prompt in chunks of the 511
    tokens the 65 decoders leave (17; the run takes 16 of 512); a join and a leave for the
    streams and for the prompt; the decoders moved then within LIKELY_FACTOR."""
    real = real_counts(simulate(WORKED, get_policy("sarathi"), ILLUSTRATIVE, budget=576),
                       ILLUSTRATIVE)
    likely = estimated(WORKED, get_policy("sarathi"), 576, Limits(), ILLUSTRATIVE).likely
    assert likely.iterations == real.iterations == 256
    assert likely.chunk_rows == math.ceil(8192 / (576 - 65)) == real.chunk_rows + 1
    assert likely.changes == real.changes == 4
    assert real.running_passes / LIKELY_FACTOR <= likely.running_passes \
        <= LIKELY_FACTOR * real.running_passes


def test_a_model_without_a_sliding_window_is_charged_no_window_pricing():
    estimate = estimated(WORKED, get_policy("sarathi"), 576, Limits(), ILLUSTRATIVE)
    assert estimate.likely.window_iterations == estimate.bound.window_iterations == 0
    assert estimate.likely.window_rows == estimate.bound.window_rows == 0


def test_any_sliding_window_is_priced_however_short():
    """A custom model accepts a window of 1 token: its decoders are priced one by one too."""
    one = CostModel(get_gpu("illustrative"), replace(get_model("dense-8b"), sliding_window=1))
    estimate = estimated(WORKED, get_policy("sarathi"), 576, Limits(), one)
    assert estimate.bound.window_rows == DECODE_ROWS and estimate.likely.window_iterations > 0


def test_a_budget_that_caps_the_decodes_counts_every_decode_step():
    """vLLM V1 with more decoders than its budget steps only the head of the running list: each
    decode-only iteration is bounded by one decode row, and the skipped steps are explicit rows."""
    workload = textbook_scenario(decodes=50, context=10, prompt=10, decode_output=20, prompt_output=2)
    estimate = estimated(workload, get_policy("vllm-v1"), 40, Limits(), B200)
    trace = simulate(workload, get_policy("vllm-v1"), B200, budget=40)
    assert estimate.bound.partial_rows == 50 * 20 + 1 >= len(trace.partial_step_request) > 0
    assert estimate.bound.iterations >= 50 * 20 + 1
    under = estimated(workload, get_policy("vllm-v1"), 60, Limits(), B200)
    assert under.bound.partial_rows == 0 and under.bound.iterations < 100
    # a budget exactly as large as the running set (50 streams and the prompt) steps them all
    exactly = estimated(workload, get_policy("vllm-v1"), 51, Limits(), B200)
    assert exactly.bound.partial_rows == 0
    assert len(simulate(workload, get_policy("vllm-v1"), B200, budget=51).partial_step_request) == 0


def test_a_budget_that_caps_the_decodes_is_likely_to_skip_decoders_and_others_are_not():
    """At budget 40 with 50 decoders, vLLM V1 likely records its decode rows one by one and
    keeps its iterations within LIKELY_FACTOR of the run; Sarathi-Serve, whose budget does not cap
    the decodes, steps them all: its bound counts the streams' 20 steps and no skipped row."""
    workload = textbook_scenario(decodes=50, context=10, prompt=10, decode_output=20, prompt_output=2)
    v1 = estimated(workload, get_policy("vllm-v1"), 40, Limits(), B200)
    real = real_counts(simulate(workload, get_policy("vllm-v1"), B200, budget=40), B200)
    assert v1.likely.partial_rows >= real.partial_rows > 0
    assert real.iterations / LIKELY_FACTOR <= v1.likely.iterations \
        <= LIKELY_FACTOR * real.iterations
    sarathi_ = estimated(workload, get_policy("sarathi"), 40, Limits(), B200)
    assert sarathi_.likely.partial_rows == sarathi_.bound.partial_rows == 0
    assert sarathi_.bound.iterations == 1 + (10 + 50 * 20 + 1) // 40 + 20 + 1


def test_sarathi_is_likely_to_step_every_decoder_where_its_bound_allows_skips():
    """Eight streams and eight new requests at max_seqs 8 and budget 8: the bound allows for
    decoders skipping a step (streams may join past max_seqs), but Sarathi-Serve steps every
    one, and the likely estimate, as the run, counts no skipped row."""
    workload = make_workload(np.zeros(16), np.full(16, 10), np.full(16, 50),
                             np.r_[np.zeros(8, bool), np.ones(8, bool)])
    trace = simulate(workload, get_policy("sarathi"), B200, budget=8, limits=Limits(max_seqs=8))
    estimate = estimated(workload, get_policy("sarathi"), 8, Limits(max_seqs=8), B200)
    assert estimate.bound.partial_rows > 0
    assert estimate.likely.partial_rows == len(trace.partial_step_request) == 0


def test_a_finished_runs_counts_are_its_joins_leaves_and_window_pricing():
    """Streams A (3 tokens) and B (6) run from iteration 0; C (4 tokens) joins at 1 after its
    prefill: joins at 0 and 1, leaves at 2 (A), 3 (C) and 5 (B), moving 2 + 3 and 3 + 2 + 1
    decoders; on a sliding-window model each of the 6 iterations has decodes, 12 rows in all."""
    cost = CostModel(get_gpu("b200"), get_model("mistral-7b"))
    workload = make_workload([0.0, 0.0, 0.0], [100, 200, 50], [3, 6, 4], [True, True, False])
    trace = simulate(workload, get_policy("sarathi"), cost, budget=512)
    counts = Counts.of_trace(trace, windowed=True)
    assert (counts.iterations, counts.changes, counts.running_passes) == (6, 5, 11)
    assert (counts.window_iterations, counts.window_rows) == (6, 2 + 3 + 3 + 2 + 1 + 1)
    assert Counts.of_trace(trace, windowed=False).window_rows == 0


def long_prompts():
    """Ten 8,000-token prompts arriving together, two output tokens each."""
    return make_workload(np.zeros(10), np.full(10, 8000), np.full(10, 2))


def test_prompt_chunks_run_alone_count_in_the_likely_estimate():
    """SGLang runs its prompt chunks alone: 10 x 8,000 / 512, about 157 iterations for 20
    tokens."""
    real = simulate(long_prompts(), get_policy("sglang"), B200, budget=512).iterations
    likely = estimated(long_prompts(), get_policy("sglang"), 512, Limits(), B200).likely
    assert real / LIKELY_FACTOR <= likely.iterations <= LIKELY_FACTOR * real


def test_a_sliding_window_prices_the_decode_iterations_not_the_prompt_chunks():
    cost = CostModel(get_gpu("b200"), get_model("mistral-7b"))
    real = real_counts(simulate(long_prompts(), get_policy("sglang"), cost, budget=512), cost)
    likely = estimated(long_prompts(), get_policy("sglang"), 512, Limits(), cost).likely
    assert 0 < likely.window_iterations <= LIKELY_FACTOR * real.window_iterations


def test_requests_arriving_within_a_second_are_not_taken_to_arrive_together():
    """1,000 short requests at 1,100 a second: a few run at once, not all of them."""
    workload = poisson(1000, 1100, prompt=64, output=2, seed=0)
    real = simulate(workload, get_policy("sarathi"), B200, budget=2048).iterations
    likely = estimated(workload, get_policy("sarathi"), 2048, Limits(), B200).likely
    assert real / LIKELY_FACTOR <= likely.iterations <= LIKELY_FACTOR * real


@pytest.mark.parametrize("cost, limits, running", [
    (B200, Limits(max_seqs=8), 8),
    (CostModel(get_gpu("l4"), get_model("llama-2-7b")), Limits(), None),   # what fits in KV
])
def test_the_bound_moves_at_most_the_running_set_at_each_join_and_leave(cost, limits, running):
    """200 requests of 1,000 tokens arriving together, held to max_seqs or to the prompts that
    fit in KV (each holds at least its prompt): each change moves at most that many."""
    workload = make_workload(np.zeros(200), np.full(200, 1000), np.full(200, 10))
    running = running or kv_capacity_tokens(cost) // 1000
    bound = estimated(workload, get_policy("sarathi"), 2048, limits, cost).bound
    assert running < 200 and bound.partial_rows == 0
    assert bound.running_passes <= bound.changes * running


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


# --- a policy that breaks "prompt work finishes a prompt or fills the budget" -------------------
CHUNK_CAP = 16   # prompt tokens an iteration may take, whatever the budget (a per-request chunk cap)


def capped_chunks(state, budget, limits, whole_prompt):
    """Sarathi-Serve with at most CHUNK_CAP prompt tokens an iteration: its chunks may neither
    finish a prompt nor fill the budget."""
    return sarathi(state, min(budget, state.decoding + CHUNK_CAP), limits, whole_prompt)


CAPPED = replace(get_policy("sarathi"), name="capped-chunks", build=capped_chunks,
                 prompt_work_finishes_or_fills=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_a_policy_that_declares_its_prompt_work_may_not_finish_or_fill_is_bounded_all_the_same(
        case):
    workload, _, budget, limits, cost = case
    trace = simulated(workload, CAPPED, budget, limits, cost)
    assume(trace.preemptions.sum() == 0)
    bound = estimated(workload, CAPPED, budget, limits, cost).bound
    real = real_counts(trace, cost)
    for item in ITEM_COSTS:
        assert getattr(bound, item) >= getattr(real, item), item


def test_a_policy_that_breaks_the_property_without_declaring_it_is_bounded_too_low():
    """Why the declaration matters: the same policy declaring True gets a bound below its run (a
    prompt of 4,000 tokens, 16 an iteration, at budget 2,048: 250 prompt iterations, not 2)."""
    workload = make_workload([0.0], [4000], [1])
    trace = simulate(workload, CAPPED, B200, budget=2048)
    assert not prompt_work_finishes_or_fills(trace, CAPPED)
    assert trace.iterations == 4000 // CHUNK_CAP
    undeclared = replace(CAPPED, prompt_work_finishes_or_fills=True)
    assert estimated(workload, undeclared, 2048, Limits(), B200).bound.iterations < 4000 // 16
    declared = estimated(workload, CAPPED, 2048, Limits(), B200).bound
    assert declared.iterations >= trace.iterations
    assert declared.chunk_rows >= len(trace.chunk_request)


# --- the prices against what runs cost here ----------------------------------------------------
MARGIN = 1.5   # a run here allocates at most this much more than its counts priced
MEASURED = {   # each dominated by other counted items
    "iterations": (textbook_scenario(decodes=1, context=1, prompt=1, decode_output=60_000,
                                 prompt_output=1), "sarathi", 576, Limits(), B200),
    "window iterations": (textbook_scenario(decodes=1, context=1, prompt=1, decode_output=20_000,
                                        prompt_output=1), "sarathi", 576, Limits(),
                          CostModel(get_gpu("b200"), get_model("mistral-7b"))),
    "requests and stays": (poisson(5000, 1, prompt=16, output=2), "vllm-v0", 2048, Limits(),
                           B200),
    "partial rows and passes": (textbook_scenario(decodes=5000, context=1, prompt=1, decode_output=10,
                                              prompt_output=1), "vllm-v1", 10,
                                Limits(max_seqs=100_000), B200),
    "tokens": (poisson(1000, 1000, lengths="sharegpt", seed=1), "sarathi", 2048, Limits(),
               CostModel(get_gpu("h200"), get_model("llama-3.1-8b"))),
}


def _run_and_summarize(workload, policy, budget, limits, cost):
    summarize(simulate(workload, get_policy(policy), cost, budget=budget, limits=limits))


@pytest.mark.slow   # whole runs measured against the prices: make test runs it
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
    estimate = estimated(workload, get_policy(policy), budget, limits, cost)
    assert estimate.bound.seconds() >= real.seconds() and estimate.bound.bytes() >= real.bytes()
    assert real.seconds() / LIKELY_FACTOR <= estimate.likely.seconds() \
        <= LIKELY_FACTOR * real.seconds()


def test_no_run_takes_fewer_iterations_than_its_longest_output():
    assert least_iterations(make_workload([0, 1], [5, 5], [3, 9])) == 9


def test_the_kv_bound_is_the_engines_where_it_keeps_less_back_and_the_labs_reserve_else():
    """The most KV tokens a run can hold: vLLM V1 keeps 8% back on a B200, so more than the
    lab's 10% leaves; Sarathi-Serve keeps 15%, so the lab's 10% is the larger bound. Either
    way the bound is never below what the engine gets."""
    budget = 2048
    v1, kept_less = get_policy("vllm-v1"), policy_reserve(get_policy("vllm-v1"), B200, budget)
    assert kept_less < RESERVE_FRACTION
    assert _kv_tokens_at_most(v1, B200, budget) == kv_capacity_tokens(B200, kept_less)
    assert kv_capacity_tokens(B200, kept_less) > kv_capacity_tokens(B200)
    sarathi_serve = get_policy("sarathi")
    assert policy_reserve(sarathi_serve, B200, budget) > RESERVE_FRACTION
    assert _kv_tokens_at_most(sarathi_serve, B200, budget) == kv_capacity_tokens(B200)


def test_streams_can_join_behind_a_prompt_only_when_one_arrives_after_it():
    """What lets a vLLM V1 decoder skip a step (a stream behind a partial prefill): a stream
    arriving after a new prompt; not streams that all came first, nor streams with no prompt."""
    def workload(stream_arrivals, prompt_arrivals):
        streams, prompts = len(stream_arrivals), len(prompt_arrivals)
        return make_workload(np.r_[stream_arrivals, prompt_arrivals], np.full(streams + prompts, 100),
                             np.full(streams + prompts, 5),
                             np.r_[np.ones(streams, bool), np.zeros(prompts, bool)])
    assert _streams_after_prompts(workload([0.0, 2.0], [1.0]))
    assert not _streams_after_prompts(workload([0.0, 1.0], [1.0, 3.0]))   # at the same time: not after
    assert not _streams_after_prompts(workload([0.0, 2.0], []))


# --- a chunk cap that stops short under some limits ---------------------------------------------
THRESHOLD = PrefillCap(lambda state, request, budget_left, limits: 16, stops_short=lambda limits: True)


def test_a_chunk_cap_that_stops_short_changes_the_bound(monkeypatch):
    """A per-request cap (16 prompt tokens an iteration, as vLLM's long_prefill_token_threshold)
    that says it stops short makes every chunked policy's bound count prompt tokens: one
    200,000-token prompt at budget 8,192 runs 12,500 iterations, and the bound covers them; the
    same cap saying it never stops short leaves the bound at 25."""
    workload = make_workload([0.0], [200_000], [1])
    monkeypatch.setattr(policies, "PREFILL_CAPS", (*policies.PREFILL_CAPS, THRESHOLD))
    for name in CHUNKED:
        policy = get_policy(name)
        trace = simulate(workload, policy, B200, budget=8192)
        assert trace.iterations == 200_000 // 16
        assert not policy.finishes_or_fills(Limits())
        assert estimated(workload, policy, 8192, Limits(), B200).bound.iterations \
            >= trace.iterations
    silent = replace(THRESHOLD, stops_short=lambda limits: False)
    monkeypatch.setattr(policies, "PREFILL_CAPS", (*policies.PREFILL_CAPS[:-1], silent))
    assert estimated(workload, get_policy("sarathi"), 8192, Limits(), B200).bound.iterations \
        < 200_000 // 16


def test_vllms_long_prefill_threshold_stops_short_and_the_bound_counts_its_iterations():
    """vLLM V1 at --long-prefill-token-threshold 16 (sim/serving/policies.py, PREFILL_CAPS):
    two 4,000-token prompts beside each other take 16 tokens each an iteration, 250 iterations
    at budget 2,048 where the budget alone takes 4; the policy under that limit declares its
    prompt work may stop short, and the bound covers the run. Without it, the bound of
    N + P / B holds."""
    workload = make_workload([0.0, 0.0], [4000, 4000], [1, 1])
    v1, capped = get_policy("vllm-v1"), Limits(long_prefill_token_threshold=16)
    assert v1.finishes_or_fills(Limits()) and not v1.finishes_or_fills(capped)
    trace = simulate(workload, v1, B200, budget=2048, limits=capped)
    assert trace.iterations == 4000 // 16
    assert not prompt_work_finishes_or_fills(trace, v1)
    assert estimated(workload, v1, 2048, capped, B200).bound.iterations >= trace.iterations
    assert estimated(workload, v1, 2048, Limits(), B200).bound.iterations == 2 + 8000 // 2048


def test_sglangs_mixed_chunk_is_bounded_as_decodes_sharing_the_budget():
    """SGLang with --enable-mixed-chunk: the worked example's streams decode beside the prompt's
    chunks (256 iterations, as Sarathi-Serve, not 256 + the 15 prompt iterations alone), and
    its bound counts the decodes in the prompt iterations as Sarathi-Serve's does."""
    mixed = Limits(mixed_chunk=True)
    sglang = get_policy("sglang")
    trace = simulate(WORKED, sglang, ILLUSTRATIVE, budget=576, limits=mixed)
    alone = simulate(WORKED, sglang, ILLUSTRATIVE, budget=576)
    assert trace.iterations < alone.iterations
    bound = estimated(WORKED, sglang, 576, mixed, ILLUSTRATIVE).bound
    assert trace.iterations <= bound.iterations == 256 + 31 + 1 + (8192 + DECODE_ROWS) // 576
    likely = estimated(WORKED, sglang, 576, mixed, ILLUSTRATIVE).likely
    assert trace.iterations / LIKELY_FACTOR <= likely.iterations <= LIKELY_FACTOR * trace.iterations

