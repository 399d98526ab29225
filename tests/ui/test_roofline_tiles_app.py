"""The Roofline page's GEMM tiles (AppTest): in the calibrated mode a chart of the iteration token
by token with a rule at every whole tile and the rows a ragged budget computes, in words; in the
simple and roofline modes, that they have no tiles and no such chart."""

import json

import pytest

from sim.cost.calibration import calibration_for
from sim.presets.hardware import get_gpu
from tests.support.apptest import assert_clean, charts, open_app, shown

ROOFLINE = "pages/learn/roofline.py"


def tile_chart(at) -> dict | None:
    found = [c for c in charts(at) if "GEMM tiles" in json.dumps(c.get("title", ""))]
    return found[0] if found else None


def test_the_calibrated_mode_draws_its_tile_steps_and_says_what_a_ragged_budget_wastes():
    """On the H100 at a 64.7 ms target the largest budget is 1,995: it computes 2,048 rows."""
    at = open_app(ROOFLINE, gpu="h100-sxm", mode="calibrated", budget=2000, tpot=64.7)
    assert_clean(at)
    text = shown(at)
    tile = calibration_for(get_gpu("h100-sxm")).gemm_tile
    assert f"Tiles: why budgets come in multiples of {tile}" in text
    assert "Your budget, 2,000, computes ⌈2,000 / 64⌉ × 64 = **2,048 rows**, 48 of them empty" in text
    assert "The whole tiles beside it: 1,984 (" in text and "within the target) and 2,048 (" in text
    chart = tile_chart(at)
    assert chart is not None
    (steps,) = [d["values"] for d in chart["data"] if d["name"] == "tiles"]
    assert {row["rows"] % tile for row in steps} == {0}
    edges = [row["tokens"] for row, after in zip(steps, steps[1:]) if after["rows"] > row["rows"]]
    assert edges and all(t % tile == 0 for t in edges)
    # the chart joins the page's downloads
    downloads = {b.proto.label for b in at.get("download_button") if "download_tile-steps_" in b.proto.id}
    assert downloads == {"PNG", "SVG", "CSV (zip)", "JSON"}


@pytest.mark.parametrize("mode, name", [("simple", "simple"), ("roofline", "roofline")])
def test_the_ideal_modes_say_they_have_no_tiles(mode, name):
    at = open_app(ROOFLINE, gpu="h100-sxm", mode=mode)
    assert_clean(at)
    text = shown(at)
    assert f"Tiles: none in the {name} mode" in text
    assert f"The {name} mode has no tiles" in text and "257 tokens cost about what 320 do" in text
    assert tile_chart(at) is None


def test_a_link_with_the_mode_set_keeps_it():
    at = open_app(ROOFLINE, gpu="a100-80gb", mode="calibrated", tpot=40)
    assert at.selectbox(key="mode").value == "calibrated"
    assert tile_chart(at) is not None
