"""The tile view (charts/roofline.py): pure data in, a chart out. Its window holds the tiles of the
budgets it marks and two whole tiles on either side, within what a fused iteration can hold, or,
for two budgets too far apart, the first's, saying where the other lies; its rules sit at every
whole tile of the calibration (or the GPU's own); it is None without tiles; what it draws, an
export's font has every character of."""

from dataclasses import replace

import pytest
import vl_convert as vlc

from charts.figure import stacked
from charts.roofline import MAX_TILES_SHOWN, tile_view, tile_window
from charts.theme import Look
from charts.views import budget_plan, roofline_figures
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from tests.support.export_font import drawn_text, lacking

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
    assert tile_window(256, 64, 65, 8256, upto=576) == (65, 705)   # from 256's tile to 576's


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


H100 = CostModel(get_gpu("h100-sxm"), MODEL, "calibrated")
TPOT_MS = 25.0   # the H100's largest budget within it: 256


def marked(budget: int) -> dict[str, int | None]:
    plan = budget_plan(H100, 64, 4000, 8192, budget, TPOT_MS / 1e3)
    return {"largest within target": plan.largest, "your budget": budget}


def test_both_budgets_a_few_tiles_apart_are_marked_on_one_window():
    """At 576 and 256 (the export's defaults on an H100) the window once held 256's tiles only,
    and "your budget" was on no chart: now it spans both."""
    figure = tile_view(H100, 64, 4000, 8192, marked(576), TPOT_MS, Look())
    marks = figure.data["tile_marks"]
    assert dict(zip(marks.kind, marks.tokens)) == {"largest within target": 256, "your budget": 576}
    steps = figure.data["tiles"]
    assert (steps.tokens.min(), steps.tokens.max()) == (65, 705)
    assert figure.chart.title.subtitle[1:] == []


def test_a_budget_too_far_to_draw_is_said_to_lie_off_the_window():
    """4,096 is 60 tiles past 256: the window keeps the largest within the target's tiles (at
    most MAX_TILES_SHOWN wide, so the steps stay steps) and says where the scenario's lies."""
    figure = tile_view(H100, 64, 4000, 8192, marked(4096), TPOT_MS, Look())
    steps = figure.data["tiles"]
    assert steps.tokens.max() - steps.tokens.min() <= MAX_TILES_SHOWN * 64
    assert list(figure.data["tile_marks"].kind) == ["largest within target"]
    assert figure.chart.title.subtitle[1:] == [
        "your budget, 4,096 tokens, lies 58 tiles to the right, too far to draw at this scale: "
        "the curve above marks it"]


def test_a_budget_past_the_prompt_is_marked_where_its_iteration_ends():
    """A budget over decodes + prompt holds the whole prompt: marked at its iteration's tokens."""
    figure = tile_view(H100, 64, 4000, 200, {"your budget": 1000}, TPOT_MS, Look())
    (mark,) = figure.data["tile_marks"].itertuples()
    assert (mark.tokens, mark.rows) == (264, 320)
    assert mark.text == "your budget: 1,000, all 264 tokens → 320 rows, 56 empty"


def test_a_budget_the_decodes_fill_is_said_to_have_no_tile():
    figure = tile_view(H100, 64, 4000, 8192, {"largest within target": 256, "your budget": 10},
                       TPOT_MS, Look())
    assert figure.chart.title.subtitle[1:] == [
        "your budget, 10, leaves no chunk beside the 64 decodes: no tile here"]


@pytest.mark.parametrize("budget", [576, 4096])
def test_every_character_the_roofline_export_draws_is_in_the_exports_font(budget):
    """vl-convert draws exports in its Liberation Sans, which has no ⌈ ⌉: the tile chart's
    subtitle, written with them, was drawn whole in a serif."""
    plan = budget_plan(H100, 64, 4000, 8192, budget, TPOT_MS / 1e3)
    figures = roofline_figures(H100, plan, 64, 4000, 8192, Look())
    texts = drawn_text(vlc.vegalite_to_scenegraph(stacked(*figures.shown).spec()))
    assert any(t.startswith("GEMM tiles") for t in texts)
    assert lacking({c for t in texts for c in t if not c.isascii()}) == set()


def test_a_one_token_iteration_is_marked_in_the_singular():
    """A one-token prompt with no streams: its iteration holds 1 token, not "1 tokens"."""
    figure = tile_view(H100, 0, 4000, 1, {"largest within target": 1, "your budget": 8192},
                       TPOT_MS, Look())
    assert list(figure.data["tile_marks"].text) == [
        "largest within target: 1 token → 16 rows, 15 empty",
        "your budget: 8,192, all 1 token → 16 rows, 15 empty"]
