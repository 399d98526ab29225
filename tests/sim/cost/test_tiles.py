"""GEMM tiles (sim/cost/tiles.py, sim/cost/calibration.py): an iteration's time steps exactly where
its tokens start a new tile of the calibration's height, at a GPU's own tile where it carries one;
the ideal modes have no tiles; a ragged tile's empty rows cost the time the steps show."""

from dataclasses import replace

import numpy as np
import pytest

from sim.cost.calibration import calibrated_tile, calibration_for, padded_rows, wasted_rows
from sim.cost.iteration import CostModel
from sim.cost.tiles import tile_multiples, tiled
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.studies.budget import fused_iteration

H100 = get_gpu("h100-sxm")
MODEL = get_model("llama-3.1-8b")


def step_edges(cost: CostModel, low: int, high: int) -> list[int]:
    """The token counts after which one token more makes the fused iteration (64 decodes and a
    prompt chunk) jump: increments over 5x the median one, read off the priced times alone."""
    tokens = np.arange(low, high + 1)
    times = np.array([cost.time(*cost.aggregates(fused_iteration(64, 4000, 8192, int(b))))[2]
                      for b in tokens])
    rises = np.diff(times)
    return [int(t) for t in tokens[:-1][rises > 5 * np.median(rises)]]


def test_the_calibrated_iteration_steps_at_the_calibrations_tile():
    cost = CostModel(H100, MODEL, "calibrated")
    tile = calibration_for(H100).gemm_tile
    assert cost.gemm_tile == tile
    assert step_edges(cost, 1000, 1600) == [t for t in range(1000, 1600) if t % tile == 0]


def test_a_gpu_with_a_tile_of_its_own_steps_at_it():
    own = replace(H100, gemm_tile=128)
    cost = CostModel(own, MODEL, "calibrated")
    assert cost.gemm_tile == calibrated_tile(own) == 128
    assert "GEMM tile of 128 token rows" in cost.calibration.provenance
    assert step_edges(cost, 1000, 1600) == [1024, 1152, 1280, 1408, 1536]
    assert tiled(cost, fused_iteration(64, 4000, 8192, 1100)).rows == 1152


@pytest.mark.parametrize("mode", ["simple", "roofline"])
def test_the_ideal_modes_have_no_tiles(mode):
    cost = CostModel(H100, MODEL, mode)
    assert cost.gemm_tile is None
    assert step_edges(cost, 1000, 1300) == []
    it = tiled(cost, fused_iteration(64, 4000, 8192, 2000))
    assert (it.tokens, it.rows, it.wasted_rows, it.wasted_s, it.tile_here) == (2000, 2000, 0, 0, None)


def test_a_ragged_tile_wastes_its_empty_rows_and_their_time():
    """2,000 tokens compute 2,048 rows; their time is what the step at 1,984 -> 1,985 adds, less
    what the 16 tokens themselves cost; a whole tile wastes none."""
    cost = CostModel(H100, MODEL, "calibrated")
    it = tiled(cost, fused_iteration(64, 4000, 8192, 2000))
    assert (it.tokens, it.tile, it.rows, it.wasted_rows) == (2000, 64, 2048, 48)
    assert it.time_s == cost.price(fused_iteration(64, 4000, 8192, 2000)).time_s
    whole = tiled(cost, fused_iteration(64, 4000, 8192, 2048))
    assert 0 < it.wasted_s < whole.time_s - tiled(cost, fused_iteration(64, 4000, 8192, 1984)).time_s
    assert whole.wasted_rows == 0 and whole.wasted_s == 0
    assert it.wasted_share == pytest.approx(it.wasted_s / it.time_s)


def test_rows_round_up_to_whole_tiles_and_small_gemms_to_a_smaller_tile():
    assert [padded_rows(n, 64) for n in (0, 1, 16, 17, 33, 64, 65, 257, 2000)] == \
        [0, 16, 16, 32, 64, 64, 128, 320, 2048]
    assert [wasted_rows(n, 64) for n in (17, 64, 2000)] == [15, 0, 48]
    assert padded_rows(2000, None) == 2000 and wasted_rows(2000, None) == 0
    assert tile_multiples(2000, 64) == (1984, 2048) and tile_multiples(2048, 64) == (2048, 2048)


@pytest.mark.parametrize("tile, says", [(96, "power of two"), (8, "16"), (512, "256"),
                                        (64.5, "whole")])
def test_a_gpu_tile_that_cannot_be_is_refused_with_what_would_work(tile, says):
    with pytest.raises(InputError, match=says):
        CostModel(replace(H100, gemm_tile=tile), MODEL, "calibrated")


def test_the_ideal_modes_name_the_tile_the_calibrated_mode_would_use():
    assert calibrated_tile(get_gpu("illustrative")) == calibrated_tile(H100) == 64
