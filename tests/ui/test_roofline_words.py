"""The Roofline page's opening paragraph (ui/learn/roofline_words.py): what it says of the decode
step follows the step's priced bound, the one the page's table shows, over decode counts on both
sides of the ridge; "compute to spare" only where the step is memory-bound."""

import re

import pytest

from charts.theme import Look
from charts.views import budget_plan, roofline_figures
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from ui.learn.roofline_words import roofline_intro, tiles_words

TEXTBOOK = CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple")
H100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "calibrated")


@pytest.mark.parametrize("cost", [TEXTBOOK, H100], ids=["textbook", "h100-calibrated"])
@pytest.mark.parametrize("decodes", [1, 64, 133, 134, 300, 512, 2048])
def test_the_decode_step_is_called_by_the_bound_the_table_shows(cost, decodes):
    intro = roofline_intro(cost, decodes, 4000, 8192, decodes + 512, "a model", cost.mode, 1)
    (step,) = [it.cost for it in budget_plan(cost, decodes, 4000, 8192, decodes + 512, 0.025)
               .iterations if it.key == "decode"]
    said = re.search(r"with ([\d,]+) streams? that is ([\d,.]+) FLOP/B", intro)
    assert said and said.group(1) == f"{decodes:,}" and said.group(2) == f"{step.intensity:,.4g}"
    assert ("compute to spare" in intro and "no compute to spare" not in intro) == \
        (step.bound == "memory")
    assert ("already compute-bound" in intro) == (step.bound == "compute")
    assert ("low intensity" in intro) == (step.bound == "memory")
    # the opening question presumes a cheap decode step only where it is one
    assert intro.startswith("Why is a decode step cheap") == (step.bound == "memory")


def test_512_streams_on_the_textbook_gpu_are_compute_bound():
    """The page at ?decodes=512: 512 FLOP/B against a 133.3 FLOP/B ridge."""
    intro = roofline_intro(TEXTBOOK, 512, 4000, 8192, 576, "8B", "simple", 1)
    assert "512 FLOP/B: the decode step is already compute-bound" in intro
    assert "low intensity" not in intro and "has compute to spare" not in intro


def test_no_streams_no_decode_step():
    intro = roofline_intro(TEXTBOOK, 0, 4000, 8192, 576, "8B", "simple", 1)
    assert "no decode step" in intro and "FLOP/B, " not in intro.split("compute-bound.")[-1]


def test_the_tile_words_and_the_tile_chart_round_up_alike():
    """The page's words write rows = ⌈tokens / 64⌉ × 64 and say it in words; the tile chart, drawn
    by exports in a font without ⌈ ⌉, says the same words."""
    plan = budget_plan(H100, 64, 4000, 8192, 576, 0.025)
    words = tiles_words(H100, 64, 4000, 8192, 576, plan.largest, 0.025)
    subtitle = roofline_figures(H100, plan, 64, 4000, 8192, Look()).tiles.chart.title.subtitle
    tile = H100.gemm_tile
    assert f"rows = ⌈tokens / {tile}⌉ × {tile}, the tokens rounded up to a multiple of {tile}" \
        in words
    assert subtitle[0].startswith(f"rows = tokens rounded up to a multiple of {tile}:")
