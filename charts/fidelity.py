"""How close is the model to a real GPU: predicted vs measured charts, from `sim.fidelity.validate`.

Builders are pure: a DataFrame in, an Altair chart out. The frames come from the validate report
(`validate_frame`), from the cost model at every token count (`curves_frame`) and from one
calibrated `IterationCost` (`factors_frame`). Colours are the
Okabe-Ito palette (Okabe & Ito 2008): measured points black, the ideal roofline blue, the
calibrated model vermillion.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from sim.cost import IterationCost
from sim.fidelity import linear_layer_seconds

MEASURED, ROOFLINE, CALIBRATED = "#000000", "#0072B2", "#D55E00"
SERIES = alt.Scale(domain=["measured", "roofline", "calibrated"],
                   range=[MEASURED, ROOFLINE, CALIBRATED])
MODES = alt.Scale(domain=["roofline", "calibrated"], range=[ROOFLINE, CALIBRATED])
TPS = alt.Scale(domain=[1, 2, 4, 8], range=["#000000", "#56B4E9", "#009E73", "#CC79A7"])


def validate_frame(report: dict) -> pd.DataFrame:
    """One row per (measured point, mode): tp, tokens, point ("fitted" / "held out"), measured_ms,
    mode, predicted_ms, error (predicted / measured - 1). Times are per layer."""
    rows = []
    for p in report["points"]:
        for mode in ("roofline", "calibrated"):
            rows.append(dict(tp=p["tp"], tokens=p["tokens"],
                             point="held out" if p["held_out"] else "fitted",
                             measured_ms=p["measured_s"] * 1e3, mode=mode,
                             predicted_ms=p[f"{mode}_s"] * 1e3, error=p[f"{mode}_error"]))
    return pd.DataFrame(rows)


def curves_frame(tp: int = 1, max_tokens: int = 4096) -> pd.DataFrame:
    """Both modes' linear-layer time per layer at every token count 1..max_tokens: tokens, series,
    ms. Every token, so the calibrated curve's steps sit where the tiles end."""
    tokens = np.arange(1, max_tokens + 1)
    return pd.concat([pd.DataFrame({"tokens": tokens, "series": mode,
                                    "ms": linear_layer_seconds(mode, tp, tokens) * 1e3})
                      for mode in ("roofline", "calibrated")], ignore_index=True)


def time_vs_tokens(points: pd.DataFrame, curves: pd.DataFrame, tp: int = 1,
                   width: int = 640) -> alt.Chart:
    """Linear-layer time against tokens at one TP degree: the measurements (`validate_frame`) as
    dots, each mode's curve (`curves_frame`) as a line."""
    at = points[(points.tp == tp) & (points["mode"] == "roofline")]   # one row per measurement
    measured = pd.DataFrame({"tokens": at.tokens, "series": "measured", "ms": at.measured_ms,
                             "point": at.point})
    x = alt.X("tokens:Q", title="tokens in the forward pass")
    y = alt.Y("ms:Q", title="weight-GEMM time per layer (ms)")
    color = alt.Color("series:N", scale=SERIES, title=None, legend=alt.Legend(orient="top"))
    lines = alt.Chart(curves).mark_line(strokeWidth=2).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("series:N", title="model"), alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("ms:Q", title="ms per layer", format=".4g")])
    dots = alt.Chart(measured).mark_circle(size=18, opacity=0.8).encode(
        x=x, y=y, color=color, shape=alt.Shape("point:N", title=None),
        tooltip=[alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("ms:Q", title="measured ms per layer", format=".4g"),
                 alt.Tooltip("point:N", title="calibration")])
    return (lines + dots).properties(width=width, height=320,
                                     title=f"Measured vs predicted, A100-80GB, TP={tp}")


