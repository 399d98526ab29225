"""Chunking is exact, as a picture: the attention scores a prefill computes, query positions down
and key positions across, the causal triangle (a query sees the keys at or before its own
position). In one pass the whole triangle is one computation; in chunks it is cut into row bands,
one pass each: a chunk's queries against the cached keys of the tokens before it (a rectangle) and
against its own keys (a small triangle). The same scores either way, in another order.

Every mark is prompt work, so all of it wears the prefill colour (charts/theme.py): the chunk's
own scores in full, those against the cache lighter, and the chunks told apart by a line in the
background colour and alternating depth.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from .figure import Figure
from .theme import Look

ONE_PASS, CHUNKED = "one pass", "in chunks"
OWN, CACHED = "its own keys", "the cached keys before it"
# The chunks' labels are written beside their bands while there is room for them.
MOST_LABELS = 16
MIN_BAND_PX = 4


def bands_frame(prompt: int, chunks: list[tuple[int, int]]) -> pd.DataFrame:
    """One row per piece of scores: its computation (one pass, in chunks), its chunk (1, 2, ...),
    what it attends to (OWN or CACHED) and its box in positions: queries [first_query,
    last_query + 1), keys [first_key, last_key + 1); an OWN piece is the triangle of that box at
    or below the diagonal. `chunks`: each chunk's (start, end)."""
    rows = [dict(computation=ONE_PASS, chunk=1, attends_to=OWN, first_query=0, end_query=prompt,
                 first_key=0, end_key=prompt)]
    for n, (start, end) in enumerate(chunks, 1):
        if start:
            rows.append(dict(computation=CHUNKED, chunk=n, attends_to=CACHED, first_query=start,
                             end_query=end, first_key=0, end_key=start))
        rows.append(dict(computation=CHUNKED, chunk=n, attends_to=OWN, first_query=start,
                         end_query=end, first_key=start, end_key=end))
    frame = pd.DataFrame(rows)
    frame["scores"] = [(q1 - q0) * (k1 - k0) if a == CACHED else (q1 - q0) * (q1 - q0 + 1) // 2
                       for a, q0, q1, k0, k1 in zip(frame.attends_to, frame.first_query,
                                                    frame.end_query, frame.first_key, frame.end_key)]
    return frame


def triangle_points(bands: pd.DataFrame) -> pd.DataFrame:
    """The OWN pieces as areas: across each piece's keys, from the diagonal (a query sees its own
    key) down to the band's last query."""
    own = bands[bands.attends_to == OWN]
    start = own.assign(key=own.first_key, from_query=own.first_query)
    end = own.assign(key=own.end_key, from_query=own.end_query)
    points = pd.concat([start, end]).sort_values(["computation", "chunk", "key"], kind="stable")
    return points[["computation", "chunk", "attends_to", "key", "from_query", "end_query"]]


def score_map(bands: pd.DataFrame, look: Look, *, side: int = 300) -> Figure:
    """The two computations side by side, each a `side`-pixel square: one pass, then in chunks."""
    prompt = int(bands.end_query.max())
    first = bands[(bands.computation == CHUNKED) & (bands.chunk == 1)].iloc[0]
    # a line between two bands while a band is a few pixels high; thinner ones would be all line
    gap = 1 if side * (first.end_query - first.first_query) / prompt >= MIN_BAND_PX else 0
    inks = {OWN: look.prefill, CACHED: look.prefill}
    depth = {OWN: 1.0, CACHED: 0.75 if look.contrast else 0.4}   # contrast: 3:1 to the page
    scale_x = alt.Scale(domain=[0, prompt], nice=False, zero=True)
    scale_y = alt.Scale(domain=[0, prompt], nice=False, zero=True, reverse=True)
    axis = dict(format=",d", tickCount=4, labelOverlap=True, grid=False)
    colour = alt.Color("attends_to:N", title="a chunk's queries against",
                       scale=alt.Scale(domain=list(inks), range=list(inks.values())),
                       legend=alt.Legend(orient="top", direction="horizontal", titleLimit=0,
                                         labelLimit=0))
    opacity = alt.Opacity("attends_to:N", scale=alt.Scale(domain=list(depth),
                                                          range=list(depth.values())),
                          legend=None)
    tooltip = [alt.Tooltip("chunk:Q", title="chunk"), alt.Tooltip("attends_to:N", title="against"),
               alt.Tooltip("first_query:Q", title="first query", format=","),
               alt.Tooltip("end_query:Q", title="after the last query", format=","),
               alt.Tooltip("scores:Q", title="scores", format=",")]

    def panel(computation: str) -> alt.LayerChart:
        where = alt.datum.computation == computation
        boxes = alt.Chart(alt.Data(name="bands")).transform_filter(
            where & (alt.datum.attends_to == CACHED)).mark_rect(
            stroke=look.background, strokeWidth=gap).encode(
            x=alt.X("first_key:Q", title="key position (tokens)", scale=scale_x,
                    axis=alt.Axis(**axis)),
            x2="end_key:Q",
            y=alt.Y("first_query:Q", title="query position (tokens)", scale=scale_y,
                    axis=alt.Axis(**axis)),
            y2="end_query:Q", color=colour, opacity=opacity, tooltip=tooltip)
        triangles = alt.Chart(alt.Data(name="triangles")).transform_filter(where).mark_area(
            stroke=look.background, strokeWidth=gap, interpolate="linear").encode(
            x=alt.X("key:Q", scale=scale_x), y=alt.Y("from_query:Q", scale=scale_y, stack=None),
            y2="end_query:Q", detail="chunk:N", color=colour, opacity=opacity)
        layers = [boxes, triangles]
        count = int(bands[bands.computation == computation].chunk.max())
        if computation == CHUNKED and count <= MOST_LABELS:
            layers.append(alt.Chart(alt.Data(name="bands")).transform_filter(
                where & (alt.datum.attends_to == OWN)).transform_calculate(
                middle="(datum.first_query + datum.end_query) / 2",
                label="'chunk ' + datum.chunk").mark_text(
                align="left", dx=4, fontSize=look.font_size * 0.9, color=look.ink).encode(
                x=alt.X("end_key:Q", scale=scale_x), y=alt.Y("middle:Q", scale=scale_y),
                text="label:N"))
        passes = "1 pass" if count == 1 else f"{count:,} passes"
        return alt.layer(*layers, width=side, height=side,
                         title=alt.Title(f"{computation}: {passes}"))

    chart = alt.hconcat(panel(ONE_PASS), panel(CHUNKED), spacing=look.font_size * 5)
    return Figure(chart, look, {"bands": bands, "triangles": triangle_points(bands)})
