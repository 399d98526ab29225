"""The Long and short requests page's figure: mixed traffic (request classes) served at two
settings of one engine knob, one above the other on one time axis. Each setting has its
iterations (as on the Traffic page: a bar per iteration, as tall as it took, coloured by what it
ran) over a lane per request class, where each request's wait from its arrival to its first
scheduled iteration is a grey line and the times another class's prompt was being prefilled are
shaded in prefill orange: where a wait crosses the shading is its head-of-line wait
(`sim.serving.metrics.head_of_line_waits`), and a teal tick is its first token.

Pure: data in, Altair out. Frames are thinned for display only (metrics read every iteration).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from sim.serving.engine import Trace
from sim.serving.metrics import behind_another_class, request_times

from .figure import Figure
from .theme import Look
from .traffic import KINDS, TimelineFrames, timeline_frame

LANE_SLOTS = 6        # waits in one class's lane spread over this many rows, so they overlap less
BAND_PIXELS = 900     # shaded spans closer than makespan / this are drawn as one
WAITING = "waiting to be scheduled"
BEHIND = "another class's prompt in the iteration"
FIRST_TOKEN = "first token"


@dataclass(frozen=True, eq=False)
class ClassTimeline:
    iterations: TimelineFrames
    waits: pd.DataFrame    # a row per new request: setting, class, arrival_s, scheduled_s, first_s
    bands: pd.DataFrame    # setting, class, start_s, end_s: another class's prompt being prefilled
    settings: tuple[str, ...]
    classes: tuple[str, ...]


def _spans(start: np.ndarray, end: np.ndarray, join_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Intervals (sorted by start) with those less than `join_s` apart merged into one."""
    if not len(start):
        return start, end
    new = np.r_[True, start[1:] - np.maximum.accumulate(end)[:-1] > join_s]
    return start[new], np.maximum.reduceat(end, np.flatnonzero(new))


def class_timeline_frame(traces: Mapping[str, Trace], request_class: np.ndarray,
                         classes: tuple[str, ...], band_pixels: float = BAND_PIXELS) -> ClassTimeline:
    """The figure's frames for each setting's trace (`traces`, one workload's runs; `request_class`:
    each request's index into `classes`); shaded spans closer than makespan / `band_pixels` are
    joined."""
    request_class = np.asarray(request_class)
    waits, bands = [], []
    for setting, trace in traces.items():
        times = request_times(trace)
        new = np.flatnonzero(~trace.prefilled & ~np.isnan(times.queue_s))
        arrival = trace.arrival_s[new]
        waits.append(pd.DataFrame({
            "setting": setting, "class": np.asarray(classes)[request_class[new]],
            "request": new, "slot": new % LANE_SLOTS, "arrival_s": arrival,
            "scheduled_s": arrival + times.queue_s[new], "first_s": arrival + times.ttft_s[new]}))
        join = (float(trace.end_s[-1] - trace.start_s[0]) if trace.iterations else 0) / band_pixels
        for code, name in enumerate(classes):
            behind = np.flatnonzero(behind_another_class(trace, request_class, code))
            start, end = _spans(trace.start_s[behind], trace.end_s[behind], join)
            bands.append(pd.DataFrame({"setting": setting, "class": name, "start_s": start,
                                       "end_s": end}))
    return ClassTimeline(timeline_frame(traces), pd.concat(waits, ignore_index=True),
                         pd.concat(bands, ignore_index=True), tuple(traces), tuple(classes))