def parity(frame: pd.DataFrame, width: int = 420) -> alt.Chart:
    """Predicted against measured, log-log, every point and TP degree; on the diagonal is exact,
    below it is faster than the GPU really ran."""
    lo = float(min(frame.measured_ms.min(), frame.predicted_ms.min()))
    hi = float(max(frame.measured_ms.max(), frame.predicted_ms.max()))
    scale = alt.Scale(type="log", domain=[lo * 0.8, hi * 1.25])
    diagonal = alt.Chart(pd.DataFrame({"measured_ms": [lo, hi], "predicted_ms": [lo, hi]})).mark_line(
        color="#5B6170", strokeDash=[4, 3]).encode(
        x=alt.X("measured_ms:Q", scale=scale), y=alt.Y("predicted_ms:Q", scale=scale))
    points = alt.Chart(frame).mark_point(size=14, filled=True, opacity=0.5).encode(
        x=alt.X("measured_ms:Q", scale=scale, title="measured (ms per layer)"),
        y=alt.Y("predicted_ms:Q", scale=scale, title="predicted (ms per layer)"),
        color=alt.Color("mode:N", scale=MODES, title=None, legend=alt.Legend(orient="top")),
        shape=alt.Shape("point:N", title=None),
        tooltip=["mode:N", "tp:Q", alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("measured_ms:Q", format=".4g"), alt.Tooltip("predicted_ms:Q", format=".4g"),
                 alt.Tooltip("error:Q", format="+.1%"), "point:N"])
    return (diagonal + points).properties(width=width, height=width,
                                          title="Predicted vs measured (dashed: exact)")


def error_by_tokens(frame: pd.DataFrame, target: float = 0.15, width: int = 640) -> alt.Chart:
    """Error (predicted / measured - 1) against tokens, one panel per mode, coloured by TP; the
    grey band is +-`target`."""
    band = alt.Chart(pd.DataFrame({"lo": [-target], "hi": [target]})).mark_rect(
        color="#E6E8EE", opacity=0.7).encode(y="lo:Q", y2="hi:Q")
    panels = []
    for mode in ("roofline", "calibrated"):
        points = alt.Chart(frame[frame["mode"] == mode]).mark_circle(size=14, opacity=0.6).encode(
            x=alt.X("tokens:Q", title="tokens in the forward pass"),
            y=alt.Y("error:Q", title="predicted / measured - 1", axis=alt.Axis(format="%")),
            color=alt.Color("tp:N", title="TP", scale=TPS),
            tooltip=["mode:N", "tp:Q", alt.Tooltip("tokens:Q", format=","),
                     alt.Tooltip("error:Q", format="+.1%"), "point:N"])
        panels.append(alt.layer(band, points).properties(width=width, height=160, title=mode))
    return alt.vconcat(*panels)


def factors_frame(cost: IterationCost) -> pd.DataFrame:
    """A calibrated iteration's factors as a waterfall: each step's start and end in ms from the
    roofline time (without overhead) up to the calibrated time."""
    start = (cost.time_s - sum(f.added_s for f in cost.factors)) * 1e3
    rows = [dict(step="roofline (ideal)", start_ms=0.0, end_ms=start, added_ms=start,
                 why="max(FLOPs / peak, bytes / bandwidth) over the whole iteration, plus the "
                     "all-reduces at full link bandwidth with TP")]
    for f in cost.factors:
        rows.append(dict(step=f.name, start_ms=start, end_ms=start + f.added_s * 1e3,
                         added_ms=f.added_s * 1e3, why=f.why))
        start += f.added_s * 1e3
    return pd.DataFrame(rows)


def factors_waterfall(frame: pd.DataFrame, width: int = 640) -> alt.Chart:
    """Why a point moved: the roofline bar, then each factor's added time stacked on it."""
    order = list(frame.step)
    return alt.Chart(frame).mark_bar().encode(
        y=alt.Y("step:N", sort=order, title=None),
        x=alt.X("start_ms:Q", title="time (ms)"), x2="end_ms:Q",
        color=alt.condition(alt.datum.step == order[0], alt.value(ROOFLINE), alt.value(CALIBRATED)),
        tooltip=["step:N", alt.Tooltip("added_ms:Q", title="adds (ms)", format=".4g"), "why:N"],
    ).properties(width=width, height=28 * len(order),
                 title="From the roofline to the calibrated time")
