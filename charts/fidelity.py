"""How close is the model to a real GPU: predicted vs measured figures, from `sim.cost.validation.validate`.

Frames come from the validate report (`validate_frame`, `points_table`, `summary_table`), from the
cost model along the token axis (`curves_frame`) and from one calibrated `IterationCost`
(`factors_frame`); builders are pure (frames and a Look in, a Figure out) and put named data in
their marks, like every other figure. Colours follow the Look (Okabe-Ito): measured points in the
ink colour, the ideal roofline in the decode blue, the calibrated model vermillion.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from sim.cost.calibration import A100
from sim.cost.iteration import IterationCost
from sim.cost.validation import TARGET_MEDIAN, linear_layer_seconds

from .figure import Figure
from .theme import SERIES, Look

MODES = ("roofline", "calibrated")
CALIBRATED = SERIES["brown"]
ROOFLINE = SERIES["violet"]   # the ideal estimate: no work of its own, so no meaning's colour
TP_DEGREES = (1, 2, 4, 8)   # the tensor-parallel degrees the shipped measurements cover
ROOFLINE_STEP = "roofline (ideal)"
TIMES_Y_TITLE = ("weight-GEMM time", "per layer (ms)")   # the time-vs-tokens panels' y axis


def _series(look: Look, measured: bool = True) -> alt.Scale:
    inks = {"measured": look.ink, "roofline": ROOFLINE, "calibrated": CALIBRATED}
    if not measured:
        del inks["measured"]
    return alt.Scale(domain=list(inks), range=list(inks.values()))


# --- frames -----------------------------------------------------------------------------------
def validate_frame(report: dict) -> pd.DataFrame:
    """One row per (measured point, mode): tp, tokens, point ("fitted" / "held out"), measured_ms,
    mode, predicted_ms, error (predicted / measured - 1). Times are per layer."""
    rows = []
    for p in report["points"]:
        for mode in MODES:
            rows.append(dict(tp=p["tp"], tokens=p["tokens"],
                             point="held out" if p["held_out"] else "fitted",
                             measured_ms=p["measured_s"] * 1e3, mode=mode,
                             predicted_ms=p[f"{mode}_s"] * 1e3, error=p[f"{mode}_error"]))
    return pd.DataFrame(rows)


def points_table(report: dict) -> pd.DataFrame:
    """The report's points as `python -m sim validate` lists them: one row per measurement, times
    in ms per layer, errors as predicted / measured - 1."""
    return pd.DataFrame([{
        "TP": p["tp"], "tokens": p["tokens"], "point": "held out" if p["held_out"] else "fitted",
        "measured (ms)": p["measured_s"] * 1e3,
        "roofline (ms)": p["roofline_s"] * 1e3, "roofline error": p["roofline_error"],
        "calibrated (ms)": p["calibrated_s"] * 1e3, "calibrated error": p["calibrated_error"],
    } for p in report["points"]])


def summary_table(report: dict) -> pd.DataFrame:
    """The report's error summaries, one row per (mode, set of points), as `validate` prints them."""
    return pd.DataFrame([{"mode": mode, "set": group, "points": s["points"],
                          "median |error|": s["median_abs_error"], "max |error|": s["max_abs_error"]}
                         for mode, groups in report["summary"].items()
                         for group, s in groups.items()])


def curve_tokens(max_tokens: int, tile: int = A100.gemm_tile, dense: int = 256) -> np.ndarray:
    """Token counts to draw a curve at: every count up to `dense` (where the small tiles and the
    ridge are), then the last and first count of each `tile` past it. Past `dense` the
    calibrated time changes smoothly inside a tile and steps at its edge, so these points draw
    every step without pricing every token count."""
    edges = np.arange(tile, max_tokens + 1, tile)
    tokens = np.r_[np.arange(1, min(dense, max_tokens) + 1), edges, edges + 1, max_tokens]
    return np.unique(tokens[tokens <= max_tokens])


CURVE_TOLERANCE = 0.002   # decades of ms: a fifth of a pixel on the charts' log axes


def curves_frame(tps=TP_DEGREES, max_tokens: int = 4096) -> pd.DataFrame:
    """Both modes' linear-layer time per layer (`sim.cost.validation.linear_layer_seconds`, what
    `validate` compares) along the token axis, for each TP degree: tp, tokens, series, ms; each
    curve through the fewest of its points that draw it (`drawn_points`)."""
    tokens = curve_tokens(max_tokens)
    curves = []
    for tp in tps:
        for mode in MODES:
            ms = linear_layer_seconds(mode, tp, tokens) * 1e3
            kept = drawn_points(np.log10(tokens), np.log10(ms))
            curves.append(pd.DataFrame({"tp": tp, "tokens": tokens[kept], "series": mode,
                                        "ms": ms[kept]}))
    return pd.concat(curves, ignore_index=True)


