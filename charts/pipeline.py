"""The Pipeline page's figure: every stage of every schedule on one time axis, a bar per
micro-batch (coloured by what it carries, the lab's decode and prefill colours) and each
stage's idle time, its bubbles, shaded between them; drag to pan, scroll to zoom, every row
follows; played by the player's clock (charts.player), what has not begun by then faint.

Pure: data in, Altair out. Micro-batches of one kind that follow each other on a stage closer
than `merge_s` (about a pixel) are drawn as one bar, their count in its tooltip; the gaps inside
it would vanish at that width, so the bar is as opaque as its micro-batches keep the stage busy
over its span: a stage idle a third of the time inside a bar draws it at two thirds' opacity,
and what a learner sees agrees with the bubble the words sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from sim.serving.pipeline import StageSchedule

from .figure import CLOCK, NOT_YET, Figure, by_clock, clock_rule
from .theme import Look
from .traffic import KINDS

BUBBLE = "bubble (stage idle)"
DRAWN_PER_RUN = 1500   # about a pixel at the figure's width: gaps shorter than span / this merge


def kinds_of(schedule: StageSchedule) -> np.ndarray:
    """Each micro-batch's kind, as the traffic timeline names them."""
    decode, prefill = schedule.decode_tokens > 0, schedule.prefill_tokens > 0
    return np.where(decode & prefill, KINDS[1], np.where(prefill, KINDS[2], KINDS[0]))


def working_spans(schedule: StageSchedule) -> list[tuple[float, float]]:
    """The spans while at least one micro-batch is in the pipeline, merged, in time order."""
    spans: list[list[float]] = []
    order = np.argsort(schedule.start_s[:, 0], kind="stable")
    for start, end in zip(schedule.start_s[order, 0], schedule.end_s[order, -1]):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([float(start), float(end)])
    return [(a, b) for a, b in spans]


def idle_intervals(schedule: StageSchedule, stage: int) -> list[tuple[float, float]]:
    """Where `stage` waits while micro-batches are in the pipeline: the working spans less its
    busy intervals (micro-batches keep their order through a stage, so these are sorted)."""
    starts, ends = schedule.start_s[:, stage], schedule.end_s[:, stage]
    idle, j, n = [], 0, len(starts)
    for a, b in working_spans(schedule):
        at = a
        while j < n and starts[j] < b:
            if starts[j] > at:
                idle.append((at, float(starts[j])))
            at = max(at, float(ends[j]))
            j += 1
        if at < b:
            idle.append((at, b))
    return idle


@dataclass(frozen=True, eq=False)
class StageFrames:
    bars: pd.DataFrame      # per drawn bar: run, stage, row, start_s, end_s, kind, micro-batches...
    bubbles: pd.DataFrame   # per drawn idle gap: run, stage, row, start_s, end_s, idle_ms, sums
    rows: tuple[str, ...]   # top to bottom


def row_name(run: str, stage: int) -> str:
    return f"{run} · stage {stage + 1}"


def stage_frames(schedules: Mapping[str, StageSchedule],
                 sums: Mapping[str, tuple[str, str]]) -> StageFrames:
    """The bars and bubbles of each run (`schedules`, in the order drawn), with each run's bubble
    arithmetic (`sums`: its bubble and its fraction, in words) on every one of its bubbles."""
    bars, bubbles, rows = [], [], []
    for run, schedule in schedules.items():
        kinds = kinds_of(schedule)
        spans = working_spans(schedule)
        merge_s = (spans[-1][1] - spans[0][0]) / DRAWN_PER_RUN if spans else 0.0
        for stage in range(schedule.stages):
            row = row_name(run, stage)
            rows.append(row)
            bars += _merged_bars(schedule, stage, kinds, merge_s, run, row)
            idle = idle_intervals(schedule, stage)
            stage_idle_s = sum(b - a for a, b in idle)
            bubbles += [{"schedule": run, "stage": stage + 1, "row": row, "start_s": a, "end_s": b,
                         "idle_ms": (b - a) * 1e3, "stage_idle_s": stage_idle_s,
                         "idle_arithmetic": sums[run][0], "fraction_arithmetic": sums[run][1], "kind": BUBBLE}
                        for a, b in idle if b - a >= merge_s]
    columns = ["schedule", "stage", "row", "start_s", "end_s", "kind"]
    return StageFrames(pd.DataFrame(bars, columns=[*columns, "first", "last", "micro_batches",
                                                   "busy_ms", "idle_ms", "busy_share",
                                                   "decode_tokens", "prefill_tokens"]),
                       pd.DataFrame(bubbles, columns=[*columns, "idle_ms", "stage_idle_s",
                                                      "idle_arithmetic", "fraction_arithmetic"]),
                       tuple(rows))


