"""Words on the charts keep their room: the Traffic page's two distributions fit one of two
columns at 1280 px (the last tick's label was cut off), the Roofline's target label sits where no
marked budget's rule crosses it, points a few pixels apart get their names on separate rows, and
the Roofline page's axis labels never run together at any width its export is drawn at."""

import io
import re

import numpy as np
import pytest
import vl_convert as vlc
from PIL import Image

from charts import traffic as T
from charts.export import fitted, picture_width
from charts.figure import stacked
from charts.roofline import point_labels, points_frame, roof_frame, target_label_budget
from charts.theme import Look
from charts.views import budget_plan, roofline_figures
from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.workloads import burst
from tests.support.charts import SEED, serve


@pytest.fixture(scope="module")
def distributions():
    return T.ttft_and_gaps(serve(burst(10, 8192, 32, 64, 4000, 256), ("vllm-v0", "sarathi")))


@pytest.mark.parametrize("look", [Look(), Look(presenter=True)], ids=["light", "presenter"])
def test_both_distributions_fit_half_the_page_at_1280_px(distributions, look):
    ttft, gaps = distributions
    tail = T.tail_chart(gaps, look, name="gaps", title="Time between tokens: the tail",
                        x_title="gap between two tokens (ms, log scale)", threshold=100, unit="ms")
    cdf = T.cdf_chart(ttft, look, name="ttft", title="Time to first token",
                      x_title="TTFT (s, log scale)", log=True)
    assert picture_width(tail) <= T.HALF_PAGE_PX and picture_width(cdf) <= T.HALF_PAGE_PX


@pytest.mark.parametrize("decodes", [64, 512, 8])
def test_no_marked_budgets_rule_crosses_the_target_label(decodes):
    look, width = Look(), 700
    plan = budget_plan(SEED, decodes, 4000, 8192, 576, 0.025)
    curve = roofline_figures(SEED, plan, decodes, 4000, 8192, look, width=width).curve
    end = target_label_budget(curve.data["curve"], plan.markers)
    axis = max(curve.data["curve"].budget.max(), plan.markers.budget.max()) * 1.1   # nice-ish
    words = f"TPOT target {plan.tpot_s * 1e3:,.4g} ms"
    span = (len(words) * 0.6 * look.font_size + 6) * axis / width
    assert not [b for b in plan.markers.budget if end - span < b < end]
    assert end > span   # room on the axis for the words


@pytest.mark.parametrize("decodes", [64, 512])
def test_points_a_few_pixels_apart_get_their_names_on_separate_rows(decodes):
    look, width = Look(), 700
    points = points_frame(budget_plan(SEED, decodes, 4000, 8192, 576, 0.025).iterations)
    labels = point_labels(points, roof_frame(4e14, 3e12, points.intensity), width, look)
    assert {x["name"] for x in labels} == {"decode", "chunk", "fused", "prompt"}
    near = [(a, b) for a in labels for b in labels
            if a is not b and abs(a["intensity"] / b["intensity"] - 1) < 0.2]
    assert near   # the chunk and the fused iteration (512 and 576 FLOP/B)
    assert all(a["offset_px"] != b["offset_px"] for a, b in near)


# --- the Roofline page's horizontal axes, as drawn ------------------------------------------------
MIN_GAP_PX = 4   # inked columns this far apart belong to two labels: inside one ("1,000") at most 3
H100 = CostModel(get_gpu("h100-sxm"), get_model("dense-8b"), "calibrated")
CAPTION = ("H100 SXM · 8B model (textbook example)",
           "8,192-token prompt · 64 streams · budget 576 tokens · calibrated cost model")


def horizontal_labels(scenegraph: dict) -> dict[int, tuple[int, int]]:
    """{a horizontal axis's label row (px from the top): (labels shown there, font size)} from
    vl-convert's scenegraph: the labels set under their ticks (hidden ones have opacity 0, a log
    axis's unlabelled ticks an empty text)."""
    rows: dict[int, tuple[int, int]] = {}

    def walk(mark: dict, x: float, y: float) -> None:
        for item in mark.get("items", []):
            ix, iy = x + item.get("x", 0), y + item.get("y", 0)
            if mark.get("marktype") == "group":
                for child in item.get("items", []):
                    walk(child, ix, iy)
            elif mark.get("role") == "axis-label" and item.get("baseline") == "top" \
                    and item.get("opacity", 1) > 0 and item.get("text"):
                shown, _ = rows.get(round(iy), (0, 0))
                rows[round(iy)] = (shown + 1, item["fontSize"])

    walk(scenegraph["scenegraph"], *scenegraph["origin"])
    return rows


def label_runs(ink: np.ndarray, top: int, size: int) -> int:
    """How many runs of ink the row of labels at `top` makes, parted by MIN_GAP_PX or more."""
    columns = np.flatnonzero(ink[top:top + size].any(axis=0))
    return 1 + int((np.diff(columns) > MIN_GAP_PX).sum()) if len(columns) else 0


def touching_labels(figure) -> dict[int, tuple[int, int]]:
    """{label row: (labels shown, runs of ink drawn)} where these differ: labels run together."""
    spec = figure.spec()
    picture = Image.open(io.BytesIO(vlc.vegalite_to_png(spec, scale=1))).convert("L")
    ink = np.abs(np.asarray(picture, int) - np.asarray(picture, int)[0, 0]) > 40
    rows = horizontal_labels(vlc.vegalite_to_scenegraph(spec))
    assert len(rows) == 3   # the roofline's, the budget curve's and the tile steps'
    return {top: (shown, label_runs(ink, top, size)) for top, (shown, size) in rows.items()
            if label_runs(ink, top, size) != shown}


def roofline_export(width: int, look: Look):
    """The roofline view as `python -m sim export` draws it `width` px wide (H100, calibrated)."""
    plan = budget_plan(H100, 64, 4000, 8192, 576, 0.025)
    return fitted(lambda plot: stacked(*roofline_figures(H100, plan, 64, 4000, 8192, look,
                                                         plot).shown), width, CAPTION)


@pytest.mark.parametrize("width", [900, 700, 1280])
def test_no_axis_labels_run_together_in_the_roofline_export(width):
    """At 900 px the budget curve's last labels ran together ("8,5009,000"): Vega hid none, the
    two just touched. 700 is the page's plot width, drawn by the browser in a narrower font."""
    assert touching_labels(roofline_export(width, Look())) == {}


@pytest.mark.slow
@pytest.mark.parametrize("look", [Look(), Look(presenter=True)], ids=["normal", "presenter"])
def test_no_axis_labels_run_together_at_any_export_width(look):
    """Every width from the narrowest the export draws (300 px is refused, naming it) to 4,000
    px, every 149 px."""
    with pytest.raises(InputError) as refused:
        roofline_export(300, look)
    narrowest = int(re.search(r"need ([\d,]+) px", str(refused.value)).group(1).replace(",", ""))
    for width in range(narrowest, 4001, 149):
        assert touching_labels(roofline_export(width, look)) == {}, width
