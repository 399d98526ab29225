"""Words on the charts keep their room: the Traffic page's two distributions fit one of two
columns at 1280 px (the last tick's label was cut off), the Roofline's target label sits where no
marked budget's rule crosses it, and points a few pixels apart get their names on separate rows."""

import pytest

from charts import traffic as T
from charts.export import picture_width
from charts.roofline import point_labels, points_frame, roof_frame, target_label_budget
from charts.theme import Look
from charts.views import budget_plan, roofline_figures
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