def drawn_points(x: np.ndarray, y: np.ndarray, tolerance: float = CURVE_TOLERANCE) -> np.ndarray:
    """Which points of a line (x increasing) to keep so that every point left out lies within
    `tolerance` (in y) of the straight segment drawn past it (Ramer-Douglas-Peucker). On log-log
    axes the smooth stretches between tile steps need a few points, the steps keep both sides: a
    fresh visit's browser parses and draws under a fifth of the rows for the same picture."""
    keep = np.zeros(len(x), dtype=bool)
    keep[[0, -1]] = True
    spans = [(0, len(x) - 1)]
    while spans:
        first, last = spans.pop()
        if last - first < 2:
            continue
        inner = np.arange(first + 1, last)
        line = y[first] + (y[last] - y[first]) * (x[inner] - x[first]) / (x[last] - x[first])
        off = np.abs(y[inner] - line)
        worst = int(np.argmax(off))
        if off[worst] > tolerance:
            split = first + 1 + worst
            keep[split] = True
            spans += [(first, split), (split, last)]
    return keep


def times_frame(points: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """The measurements (`validate_frame`, one row each) and the curves (`curves_frame`) in one
    frame, so one chart can facet both by TP: tp, tokens, series, ms, point."""
    at = points[points["mode"] == MODES[0]]   # validate_frame has each measurement once per mode
    measured = pd.DataFrame({"tp": at.tp, "tokens": at.tokens, "series": "measured",
                             "ms": at.measured_ms, "point": at.point})
    return pd.concat([curves.assign(point="model"), measured], ignore_index=True)


def factors_frame(cost: IterationCost) -> pd.DataFrame:
    """A calibrated iteration's factors as a waterfall: each step's start and end in ms from the
    roofline time up to the calibrated time (the first step ends where the ideal roofline does)."""
    start = (cost.time_s - sum(f.added_s for f in cost.factors)) * 1e3
    rows = [dict(step=ROOFLINE_STEP, start_ms=0.0, end_ms=start, added_ms=start,
                 why="max(FLOPs / peak, bytes / bandwidth) over the whole iteration, plus the "
                     "all-reduces at full link bandwidth with TP")]
    for f in cost.factors:
        rows.append(dict(step=f.name, start_ms=start, end_ms=start + f.added_s * 1e3,
                         added_ms=f.added_s * 1e3, why=f.why))
        start += f.added_s * 1e3
    return pd.DataFrame(rows)


# --- figures ----------------------------------------------------------------------------------
def time_vs_tokens(times: pd.DataFrame, look: Look, width: int = 420) -> Figure:
    """Linear-layer time against tokens, one panel per TP degree (`times_frame`): measurements as
    dots, each mode's curve as a line; log-log, so a constant relative error is a constant gap."""
    x = alt.X("tokens:Q", title="tokens in the forward pass", scale=alt.Scale(type="log"),
              axis=alt.Axis(format="~s"))
    # a projector's panels are shorter than the title at its font: the title on two lines, so
    # that one row's title stays beside its own panel
    y = alt.Y("ms:Q", title=list(TIMES_Y_TITLE) if look.presenter else " ".join(TIMES_Y_TITLE),
              scale=alt.Scale(type="log"))
    color = alt.Color("series:N", scale=_series(look), title=None)
    lines = alt.Chart().mark_line(strokeWidth=2).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("series:N", title="model"), alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("ms:Q", title="ms per layer", format=".4g")],
    ).transform_filter(alt.datum.series != "measured")
    dots = alt.Chart().mark_point(size=22 if look.presenter else 14, filled=True, opacity=0.8).encode(
        x=x, y=y, color=color,
        shape=alt.Shape("point:N", title=None, scale=alt.Scale(domain=["fitted", "held out"])),
        tooltip=[alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("ms:Q", title="measured ms per layer", format=".4g"),
                 alt.Tooltip("point:N", title="calibration")],
    ).transform_filter(alt.datum.series == "measured")
    panel = alt.layer(lines, dots, data=alt.Data(name="times")).properties(
        width=width, height=180 if look.presenter else 200)   # a 1280x720 projector: whole
    chart = panel.facet(facet=alt.Facet("tp:O", title=None, header=alt.Header(labelExpr=(
        "'TP = ' + datum.value"))), columns=2).properties(
        title=alt.TitleParams("Measured vs predicted, A100-80GB, Llama-2-7B",
                              subtitle="the four weight GEMMs of one layer, per GPU"))
    return Figure(chart, look, {"times": times})


