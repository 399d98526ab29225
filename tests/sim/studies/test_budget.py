"""sim.studies.budget: the Sarathi-Serve budget recipe on the textbook scenario's iterations."""

import pytest

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.studies.budget import (
    budget_iteration_cost,
    fused_iteration,
    largest_budget_within,
    scenario_iterations,
)


@pytest.fixture
def seed_simple():
    return CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple")


def test_the_first_budget_prices_as_the_source_article_says(seed_simple):
    # the source article: 576 tokens x 16 GFLOP / 400 TFLOP/s = 23.04 ms, compute-bound
    cost = budget_iteration_cost(seed_simple, 64, 4000, 8192, 576)
    assert cost.time_s == pytest.approx(0.02304)
    assert cost.bound == "compute"


def test_largest_budget_within_is_the_exact_boundary(seed_simple):
    # simple mode: time = budget x 16e9 / 400e12 (above the 5.33 ms weight read), so 25 ms <=> 625
    best = largest_budget_within(seed_simple, 64, 4000, 0.025, 8192)
    assert best == 625
    assert budget_iteration_cost(seed_simple, 64, 4000, 8192, best).time_s <= 0.025
    assert budget_iteration_cost(seed_simple, 64, 4000, 8192, best + 1).time_s > 0.025


def test_largest_budget_within_in_roofline_mode_meets_the_target_at_the_boundary():
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "roofline")
    best = largest_budget_within(cost, 32, 2000, 0.030, 16384)
    assert best is not None and 33 <= best < 32 + 16384
    assert budget_iteration_cost(cost, 32, 2000, 16384, best).time_s <= 0.030
    assert budget_iteration_cost(cost, 32, 2000, 16384, best + 1).time_s > 0.030


def test_no_budget_when_the_decodes_alone_miss_the_target(seed_simple):
    # the decode step reads 16 GB of weights at 3 TB/s: 5.33 ms > 5 ms
    assert largest_budget_within(seed_simple, 64, 4000, 0.005, 8192) is None


def test_whole_prompt_fitting_returns_decodes_plus_prompt(seed_simple):
    assert largest_budget_within(seed_simple, 64, 4000, 1.0, 8192) == 64 + 8192


def test_fused_iteration_prices_the_prompts_last_chunk():
    comp = fused_iteration(64, 4000, 8192, 576)
    assert comp.decode_tokens == 64
    (chunk,) = comp.chunks
    assert (chunk.length, chunk.prefix, chunk.last) == (512, 8192 - 512, True)
    assert fused_iteration(64, 4000, 8192, 64).chunks == ()          # budget spent by decodes
    assert fused_iteration(64, 4000, 100, 10_000).chunks[0].length == 100   # capped at the prompt


def test_scenario_iterations_simple_mode_intensity_is_tokens(seed_simple):
    # simple mode: FLOPs = 2 x params x tokens over 2 x params bytes -> tokens FLOP/B
    its = {it.key: it for it in scenario_iterations(seed_simple, 64, 4000, 8192, 576)}
    assert {k: round(it.cost.intensity) for k, it in its.items()} == {
        "decode": 64, "chunk": 512, "fused": 576, "prompt": 8192}
    assert its["decode"].cost.bound == "memory"        # below the 133 FLOP/B ridge
    assert its["fused"].cost.bound == "compute"
    assert its["prompt"].cost.time_s == pytest.approx(0.32768)


def test_scenario_iterations_leave_out_chunks_when_starved(seed_simple):
    keys = [it.key for it in scenario_iterations(seed_simple, 64, 4000, 8192, 64)]
    assert keys == ["decode", "prompt"]