def class_timeline(frames: ClassTimeline, look: Look, *, width: int = 900) -> Figure:
    """Per setting, its iterations over its class lanes, every panel on one time axis."""
    bars = frames.iterations.bars
    end = float(max(bars.end_s.max(), frames.waits.first_s.max())) if len(bars) else 1.0
    time_scale = alt.Scale(domain=[0, end], nice=False)
    x = alt.X("start_s:Q", title="time (s)", scale=time_scale,
              axis=alt.Axis(format=",.3~f", grid=False))
    # the iterations' axis untitled: the class lanes' right under it says "time (s)"
    x_iterations = alt.X("start_s:Q", title=None, scale=time_scale,
                         axis=alt.Axis(format=",.3~f", grid=False))
    kinds = dict(zip(KINDS, (look.decode, look.muted, look.prefill)))
    marks = {BEHIND: look.prefill, WAITING: look.muted, FIRST_TOKEN: look.new_request}
    legend = alt.Legend(orient="top", direction="horizontal", labelLimit=0, symbolOpacity=1)

    def color(field: str, inks: dict[str, str], first: bool) -> alt.Color:
        """The panel's colours; their legend once, over the first setting's panel (the second
        setting's would repeat it, and a projector has no room for it)."""
        return alt.Color(field, title=None, legend=legend if first else None,
                         scale=alt.Scale(domain=list(inks), range=list(inks.values())))
    tallest = float(bars.longest_ms.max()) if len(bars) else 1.0
    lane_px = 34 if look.presenter else 30   # two settings of two classes within 1280x720
    y_class = alt.Y("class:N", title=None, sort=list(frames.classes))
    panels = []
    for index, setting in enumerate(frames.settings):
        kind_color, mark_color = color("kind:N", kinds, not index), color("mark:N", marks, not index)
        iterations = (alt.Chart(alt.Data(name="iterations"))
                      .transform_filter(alt.datum.policy == setting)
                      .mark_rect(clip=True)
                      .encode(x=x_iterations, x2="end_s:Q",
                              y=alt.Y("longest_ms:Q", title="iteration (ms)",
                                      scale=alt.Scale(domain=[0, tallest], nice=False)), y2=alt.datum(0),
                              color=kind_color,
                              tooltip=[alt.Tooltip("start_s:Q", title="start (s)", format=",.4f"),
                                       alt.Tooltip("longest_ms:Q", title="longest iteration (ms)",
                                                   format=",.3f"),
                                       alt.Tooltip("decode_tokens:Q", title="decode tokens",
                                                   format=","),
                                       alt.Tooltip("prefill_tokens:Q", title="prefill tokens",
                                                   format=",")])
                      .properties(width=width, height=56 if look.presenter else 60,
                                  title=alt.TitleParams(setting, subtitle="every iteration; "
                                                        "below, each class's requests")))
        lane = alt.Chart(alt.Data(name="waits")).transform_filter(alt.datum.setting == setting)
        band = (alt.Chart(alt.Data(name="bands")).transform_filter(alt.datum.setting == setting)
                .transform_calculate(mark=json.dumps(BEHIND))
                .mark_rect(opacity=0.35)
                .encode(x=x, x2="end_s:Q", y=y_class, color=mark_color,
                        tooltip=[alt.Tooltip("class:N", title="lane"),
                                 alt.Tooltip("start_s:Q", title="from (s)", format=",.4f"),
                                 alt.Tooltip("end_s:Q", title="to (s)", format=",.4f")]))
        tips = [alt.Tooltip("class:N"), alt.Tooltip("request:Q"),
                alt.Tooltip("arrival_s:Q", title="arrival (s)", format=",.4f"),
                alt.Tooltip("scheduled_s:Q", title="first scheduled (s)", format=",.4f"),
                alt.Tooltip("first_s:Q", title="first token (s)", format=",.4f")]
        wait = (lane.transform_calculate(mark=json.dumps(WAITING)).mark_rule(strokeWidth=2)
                .encode(x=alt.X("arrival_s:Q", title="time (s)", scale=time_scale), x2="scheduled_s:Q", y=y_class,
                        yOffset=alt.YOffset("slot:O"), color=mark_color, tooltip=tips))
        first = (lane.transform_calculate(mark=json.dumps(FIRST_TOKEN))
                 .mark_tick(thickness=1, size=lane_px / LANE_SLOTS)
                 .encode(x=alt.X("first_s:Q", title="time (s)", scale=time_scale), y=y_class,
                         yOffset=alt.YOffset("slot:O"), color=mark_color, tooltip=tips))
        lanes = alt.layer(band, wait, first).properties(
            width=width, height=lane_px * len(frames.classes))
        panels.append(alt.vconcat(iterations, lanes, spacing=2).resolve_scale(
            color="independent", y="independent"))
    chart = alt.vconcat(*panels, spacing=14).resolve_scale(x="shared", y="independent",
                                                           color="independent")
    return Figure(chart, look, {"iterations": frames.iterations.bars, "waits": frames.waits,
                                "bands": frames.bands})
