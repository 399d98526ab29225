"""Budget trade-off's sentence on the median first token (sim/studies/sweep.py's `ttft_trend`):
where it is lowest and which way it goes on each side, read off the points, never a rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim.serving.metrics import Percentiles
from sim.serving.policies import POLICIES, Limits
from sim.serving.run import Run
from sim.serving.workloads import burst
from sim.studies.sweep import recommend, run_point, ttft_trend
from tests.support.charts import SEED


@pytest.fixture(scope="module")
def point():
    run = Run(workload=burst(2, 1000, 4, 8, 500, 16), policy=POLICIES["sarathi"], cost=SEED,
              budget=512, limits=Limits(max_seqs=64))
    return run_point(run)


def sweep(point, p50_by_budget: dict[int, float]):
    """Points with these median TTFTs (seconds), each at its budget."""
    return [replace(point, budget=b, metrics=replace(point.metrics, ttft_s=Percentiles(t, t, t, t)))
            for b, t in p50_by_budget.items()]


def test_a_lowest_point_inside_the_sweep_is_named_with_each_side_direction(point):
    said = ttft_trend(sweep(point, {128: 2.57, 512: 2.08, 2048: 1.88, 8192: 2.13, 16384: 2.29}))
    assert said == ("In this sweep the p50 TTFT is lowest at budget 2,048 (1.88 s): below it, it "
                    "falls from 2.57 s at 128; above it, it rises to 2.29 s at 16,384. The median "
                    "first token comes soonest there, not at the largest budget.")


def test_a_side_that_wiggles_is_not_called_steady(point):
    said = ttft_trend(sweep(point, {128: 2.0, 256: 2.2, 512: 1.0, 1024: 1.5}))
    assert "falls, not steadily, from 2 s at 128" in said and "it rises to 1.5 s" in said


@pytest.mark.parametrize("p50, words", [
    ({128: 1.0, 256: 1.5, 512: 3.0}, "lowest at budget 128 (1 s), the smallest swept, and rises to "
                                     "3 s at 512: here a larger budget brings the median first "
                                     "token later, not sooner."),
    ({128: 3.0, 256: 1.5, 512: 1.0}, "lowest at budget 512 (1 s), the largest swept; it falls from "
                                     "3 s at 128: here the largest budget brings the median first "
                                     "token soonest."),
    ({128: 1.0, 256: 1.0, 512: 1.0}, "is 1 s at every budget: the budget does not move the median "
                                     "first token here."),
    ({128: 2.0, 256: 1.0, 512: 1.0}, "lowest at budgets 256, 512 (1 s): below them, it falls from 2 s "
                                     "at 128."),
])
def test_the_ends_and_ties_are_said_as_the_points_have_them(point, p50, words):
    assert ttft_trend(sweep(point, p50)).endswith(words)


def test_float_noise_is_no_difference(point):
    said = ttft_trend(sweep(point, {144: 0.6566399999999989, 288: 0.6566399999999991, 576: 0.7}))
    assert "lowest at budgets 144, 288" in said


def test_the_recipe_states_no_rule_on_first_tokens(point):
    """The recommendation's reason gives the recipe, not 'a larger budget drains prompts
    faster': in the textbook burst the median first token is soonest at 2,048 of 16,384."""
    _, reason = recommend(sweep(point, {128: 2.57, 2048: 1.88, 16384: 2.29}), 1.0)
    assert "faster" not in reason and "sooner" not in reason
    assert "Sarathi-Serve's recipe: take the largest budget the tail gap allows" in reason
