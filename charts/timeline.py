"""The side-by-side timeline: per lane, one bar per iteration (its decode and prefill shares) and
the token streams under it, all on one time axis.

The whole figure is ONE Vega-Lite spec driven by a top-level parameter `t` (seconds, like `sim`;
the axes are in ms): bars and ticks after `t` are faded, the iteration running at `t` is drawn up
to `t`, and a playhead marks it. A static chart sets `t` to the end of the run; a player animates `t` in the browser.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from .figure import Figure
from .frames import NEW_REQUEST, LaneFrames
from .theme import NEW_REQUEST as NEW_REQUEST_INK
from .theme import PREFILL, Look

CLOCK = "t"
NOW_MS = f"({CLOCK} * 1000)"   # the clock in the data's unit
GHOST_OPACITY = 0.13
PARTS = {"decode_tokens": "decode tokens", "prefill_tokens": "prefill tokens"}
X_TITLE = "time since the new prompt arrived (ms)"
OTHER = ("other (all-reduce, overhead, kernel floors and ridge) = duration − max(compute, memory) "
         "(ms)")


def _x(t_max: float, look: Look, *, axis: bool, field: str = "start_ms") -> alt.X:
    scale = alt.Scale(domain=[0, t_max * 1000], nice=False, zero=True)
    if not axis:
        return alt.X(f"{field}:Q", scale=scale,
                     axis=alt.Axis(labels=False, ticks=False, title=None, domain=False))
    return alt.X(f"{field}:Q", scale=scale, title=X_TITLE, axis=alt.Axis(format=",.0f"))


def _playhead(t_max: float, look: Look) -> alt.Chart:
    """A rule at the clock; hidden when the clock is at the end (the static chart)."""
    return (alt.Chart(alt.Data(values=[{}])).mark_rule(color=look.ink, strokeWidth=1.5)
            .transform_calculate(clock_ms=NOW_MS).transform_filter(f"{CLOCK} < {t_max!r}")
            .encode(x=alt.X("clock_ms:Q")))


def lane_bars(lane: LaneFrames, look: Look, *, width: int, t_max: float) -> alt.LayerChart:
    """Each iteration a bar from its start to its end, split by its decode and prefill tokens.

    Its tooltip traces the duration: compute, memory, and `OTHER` = duration − max(compute,
    memory), computed here from the bar's own fields (the Trace keeps no per-iteration all-reduce
    or overhead). For one iteration that is the time beyond the roofline's max: the all-reduces
    (tp > 1), the per-iteration overhead and, calibrated, the kernels run one after another
    through the soft ridge with their floors; 0 on the plain roofline on one GPU. A bar of merged
    iterations sums their compute and memory, so there it also holds whatever the larger sum
    misses where the bound changes inside the bin."""
    base = (alt.Chart(alt.Data(name=f"{lane.key}_iterations"))
            .transform_fold(list(PARTS), as_=["part_key", "tokens"])
            .transform_calculate(
                part=f"datum.part_key == 'decode_tokens' ? '{PARTS['decode_tokens']}' : "
                     f"'{PARTS['prefill_tokens']}'",
                y0="datum.part_key == 'decode_tokens' ? 0 : datum.decode_share",
                y1="datum.part_key == 'decode_tokens' ? datum.decode_share : 1",
                # max(0, ...): rounding leaves -1e-13 where the duration is exactly the max
                other_ms="max(0, datum.duration_ms - max(datum.compute_ms, datum.memory_ms))"))
    color = alt.Color("part:N", title=None,
                      scale=alt.Scale(domain=list(PARTS.values()), range=[look.decode, PREFILL]),
                      legend=alt.Legend(orient="top", direction="horizontal", symbolOpacity=1))
    y = alt.Y("y0:Q", scale=alt.Scale(domain=[0, 1]), title="token share",
              axis=alt.Axis(values=[0, 1], format="%"))
    tooltip = [alt.Tooltip("iteration:Q", title="first iteration", format=","),
               alt.Tooltip("iterations:Q", title="iterations in this bar", format=","),
               alt.Tooltip("start_ms:Q", title="start (ms)", format=",.2f"),
               alt.Tooltip("duration_ms:Q", title="duration (ms)", format=",.3f"),
               alt.Tooltip("decode_tokens:Q", title="decode tokens", format=","),
               alt.Tooltip("prefill_tokens:Q", title="prefill tokens", format=","),
               alt.Tooltip("compute_ms:Q", title="compute time (ms)", format=",.3f"),
               alt.Tooltip("memory_ms:Q", title="memory time (ms)", format=",.3f"),
               alt.Tooltip("other_ms:Q", title=OTHER, format=",.3f"),
               alt.Tooltip("bound:N", title="bound (the larger time)")]
    ghost = base.mark_rect(opacity=GHOST_OPACITY, clip=True).encode(
        x=_x(t_max, look, axis=False), x2="end_ms:Q", y=y, y2="y1:Q", color=color)
    live = (base.transform_filter(f"datum.start_ms <= {NOW_MS}")
            .transform_calculate(shown_end=f"min(datum.end_ms, {NOW_MS})")
            .mark_rect(stroke=look.background, strokeWidth=0.5, clip=True)
            .encode(x=_x(t_max, look, axis=False), x2="shown_end:Q", y=y, y2="y1:Q",
                    color=color, tooltip=tooltip))
    return alt.layer(ghost, live, _playhead(t_max, look), width=width,
                     height=110 if look.presenter else 80,
                     title=alt.TitleParams(lane.title, subtitle=lane.subtitle))


def lane_streams(lane: LaneFrames, look: Look, *, width: int, t_max: float,
                 title: alt.TitleParams | None = None) -> alt.LayerChart:
    """One tick per emitted token for a few decoders and the new request; brackets on the
    largest decoder gap and on the new request's time to first token."""
    row = 30 if look.presenter else 20
    names = list(dict.fromkeys(lane.streams.stream)) or [NEW_REQUEST]
    y = alt.Y("stream:N", sort=names, title=None, axis=alt.Axis(ticks=False, domain=False))
    color = alt.Color("role:N", legend=None, scale=alt.Scale(
        domain=["decoder", NEW_REQUEST], range=[look.decode, NEW_REQUEST_INK]))
    ticks = alt.Chart(alt.Data(name=f"{lane.key}_streams"))
    tooltip = [alt.Tooltip("stream:N"), alt.Tooltip("token:Q", format=","),
               alt.Tooltip("time_ms:Q", title="emitted at (ms)", format=",.2f"),
               alt.Tooltip("gap_ms:Q", title="gap since previous token (ms)", format=",.3f")]
    x = _x(t_max, look, axis=True, field="time_ms")
    ghost = ticks.mark_tick(opacity=GHOST_OPACITY, thickness=1.2, size=row * 0.7).encode(
        x=x, y=y, color=color)
    live = (ticks.transform_filter(f"datum.time_ms <= {NOW_MS}")
            .mark_tick(thickness=1.5, size=row * 0.7)
            .encode(x=x, y=y, color=color, tooltip=tooltip))
    callouts = alt.Chart(alt.Data(name=f"{lane.key}_callouts"))
    ended = f"datum.end_ms <= {NOW_MS}"
    bracket = callouts.transform_filter(ended).mark_rule(
        color=look.ink, strokeWidth=2, strokeDash=[4, 2]).encode(x=alt.X("start_ms:Q"),
                                                                 x2="end_ms:Q", y=y)
    # the label is always there, invisible until its gap has ended: a label that appeared would
    # reach above the lane and push the charts below it down while the clock runs
    label = (callouts.mark_text(align="left", baseline="bottom", dx=2, dy=-row * 0.3,
                                color=look.ink, fontSize=look.font_size, fontWeight="bold")
             .encode(x=alt.X("start_ms:Q"), y=y, text="label:N",
                     opacity=alt.condition(ended, alt.value(1), alt.value(0))))
    return alt.layer(ghost, live, bracket, label, _playhead(t_max, look), width=width,
                     height=row * len(names), **({"title": title} if title else {}))


