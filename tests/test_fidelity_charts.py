"""charts.fidelity: predicted-vs-measured frames and charts (pure builders, render offline)."""

import json

import altair as alt
import pytest
import vl_convert as vlc

from charts import fidelity as charts
from sim.cost import Chunk, Composition, CostModel
from sim.fidelity import validate
from sim.hardware import get_gpu
from sim.models import get_model


@pytest.fixture(scope="module")
def points():
    return charts.validate_frame(validate())


@pytest.fixture(scope="module")
def calibrated_cost():
    cost = CostModel(get_gpu("a100-80gb"), get_model("llama-3.1-8b"), "calibrated", tp=2)
    return cost.price(Composition((2000,) * 32, (Chunk(257),)))


def test_validate_frame_has_one_row_per_point_and_mode(points):
    assert len(points) == 2 * 1044
    assert set(points["mode"]) == {"roofline", "calibrated"}
    assert set(points.point) == {"fitted", "held out"}
    row = points.iloc[0]
    assert row.error == pytest.approx(row.predicted_ms / row.measured_ms - 1)


def test_curves_frame_covers_every_token_and_calibrated_is_slower():
    curves = charts.curves_frame(tp=2, max_tokens=300)
    wide = curves.pivot(index="tokens", columns="series", values="ms")
    assert list(wide.index) == list(range(1, 301))
    assert (wide.calibrated >= wide.roofline).all()


def test_factors_frame_walks_from_the_roofline_to_the_calibrated_time(calibrated_cost):
    frame = charts.factors_frame(calibrated_cost)
    assert frame.step.iloc[0] == "roofline (ideal)" and frame.start_ms.iloc[0] == 0
    assert list(frame.step[1:]) == [f.name for f in calibrated_cost.factors]
    assert frame.end_ms.iloc[-1] == pytest.approx(calibrated_cost.time_s * 1e3)
    assert (frame.start_ms.iloc[1:].values == frame.end_ms.iloc[:-1].values).all()


def test_every_builder_makes_a_valid_chart_that_renders_offline(points, calibrated_cost):
    built = [charts.time_vs_tokens(points, charts.curves_frame(1, 512), tp=1),
             charts.parity(points), charts.error_by_tokens(points),
             charts.factors_waterfall(charts.factors_frame(calibrated_cost))]
    for chart in built:
        assert isinstance(chart, alt.TopLevelMixin)
        spec = chart.to_dict()   # validates against the Vega-Lite schema
        assert "$schema" in spec
    svg = vlc.vegalite_to_svg(json.dumps(built[-1].to_dict()))
    assert "<svg" in svg and "kernel floors" in svg
