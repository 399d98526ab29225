"""charts.fidelity: predicted-vs-measured frames and figures (pure builders, render offline)."""

import json

import numpy as np
import pytest
import vl_convert as vlc

from charts import fidelity as charts
from charts.theme import Look
from sim.cost.calibration import A100, FACTOR_SOURCES, factor_rules
from sim.cost.iteration import CostModel
from sim.cost.overhead import VLLM_V1
from sim.cost.validation import linear_layer_seconds
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from tests.support.charts import COMPOSITION, calibrated, fast_first

LOOKS = [Look(), Look(presenter=True), Look(dark=True), Look(presenter=True, dark=True)]



def test_validate_frame_has_one_row_per_point_and_mode(points, report):
    assert len(points) == 2 * len(report["points"]) == 2 * 1044
    assert set(points["mode"]) == {"roofline", "calibrated"}
    assert set(points.point) == {"fitted", "held out"}
    row = points.iloc[0]
    assert row.error == pytest.approx(row.predicted_ms / row.measured_ms - 1)


def test_tables_carry_the_reports_numbers(report):
    table = charts.points_table(report)
    assert len(table) == len(report["points"])
    first = report["points"][0]
    assert table["calibrated error"].iloc[0] == first["calibrated_error"]
    assert table["measured (ms)"].iloc[0] == first["measured_s"] * 1e3
    summary = charts.summary_table(report).set_index(["mode", "set"])
    held = report["summary"]["calibrated"]["held_out"]
    assert summary.loc[("calibrated", "held_out"), "median |error|"] == held["median_abs_error"]
    assert summary.loc[("calibrated", "held_out"), "points"] == held["points"]


def test_curve_tokens_hold_every_tile_edge():
    tokens = charts.curve_tokens(4096)
    assert tokens[0] == 1 and tokens[-1] == 4096 and len(tokens) < 400
    assert set(range(1, 257)) <= set(tokens)
    for edge in range(A100.gemm_tile, 4096, A100.gemm_tile):   # both sides of every step
        assert {edge, edge + 1} <= set(tokens)


def test_curves_are_the_models_own_and_calibrated_is_slower(curves):
    at = curves[(curves.tp == 2) & (curves.series == "calibrated")]
    assert np.allclose(at.ms, linear_layer_seconds("calibrated", 2, at.tokens) * 1e3)
    for tp, drawn in curves[curves.series == "calibrated"].groupby("tp"):   # each curve keeps
        roof = linear_layer_seconds("roofline", tp, drawn.tokens.to_numpy()) * 1e3  # its own points
        assert (drawn.ms.to_numpy() >= roof).all()
    assert sorted(curves.tp.unique()) == list(charts.TP_DEGREES)


def test_times_frame_has_each_measurement_once(points, curves):
    times = charts.times_frame(points, curves)
    measured = times[times.series == "measured"]
    assert len(measured) == len(points) // 2
    assert set(times.point) == {"model", "fitted", "held out"}


@pytest.mark.parametrize("tp", [1, 2])
def test_factors_walk_from_the_roofline_modes_time_to_the_calibrated_time(tp):
    cost = calibrated(tp)
    frame = charts.factors_frame(cost)
    assert frame.step.iloc[0] == charts.ROOFLINE_STEP and frame.start_ms.iloc[0] == 0
    assert list(frame.step[1:]) == [f.name for f in cost.factors]
    assert ("all-reduce" in list(frame.step)) == (tp > 1)
    ideal = CostModel(get_gpu("a100-80gb"), get_model("llama-3.1-8b"), "roofline",
                      tp=tp).price(COMPOSITION)
    assert frame.end_ms.iloc[0] == pytest.approx(ideal.time_s * 1e3)
    assert frame.end_ms.iloc[-1] == pytest.approx(cost.time_s * 1e3)
    assert (frame.start_ms.iloc[1:].values == frame.end_ms.iloc[:-1].values).all()


def test_every_factor_has_its_source():
    assert {f.name for f in calibrated(2).factors} == set(FACTOR_SOURCES)