def _merged_bars(schedule: StageSchedule, stage: int, kinds: np.ndarray, merge_s: float,
                 run: str, row: str) -> list[dict]:
    """A stage's micro-batches as bars, runs of one kind closer than `merge_s` as one, with the
    idle time inside each bar and the share of its span the stage is busy."""
    starts, ends = schedule.start_s[:, stage], schedule.end_s[:, stage]
    out: list[dict] = []
    for m in range(schedule.micro_batches):
        last = out[-1] if out else None
        if last and last["kind"] == kinds[m] and starts[m] - last["end_s"] < merge_s:
            last.update(end_s=float(ends[m]), last=m + 1, micro_batches=last["micro_batches"] + 1,
                        busy_ms=last["busy_ms"] + (ends[m] - starts[m]) * 1e3,
                        decode_tokens=last["decode_tokens"] + int(schedule.decode_tokens[m]),
                        prefill_tokens=last["prefill_tokens"] + int(schedule.prefill_tokens[m]))
            continue
        out.append({"schedule": run, "stage": stage + 1, "row": row, "start_s": float(starts[m]),
                    "end_s": float(ends[m]), "kind": str(kinds[m]), "first": m + 1, "last": m + 1,
                    "micro_batches": 1, "busy_ms": (ends[m] - starts[m]) * 1e3,
                    "decode_tokens": int(schedule.decode_tokens[m]),
                    "prefill_tokens": int(schedule.prefill_tokens[m])})
    for bar in out:
        span_ms = (bar["end_s"] - bar["start_s"]) * 1e3
        bar["idle_ms"] = max(span_ms - bar["busy_ms"], 0.0)
        bar["busy_share"] = min(bar["busy_ms"] / span_ms, 1.0) if span_ms > 0 else 1.0
    return out


def stage_chart(frames: StageFrames, look: Look, *, width: int = 900) -> Figure:
    """A row per stage of each run, top to bottom as `frames.rows`; a bar per micro-batch from
    its start to its end on the stage (its send included), the stage's idle gaps shaded."""
    kinds = dict(zip((*KINDS, BUBBLE), (look.decode, look.muted, look.prefill, look.grid)))
    color = alt.Color("kind:N", title=None,
                      scale=alt.Scale(domain=list(kinds), range=list(kinds.values())),
                      legend=alt.Legend(orient="top", direction="horizontal", labelLimit=0,
                                        symbolStrokeColor=look.muted))
    y = alt.Y("row:N", sort=list(frames.rows), title=None,
              axis=alt.Axis(labelLimit=0, ticks=False, domain=False),
              scale=alt.Scale(paddingInner=0.25))
    zoom = alt.selection_interval(bind="scales", encodings=["x"], name="zoom")
    x = alt.X("start_s:Q", title="time (s)", axis=alt.Axis(format=",.3~f", grid=False))
    # by the player's clock: a micro-batch or an idle gap not begun yet is faint
    begun = by_clock("start_s")
    bubbles = (alt.Chart(alt.Data(name="bubbles"))
               .mark_rect(stroke=look.muted, strokeWidth=0.5)
               .encode(x=x, x2="end_s:Q", y=y, color=color, opacity=begun,
                       tooltip=[alt.Tooltip("row:N", title="idle on"),
                                alt.Tooltip("start_s:Q", title="from (s)", format=",.4f"),
                                alt.Tooltip("idle_ms:Q", title="this gap (ms)", format=",.3f"),
                                alt.Tooltip("stage_idle_s:Q", title="the stage idles in all (s)",
                                            format=",.4f"),
                                alt.Tooltip("idle_arithmetic:N",
                                            title="stage idle time = stages × working time − busy"),
                                alt.Tooltip("fraction_arithmetic:N",
                                            title="fraction = idle / (stages × working time)")]))
    # a bar standing for several micro-batches is as opaque as they keep the stage busy
    busy_share = alt.condition(f"datum.start_s <= {CLOCK}",
                               alt.Opacity("busy_share:Q", scale=None, legend=None),
                               alt.value(NOT_YET))
    bars = (alt.Chart(alt.Data(name="bars")).mark_rect()
            .encode(x=x, x2="end_s:Q", y=y, color=color, opacity=busy_share,
                    tooltip=[alt.Tooltip("row:N", title="on"),
                             alt.Tooltip("first:Q", title="micro-batch (first)", format=","),
                             alt.Tooltip("micro_batches:Q", title="micro-batches in this bar",
                                         format=","),
                             alt.Tooltip("start_s:Q", title="start (s)", format=",.4f"),
                             alt.Tooltip("busy_ms:Q", title="busy (ms, the send included)",
                                         format=",.3f"),
                             alt.Tooltip("idle_ms:Q", title="idle between them (ms)",
                                         format=",.3f"),
                             alt.Tooltip("busy_share:Q", title="busy share (the bar's opacity)",
                                         format=".1%"),
                             alt.Tooltip("decode_tokens:Q", title="decode tokens", format=","),
                             alt.Tooltip("prefill_tokens:Q", title="prefill tokens",
                                         format=",")])
            .add_params(zoom))
    height = (30 if look.presenter else 24) * (len(frames.rows) + 1)
    end = stages_end(frames)
    chart = alt.layer(bubbles, bars, clock_rule(look, end)).properties(width=width, height=height)
    return Figure(chart, look, {"bars": frames.bars, "bubbles": frames.bubbles},
                  params={CLOCK: end})


def stages_end(frames: StageFrames) -> float:
    """The last moment the rows draw: the latest micro-batch's end on any stage (s)."""
    return float(frames.bars.end_s.max()) if len(frames.bars) else 0.0