def parity(points: pd.DataFrame, look: Look, width: int = 420) -> Figure:
    """Predicted against measured, log-log, every point and TP degree (`validate_frame`); on the
    dashed diagonal is exact, below it is faster than the GPU really ran."""
    lo = float(min(points.measured_ms.min(), points.predicted_ms.min()))
    hi = float(max(points.measured_ms.max(), points.predicted_ms.max()))
    scale = alt.Scale(type="log", domain=[lo * 0.8, hi * 1.25])
    x = alt.X("measured_ms:Q", scale=scale, title="measured (ms per layer)")
    y = alt.Y("predicted_ms:Q", scale=scale, title="predicted (ms per layer)")
    diagonal = alt.Chart(alt.Data(values=[{"measured_ms": lo, "predicted_ms": lo},
                                          {"measured_ms": hi, "predicted_ms": hi}])).mark_line(
        color=look.muted, strokeDash=[4, 3]).encode(x=x, y=y)
    dots = alt.Chart(alt.Data(name="points")).mark_point(
        size=22 if look.presenter else 14, filled=True, opacity=0.5).encode(
        x=x, y=y, color=alt.Color("mode:N", scale=_series(look, measured=False), title=None,
                                  legend=alt.Legend(symbolOpacity=1)),
        shape=alt.Shape("point:N", title=None, legend=alt.Legend(symbolOpacity=1)),
        tooltip=["mode:N", "tp:Q", alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("measured_ms:Q", format=".4g"),
                 alt.Tooltip("predicted_ms:Q", format=".4g"),
                 alt.Tooltip("error:Q", format="+.1%"), "point:N"])
    chart = alt.layer(diagonal, dots, width=width, height=width,
                      title=alt.TitleParams("Predicted vs measured",
                                            subtitle="dashed: exact; below it: faster than the GPU"))
    return Figure(chart, look, {"points": points})


def error_by_tokens(points: pd.DataFrame, look: Look, target: float = TARGET_MEDIAN,
                    width: int = 420) -> Figure:
    """Error (predicted / measured - 1) against tokens (`validate_frame`), one panel per mode,
    coloured by TP; the band is +-`target`."""
    band = alt.Chart(alt.Data(values=[{"lo": -target, "hi": target}])).mark_rect(
        color=look.grid, opacity=0.9).encode(y="lo:Q", y2="hi:Q")
    tp_colors = alt.Scale(domain=list(TP_DEGREES), range=[look.ink, SERIES["violet"],
                                                          SERIES["olive"], SERIES["purple"]])
    panels = []
    for mode in MODES:
        dots = alt.Chart(alt.Data(name="points")).mark_circle(
            size=22 if look.presenter else 14, opacity=0.6).encode(
            x=alt.X("tokens:Q", title="tokens in the forward pass", scale=alt.Scale(type="log"),
                    axis=alt.Axis(format="~s")),
            y=alt.Y("error:Q", title="predicted / measured − 1", axis=alt.Axis(format="%")),
            color=alt.Color("tp:N", title="TP", scale=tp_colors),
            tooltip=["mode:N", "tp:Q", alt.Tooltip("tokens:Q", format=","),
                     alt.Tooltip("error:Q", format="+.1%"), "point:N"],
        ).transform_filter(alt.datum.mode == mode)
        panels.append(alt.layer(band, dots).properties(
            width=width, height=130 if look.presenter else 160, title=mode))
    chart = alt.vconcat(*panels, title=alt.TitleParams(
        "Error by tokens", subtitle=f"band: ±{target:.0%}, the target for the calibrated mode"))
    return Figure(chart, look, {"points": points})


def accuracy(points: pd.DataFrame, look: Look, width: int = 400) -> Figure:
    """The parity plot beside the error by tokens, in one figure so the points are sent once."""
    chart = alt.hconcat(parity(points, look, width).chart,
                        error_by_tokens(points, look, width=width).chart,
                        spacing=30).resolve_scale(color="independent", shape="independent")
    return Figure(chart, look, {"points": points})


def factors_waterfall(factors: pd.DataFrame, look: Look, width: int = 640) -> Figure:
    """Why a point moved (`factors_frame`): the roofline bar, then each factor's added time
    stacked on it."""
    order = list(factors.step)
    bars = alt.Chart(alt.Data(name="factors")).mark_bar().encode(
        y=alt.Y("step:N", sort=order, title=None, axis=alt.Axis(labelLimit=0)),
        x=alt.X("start_ms:Q", title="time (ms)"), x2="end_ms:Q",
        color=alt.condition(alt.datum.step == ROOFLINE_STEP, alt.value(ROOFLINE),
                            alt.value(CALIBRATED)),
        tooltip=["step:N", alt.Tooltip("added_ms:Q", title="adds (ms)", format=",.4g"),
                 alt.Tooltip("end_ms:Q", title="running total (ms)", format=",.4g"), "why:N"])
    chart = bars.properties(width=width, height=(40 if look.presenter else 28) * len(order),
                            title="From the roofline to the calibrated time")
    return Figure(chart, look, {"factors": factors})