@pytest.mark.parametrize("gpu", ["a100-80gb", "h100-sxm"])
def test_every_factors_why_starts_with_its_one_rule(gpu):
    cost = calibrated(2, gpu)
    cal = CostModel(get_gpu(gpu), get_model("llama-3.1-8b"), "calibrated").calibration
    rules = factor_rules(cal)
    assert [f.name for f in cost.factors] == list(rules)    # one rule per factor, in order
    for f in cost.factors:
        assert f.why.startswith(rules[f.name]), f.name
    why = {f.name: f.why for f in cost.factors}
    assert why["tile quantization"].endswith("here 289 tokens cost the FLOPs of 320")  # 32 + 257
    assert "257 tokens cost the FLOPs of 320" in rules["tile quantization"]
    assert why["all-reduce"].startswith(rules["all-reduce"] + "; here 64 all-reduces over 2 GPUs")
    assert why["per-iteration overhead"].startswith(   # the default: vLLM V0's loop
        rules["per-iteration overhead"] + "; here 4 ms of CPU, synchronous (the Sarathi-Serve "
        "artifact's vLLM V0 baseline)")


def test_a_set_overhead_is_said_after_the_rule():
    cost = CostModel(get_gpu("a100-80gb"), get_model("llama-3.1-8b"), "calibrated",
                     overhead_s=1e-3).price(COMPOSITION)
    assert cost.factors[-1].why.startswith(factor_rules(A100)["per-iteration overhead"]
                                           + "; here 1 ms of CPU, as set, synchronous")
    assert cost.factors[-1].added_s == 1e-3


def test_an_overlapped_engines_hidden_overhead_adds_nothing_and_says_so():
    cost = CostModel(get_gpu("a100-80gb"), get_model("llama-3.1-8b"), "calibrated",
                     engine=VLLM_V1).price(COMPOSITION)
    assert cost.factors[-1].added_s == 0.0
    assert "overlapped (vLLM 0.33.0): max(GPU, CPU) adds 0 µs to the" in cost.factors[-1].why


@pytest.mark.parametrize("look", fast_first(LOOKS),
                         ids=lambda look: f"presenter={look.presenter},dark={look.dark}")
def test_every_figure_compiles_with_vl_convert(points, curves, look):
    figures = {"times": charts.time_vs_tokens(charts.times_frame(points, curves), look),
               "accuracy": charts.accuracy(points, look),
               "factors": charts.factors_waterfall(charts.factors_frame(calibrated()), look)}
    for name, figure in figures.items():
        figure.chart.to_dict(validate=True)            # Altair's schema check
        svg = vlc.vegalite_to_svg(figure.spec())        # Vega-Lite compile + Vega render
        assert svg.startswith("<svg") and len(svg) > 5000, name
    assert "kernel floors" in vlc.vegalite_to_svg(figures["factors"].spec())
    assert "TP = 8" in vlc.vegalite_to_svg(figures["times"].spec())


def test_the_pages_chart_data_stays_under_a_megabyte(points, curves):
    look = Look()
    specs = [charts.time_vs_tokens(charts.times_frame(points, curves), look).spec(),
             charts.accuracy(points, look).spec(),
             charts.factors_waterfall(charts.factors_frame(calibrated()), look).spec()]
    assert sum(len(json.dumps(s)) for s in specs) < 1_000_000


def test_each_curve_is_drawn_through_fewer_points_within_a_fifth_of_a_pixel_of_every_point():
    """Every token count's time lies within a fifth of a pixel of the line drawn through the
    points kept, on the chart's log-log axes (a panel is 200 px tall over about three decades of
    ms); the flat and straight stretches lose their points, so the chart carries under a fifth
    of the rows."""
    px_per_decade = 200 / 3
    tokens = charts.curve_tokens(4096)
    curves = charts.curves_frame()
    for (tp, mode), drawn in curves.groupby(["tp", "series"]):
        exact = np.log10(linear_layer_seconds(mode, tp, tokens) * 1e3)
        line = np.interp(np.log10(tokens), np.log10(drawn.tokens), np.log10(drawn.ms))
        assert np.abs(exact - line).max() * px_per_decade <= 0.2, (tp, mode)
    assert len(curves) < len(tokens) * len(charts.TP_DEGREES) * len(charts.MODES) / 5
