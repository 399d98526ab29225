"""A chart with its data kept beside it: the spec for any renderer, and the downloads.

Builders put named data (`alt.Data(name=...)`) in their marks and hand the frames here: Altair then
never copies thousands of rows while it composes layers and panels (that copying cost more than
everything else on a page), and the same frames are what the CSV / JSON downloads contain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import altair as alt
import pandas as pd

from .theme import Look

VEGA_PADDING = 5   # Vega-Lite's own padding around a chart, px


@dataclass(frozen=True, eq=False)
class Figure:
    """`chart` draws named datasets (`data`), takes top-level parameters (`params`, name ->
    initial value) and wears `look`; all three join the chart only in `spec()`, for the same
    reason as the data: Altair deep-copies a chart at every composition step."""
    chart: alt.TopLevelMixin
    look: Look
    data: dict[str, pd.DataFrame] = field(default_factory=dict)
    params: dict[str, float] = field(default_factory=dict)
    chart_dict: dict | None = None   # chart.to_dict(), when the builder keeps it (a cached chart)
    caption: tuple[str, ...] = ()    # lines above the figure (an export's scenario), if any
    margin_right: int = 0            # px added on the right (export.fitted: an exact width)

    def captioned(self, *lines: str) -> Figure:
        return replace(self, caption=lines)

    def spec(self, **values) -> dict:
        """The self-contained Vega-Lite spec; `values` override parameter values (e.g. t=120.0
        draws the timeline at 120 ms)."""
        spec = dict(self.chart_dict) if self.chart_dict is not None else \
            self.chart.to_dict(validate=False)   # a copy: only its top-level keys are set below
        spec["datasets"] = {name: _records(frame) for name, frame in self.data.items()}
        # after the chart's own (a selection in a concat is hoisted to the top level)
        spec["params"] = [*spec.get("params", []),
                          *({"name": name, "value": values.get(name, value)}
                            for name, value in self.params.items())]
        config = self.look.config()
        # "pad": the plot keeps its size and legends and titles add to it (Streamlit would
        # otherwise fit everything, legends included, into the plot's own height).
        spec["autosize"] = {"type": "pad"}
        spec["background"] = config.pop("background")
        spec["config"] = config
        if self.caption:   # plain text: Vega draws it as it is, never as markup
            size = self.look.caption_size
            spec["title"] = {"text": list(self.caption), "anchor": "start", "fontWeight": "normal",
                             "fontSize": size, "lineHeight": round(size * 1.3),
                             "color": self.look.ink, "offset": size}
        edge = self.look.edge_px if self.caption else VEGA_PADDING
        if self.caption or self.margin_right:
            spec["padding"] = {"left": edge, "top": edge, "bottom": edge,
                               "right": edge + self.margin_right}
        return spec

    def json(self) -> str:
        return json.dumps({name: _records(frame) for name, frame in self.data.items()}, indent=1)


def _records(frame: pd.DataFrame) -> list[dict]:
    """JSON-safe rows (NaN becomes null: JSON has no NaN), via pandas' fast writer."""
    return json.loads(frame.to_json(orient="records", double_precision=10))


def stacked(*figures: Figure) -> Figure:
    """Figures one above the other in one spec (their dataset names must differ); each keeps
    its own scales and legends."""
    data, params = {}, {}
    for figure in figures:
        data.update(figure.data)
        params.update(figure.params)
    chart = alt.vconcat(*(f.chart for f in figures), resolve=alt.Resolve(
        scale=alt.ScaleResolveMap(color="independent", shape="independent",
                                  strokeDash="independent")))
    return Figure(chart, figures[0].look, data, params)


# --- a whole run on the player's clock (charts.player): Disaggregation's lanes, Pipeline's stages
CLOCK = "t"   # the player's clock, a top-level param of the figure
NOT_YET = 0.15   # the opacity of what the player's clock has not reached


def by_clock(field: str, begun: float = 1.0, not_yet: float = NOT_YET) -> alt.ValueChannelMixin:
    """An opacity by the clock: `begun` once `datum[field]` (s) has come, `not_yet` before."""
    return alt.condition(f"datum.{field} <= {CLOCK}", alt.value(begun), alt.value(not_yet))


def clock_rule(look: Look, end: float) -> alt.Chart:
    """A teal rule at the clock, transparent at `end` (the run drawn whole: the figure as opened,
    and its downloads, show no line at their right edge). Hidden by opacity, not filtered out: an
    empty layer gives the shared x scale an infinite extent, which Vega warns about."""
    return (alt.Chart(alt.Data(values=[{}])).transform_calculate(now=CLOCK)
            .mark_rule(color=look.new_request, strokeWidth=2)
            .encode(x="now:Q", opacity=alt.condition(f"{CLOCK} < {end!r}", alt.value(1.0),
                                                     alt.value(0.0))))
