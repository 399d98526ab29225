"""The Budget trade-off page's figure: p50 TTFT against p99 TBT over a sweep of token budgets, with
the SLO lines, the recommended budget, the engines' defaults and the two regimes marked."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from sim.studies.sweep import OVERHEAD_SHARE, EngineDefault, SweepPoint

from .figure import Figure
from .theme import SERIES, Look

# --- the budget frontier --------------------------------------------------------------------
REGIMES = {"overhead-dominated": "overhead-dominated: t(1 token) / t(budget) > "
                                 f"{OVERHEAD_SHARE:g}",
           "chunks": "chunking at work",
           "no split": "no split: budget ≥ longest prompt + decodes"}
LABEL_DY = (-9, 15)   # px: neighbouring budgets' labels sit above, then below, their dots


def frontier_frame(points: Sequence[SweepPoint], recommended: int | None,
                   defaults: Sequence[EngineDefault]) -> pd.DataFrame:
    """One row per swept budget: p50 TTFT, p99 TBT, the regime, and what marks it."""
    rows = []
    for p in points:
        engines = [d.engine for d in defaults if d.budget == p.budget]
        regime = ("overhead-dominated" if p.overhead_dominated else
                  "no split" if p.chunking_inactive else "chunks")
        label = f"{p.budget:,}" + (f" ({' & '.join(engines)} default)" if engines else "")
        rows.append(dict(budget=p.budget, ttft_p50_s=p.metrics.ttft_s.p50,
                         ttft_p99_s=p.metrics.ttft_s.p99, tbt_p50_ms=p.metrics.tbt_s.p50 * 1e3,
                         tbt_p99_ms=p.metrics.tbt_s.p99 * 1e3,
                         throughput=p.metrics.throughput_tokens_per_s,
                         median_delay_s=p.median_delay_s, fixed_share=p.fixed_share,
                         split_prompts=p.split_prompts, regime=REGIMES[regime],
                         recommended=p.budget == recommended, label=label,
                         label_dy=LABEL_DY[len(rows) % 2]))
    return pd.DataFrame(rows)


def _extent(values, target: float, log: bool) -> tuple[list[float], bool]:
    """An axis domain around `values`, stretched to `target` unless that would squash them (more
    than their own span beyond it); and whether the target is inside."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v) & ((v > 0) if log else True)]
    if not len(v):
        return [target / 2, target * 2], True
    lo, hi = float(v.min()), float(v.max())
    if log:
        span = max(hi / lo, 1.5)
        near = lo / span <= target <= hi * span
        lo, hi = (min(lo, target), max(hi, target)) if near else (lo, hi)
        return [lo / 1.25, hi * 1.25], near
    span = max(hi - lo, 0.1 * hi, 1e-9)
    near = lo - span <= target <= hi + span
    lo, hi = (min(lo, target), max(hi, target)) if near else (lo, hi)
    return [max(0.0, lo - 0.08 * span), hi + 0.08 * span], near


def frontier_chart(frame: pd.DataFrame, look: Look, *, ttft_slo_s: float, tbt_slo_ms: float,
                   width: int = 760) -> Figure:
    """p50 TTFT against p99 TBT, one point per budget in budget order; the SLO lines; the
    recommended budget ringed."""
    x_domain, tbt_shown = _extent(frame.tbt_p99_ms, tbt_slo_ms, log=True)
    y_domain, ttft_shown = _extent(frame.ttft_p50_s, ttft_slo_s, log=False)
    x = alt.X("tbt_p99_ms:Q", title="p99 time between tokens (ms)",
              scale=alt.Scale(type="log", domain=x_domain, nice=False),
              axis=alt.Axis(format=",.4~g"))
    y = alt.Y("ttft_p50_s:Q", title="p50 time to first token (s)",
              scale=alt.Scale(domain=y_domain, nice=False), axis=alt.Axis(format=",.3~g"))
    data = alt.Data(name="frontier")
    base = alt.Chart(data)
    inks = [SERIES["purple"], SERIES["violet"], SERIES["olive"]]
    tooltip = [alt.Tooltip("budget:Q", format=","),
               alt.Tooltip("ttft_p50_s:Q", title="p50 TTFT (s)", format=",.4f"),
               alt.Tooltip("ttft_p99_s:Q", title="p99 TTFT (s)", format=",.4f"),
               alt.Tooltip("tbt_p99_ms:Q", title="p99 TBT (ms)", format=",.4f"),
               alt.Tooltip("throughput:Q", title="throughput (tokens/s)", format=",.0f"),
               alt.Tooltip("fixed_share:Q", title="t(1 token) / t(budget)", format=".2f"),
               alt.Tooltip("split_prompts:Q", title="prompts split", format=","),
               alt.Tooltip("regime:N")]
    line = base.mark_line(color=look.muted, strokeWidth=1.5).encode(x=x, y=y, order="budget:Q")
    dots = base.mark_point(filled=True, size=140 if look.presenter else 90, opacity=1).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("regime:N", title=None, scale=alt.Scale(domain=list(REGIMES.values()),
                                                                range=inks),
                        legend=alt.Legend(orient="top", direction="vertical", labelLimit=0)))
    ring = base.transform_filter(alt.datum.recommended).mark_point(
        size=600 if look.presenter else 420, strokeWidth=2.5, color=look.ink).encode(x=x, y=y)
    # neighbours' labels alternate above and below their dots (a text's dy is one number per
    # mark, and yOffset needs a banded y: so one layer each way)
    labels = [base.transform_filter(alt.datum.label_dy == dy).mark_text(
        align="left", dx=9, dy=dy, color=look.ink, fontSize=look.font_size).encode(
        x=x, y=y, text="label:N") for dy in LABEL_DY]
    layers = []
    if tbt_shown:
        slo = alt.Chart(alt.Data(values=[{"tbt_p99_ms": tbt_slo_ms,
                                          "text": f"TPOT target {tbt_slo_ms:,.4g} ms"}]))
        layers += [slo.mark_rule(color=look.ink, strokeDash=[6, 3], strokeWidth=2).encode(x=x),
                   slo.mark_text(align="left", baseline="top", dx=4, y=4, color=look.ink,
                                 fontSize=look.font_size).encode(x=x, text="text:N")]
    if ttft_shown:
        slo = alt.Chart(alt.Data(values=[{"ttft_p50_s": ttft_slo_s,
                                          "text": f"TTFT target {ttft_slo_s:,.4g} s"}]))
        layers += [slo.mark_rule(color=look.ink, strokeDash=[2, 3], strokeWidth=1.5).encode(y=y),
                   slo.mark_text(align="right", baseline="bottom", dy=-3, x=width - 4,
                                 color=look.ink, fontSize=look.font_size).encode(y=y, text="text:N")]
    off = [f"{what} is off this scale" for what, shown in (
        (f"TPOT target {tbt_slo_ms:,.4g} ms", tbt_shown),
        (f"TTFT target {ttft_slo_s:,.4g} s", ttft_shown)) if not shown]
    chart = alt.layer(*layers, line, dots, ring, *labels,
                      width=width, height=420 if look.presenter else 340,
                      title=alt.TitleParams(
                          "The budget dial: first token against the gaps between tokens",
                          subtitle="each point one budget; the ring is the recommended one"
                                   + "".join(f"; {o}" for o in off)))
    return Figure(chart, look, {"frontier": frame})