def _lane_data(lanes: Sequence[LaneFrames]) -> dict[str, pd.DataFrame]:
    data = {}
    for lane in lanes:
        data.update({f"{lane.key}_iterations": lane.iterations, f"{lane.key}_streams": lane.streams,
                     f"{lane.key}_callouts": lane.callouts})
    return data


def side_by_side(lanes: Sequence[LaneFrames], look: Look, *, t_max: float,
                 width: int = 900) -> Figure:
    """Every lane's bars over its streams, one shared time axis, one clock `t` running from 0 to
    `t_max` seconds."""
    t_max = float(t_max)
    charts = []
    for lane in lanes:
        charts += [lane_bars(lane, look, width=width, t_max=t_max),
                   lane_streams(lane, look, width=width, t_max=t_max)]
    return _clocked(charts, look, t_max, _lane_data(lanes))


def streams_only(lanes: Sequence[LaneFrames], look: Look, *, t_max: float,
                 width: int = 900) -> Figure:
    """Just the token streams of every lane (the `streams` export view)."""
    t_max = float(t_max)
    charts = [lane_streams(lane, look, width=width, t_max=t_max,
                           title=alt.TitleParams(lane.title, subtitle=lane.subtitle))
              for lane in lanes]
    data = {k: v for k, v in _lane_data(lanes).items() if not k.endswith("_iterations")}
    return _clocked(charts, look, t_max, data)


def _clocked(charts: list, look: Look, t_max: float, data: dict) -> Figure:
    chart = alt.vconcat(*charts, resolve=alt.Resolve(scale=alt.ScaleResolveMap(x="shared",
                                                                             color="independent")))
    return Figure(chart, look, data, {CLOCK: t_max})
