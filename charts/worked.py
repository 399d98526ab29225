"""The worked example's small pictures: bars drawn to scale, one row per quantity, each row in
pieces (a decode share and a chunk, or sixteen iterations), its total written at its end."""

from __future__ import annotations

import altair as alt
import pandas as pd

from .figure import Figure
from .theme import Look

COLUMNS = ["row", "start", "end", "part", "total"]


def inks(look: Look) -> dict[str, str]:
    """One colour per kind of piece, as in every other chart: decode blue, prefill orange; room
    left unused (free memory, a tile's empty rows) the grid's grey."""
    return {"decode": look.decode, "prefill": look.prefill, "weight read (memory)": look.memory_bound,
            "arithmetic (compute)": look.compute_bound, "weights": look.muted, "free": look.grid,
            "empty tile rows": look.grid}


def to_scale(frame: pd.DataFrame, look: Look, *, unit: str, width: int = 560) -> Figure:
    """`frame`: one row per piece (row, start, end, part, total); rows keep their order. Pieces of
    a row touch, split by a thin line in the background colour."""
    rows = list(dict.fromkeys(frame.row))
    colours = {part: ink for part, ink in inks(look).items() if part in set(frame.part)}
    y = alt.Y("row:N", sort=rows, title=None, axis=alt.Axis(ticks=False, domain=False,
                                                           labelLimit=260))
    x = alt.X("start:Q", title=unit, scale=alt.Scale(zero=True, nice=False),
              axis=alt.Axis(format=",.4~g", grid=False, labelOverlap="greedy", labelSeparation=6))
    bars = alt.Chart(alt.Data(name="pieces")).mark_bar(
        stroke=look.background, strokeWidth=1, height=look.font_size * 1.6).encode(
        x=x, x2="end:Q", y=y,
        color=alt.Color("part:N", title=None, scale=alt.Scale(domain=list(colours),
                                                              range=list(colours.values())),
                        legend=alt.Legend(orient="top", direction="horizontal", symbolOpacity=1)),
        tooltip=[alt.Tooltip("row:N", title="what"), alt.Tooltip("part:N"),
                 alt.Tooltip("start:Q", format=",.4~g"), alt.Tooltip("end:Q", format=",.4~g")])
    totals = (alt.Chart(alt.Data(name="pieces"))
              .transform_aggregate(end="max(end)", groupby=["row", "total"])
              .mark_text(align="left", dx=4, fontSize=look.font_size, fontWeight="bold",
                         color=look.ink)
              .encode(x="end:Q", y=y, text="total:N"))
    height = (look.font_size * 2.6) * len(rows)
    chart = alt.layer(bars, totals, width=width, height=height)
    return Figure(chart, look, {"pieces": frame[COLUMNS]})
