"""The tile view (charts/roofline.py): pure data in, a chart out. Its window holds the tile of the
budget it centres on and two whole tiles on either side, within what a fused iteration can hold;
its rules sit at every whole tile of the calibration (or the GPU's own); it is None without
tiles."""

from dataclasses import replace

import pytest

from charts.roofline import tile_view, tile_window
from charts.theme import Look
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model

MODEL = get_model("llama-3.1-8b")


def rules_at(figure) -> list[int]:
    spec = figure.chart.to_dict(validate=False)
    for layer in spec["layer"]:
        if layer["mark"]["type"] == "rule" and "values" in layer.get("data", {}) \
                and "tokens" in layer["data"]["values"][0]:
            return [v["tokens"] for v in layer["data"]["values"]]
    return []


def test_the_window_spans_five_tiles_around_the_budget_within_what_an_iteration_holds():
    assert tile_window(2000, 64, 65, 8256) == (1856, 2177)
    assert tile_window(2048, 64, 65, 8256) == (1856, 2177)   # 2,048 ends the 32nd tile
    assert tile_window(40, 64, 1, 100) == (1, 100)             # clipped to decodes + prompt


@pytest.mark.parametrize("tile", [None, 128])
def test_rules_at_every_whole_tile_of_the_calibration_or_the_gpus_own(tile):
    gpu = replace(get_gpu("h100-sxm"), gemm_tile=tile)
    cost = CostModel(gpu, MODEL, "calibrated")
    figure = tile_view(cost, 64, 4000, 8192, {"your budget": 1050}, 25.0, Look())
    size = cost.calibration.gemm_tile
    steps = figure.data["tiles"]
    assert rules_at(figure) == [t for t in range(steps.tokens.min(), steps.tokens.max() + 1)
                                if t % size == 0]
    assert (steps.rows % size == 0).all() and (steps.rows - steps.tokens).between(0, size - 1).all()
    (mark,) = figure.data["tile_marks"].itertuples()
    assert (mark.tokens, mark.rows) == (1050, {64: 1088, 128: 1152}[size])


@pytest.mark.parametrize("mode", ["simple", "roofline"])
def test_no_tiles_no_tile_view(mode):
    cost = CostModel(get_gpu("h100-sxm"), MODEL, mode)
    assert tile_view(cost, 64, 4000, 8192, {"your budget": 2000}, 25.0, Look()) is None


def test_a_budget_the_decodes_fill_centres_the_view_on_the_first_chunk_token():
    cost = CostModel(get_gpu("h100-sxm"), MODEL, "calibrated")
    steps = tile_view(cost, 64, 4000, 8192, {"largest within target": None, "your budget": 10},
                      25.0, Look()).data["tiles"]
    assert (steps.tokens.min(), steps.tokens.max()) == (65, 257)
