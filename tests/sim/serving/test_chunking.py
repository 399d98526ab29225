"""SGLang's dynamic chunking (sim/serving/chunking.py): its rule by hand, its fit, the cap it is in
the per-request hook, and chunks whose time stays level as the prefix grows."""

import numpy as np
import pytest

from sim.cost.iteration import CostModel, attended_pairs
from sim.effort.estimate import estimate_run
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving import workloads
from sim.serving.chunking import DynamicChunks, fit_dynamic_chunks, profile_lengths
from sim.serving.pipeline import make_pipeline, simulate_pipeline, stage_costs
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run

H100 = get_gpu("h100-sxm")
LLAMA_8B = get_model("llama-3.1-8b")


@pytest.mark.parametrize("history, chunk", [
    (0, 1024),        # x = 1024: the base
    (384, 768),       # x = -384 + sqrt(384^2 + 1024^2) = 709.6; 1024 + 0.75 (709.6 - 1024) = 788
    (3000, 320),      # x = 170.0; smoothed 383.5, down to 64 tokens
    (100_000, 256),   # x = 5.2; smoothed 259.9: a quarter of the base is as low as it goes
])
def test_the_rule_by_hand(history, chunk):
    """f(l) = l^2 and a base of 1,024: target = f(1024) - f(0) = 1,048,576, so the exact chunk
    solves x^2 + 2 history x = 1,048,576; then smoothed towards the base by 0.75, at least 256,
    rounded down to 64 tokens."""
    rule = DynamicChunks(a=1.0, b=0.0, c=0.0, base=1024)
    assert rule.target_s == 1024 ** 2
    x = rule.exact(history)
    assert rule.f(history + x) - rule.f(history) == pytest.approx(rule.target_s)
    assert rule.chunk(history) == chunk


def test_the_profile_is_sglangs():
    """128 lengths from 1.25 x the base down in equal steps; the first left out of the fit."""
    lengths = profile_lengths(512)
    assert len(lengths) == 128 and lengths[0] == 640 and lengths[1] == 635 and lengths[-1] == 5


def test_the_fit_follows_the_priced_prefill():
    """A 2,048-token base on an H100: where the prefill is compute-bound (from half the base up)
    the fitted curve is the priced prefill within 2%, with a positive quadratic term (attention);
    the shortest samples, bound by the weights' read, bend it."""
    cost = CostModel(H100, LLAMA_8B)
    fit = fit_dynamic_chunks(cost, 2048)
    assert fit.a > 0
    lengths = profile_lengths(2048)[1:]
    for n in lengths[lengths >= 1024]:
        priced = cost.time(int(n), attended_pairs(0, int(n)), 0, 1)[2]
        assert fit.f(n) == pytest.approx(priced, rel=0.02)


# The band: within 40% either way of the target chunk's time (the base chunk at prefix 0: f(base)
# - f(0) plus what every pass costs). SGLang's smoothing keeps a quarter of the gap to the base
# and its fit is on prompts of at most 1.25 x the base, so the lab does not ask for exactness.
BAND = (0.6, 1.4)


def _chunk_times(chunking: str) -> np.ndarray:
    """Each chunk of one 32,768-token prompt under SGLang with two stages, priced on the first
    stage as a pass alone, over the time of the first chunk."""
    workload = workloads.make_workload([0.0], [32_768], [4])
    cost = CostModel(H100, LLAMA_8B)
    pipeline = make_pipeline(LLAMA_8B, H100, 2)
    trace = simulate_pipeline(workload, get_policy("sglang"), cost, budget=2048,
                              limits=Limits(chunking=chunking), pipeline=pipeline).trace
    first = stage_costs(cost, pipeline)[0]
    times = np.array([first.time(int(n), attended_pairs(int(p), int(n)), int(p), 0)[2]
                      for p, n in zip(trace.chunk_start, trace.chunk_length)])
    return times / times[0]


def test_dynamic_chunks_keep_their_time_in_the_band_as_the_prefix_grows():
    fixed, dynamic = _chunk_times("fixed"), _chunk_times("dynamic")
    assert fixed[:-1].max() > BAND[1]                           # fixed chunks grow with the prefix
    assert np.all((BAND[0] < dynamic[:-1]) & (dynamic[:-1] < BAND[1]))   # the last: what is left
    assert len(dynamic) > len(fixed)


def test_dynamic_chunking_is_a_cap_that_stops_short():
    """It can end an iteration's prompt work before the prompt finishes or the budget fills, so
    the estimate bounds such a run by its prompt tokens; and the bound holds."""
    policy = get_policy("sarathi")
    assert policy.finishes_or_fills(Limits()) and not policy.finishes_or_fills(
        Limits(chunking="dynamic"))
    workload = workloads.poisson(40, 4, seed=7, lengths="sharegpt")
    run = Run(workload=workload, policy=policy, cost=CostModel(H100, LLAMA_8B), budget=512,
              limits=Limits(chunking="dynamic"), pipeline=make_pipeline(LLAMA_8B, H100, 4))
    assert run.simulate().iterations <= estimate_run(run).bound.iterations


def test_chunking_is_fixed_or_dynamic():
    with pytest.raises(InputError, match="chunking is one of fixed, dynamic, got 'adaptive'"):
        Limits(chunking="adaptive")
