"""The Disaggregation page's figures: the two pools' lanes with each KV hand-off drawn between
them, above the same workload's colocated lanes on one time axis (drag to zoom, shared by every
lane); and goodput's search, SLO attainment against the rate for both setups.

Pure: data in, Altair out. Iterations are thinned for display as on the Traffic page (a bar per
time bin, as tall as its longest iteration); every hand-off is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from sim.presets.links import Link
from sim.serving.disaggregated import DisaggregatedTrace
from sim.serving.trace import Trace
from sim.studies.capacity import GoodputComparison
from sim.units import fmt_bytes, fmt_seconds

from .figure import CLOCK, Figure, by_clock, clock_rule
from .theme import Look
from .traffic import KINDS, timeline_frame

LANE_FILL = 0.65      # of a lane's height, the tallest iteration's bar; the rest is room for hand-offs
HANDOFF = "KV hand-off (prefill done → KV arrived)"
# on a prefill-only GPU no decode waits for a prompt: its own kind, in the prefill colour
PREFILL_GPU = "prefill only (a prefill GPU: no decode waits)"


@dataclass(frozen=True, eq=False)
class LaneFrames:
    bars: pd.DataFrame       # per lane, its iterations (or time bins): lane, y, top, start_s, ...
    handoffs: pd.DataFrame   # per request that moved: its prefill's end, the transfer, the lanes
    lanes: tuple[str, ...]   # top to bottom
    bin_ms: dict[str, float | None]


def lane_names(trace: DisaggregatedTrace, colocated: int) -> tuple[list[str], list[str],
                                                                    list[str]]:
    tp = f" (tp {trace.prefill_tp})" if trace.prefill_tp > 1 else ""
    dtp = f" (tp {trace.decode_tp})" if trace.decode_tp > 1 else ""
    return ([f"prefill {i + 1}{tp}" for i in range(len(trace.prefill))],
            [f"decode {i + 1}{dtp}" for i in range(len(trace.decode))],
            [f"colocated {i + 1}" for i in range(colocated)])


def lane_frames(trace: DisaggregatedTrace, colocated: Sequence[Trace]) -> LaneFrames:
    """The lanes, top to bottom: each prefill instance, each decode instance, then each
    colocated instance; a lane's bars rise from its base in proportion to the iteration's time."""
    prefill, decode, together = lane_names(trace, len(colocated))
    traces = dict(zip(prefill, trace.prefill)) | dict(zip(decode, trace.decode)) \
        | dict(zip(together, colocated))
    lanes = tuple(traces)
    frames = timeline_frame(traces)
    bars = frames.bars.rename(columns={"policy": "lane"})
    bars.loc[bars.lane.isin(prefill) & (bars.decode_tokens == 0), "kind"] = PREFILL_GPU
    # lane i's base sits at -i (the first lane on top); a gap of one lane between the setups
    base = {name: -(i + (i >= len(prefill) + len(decode))) for i, name in enumerate(lanes)}
    tallest = float(bars.longest_ms.max()) if len(bars) else 1.0
    bars["y"] = bars.lane.map(base).astype(float)
    bars["top"] = bars.y + LANE_FILL * bars.longest_ms / tallest
    moved = np.flatnonzero(trace.decode_instance >= 0)
    link = trace.link
    handoffs = pd.DataFrame({
        "request": moved, "prompt_tokens": trace.prompt[moved],
        "kv_bytes": trace.kv_bytes[moved],
        "kv_bytes_per_token": trace.kv_bytes[moved] / trace.prompt[moved],
        "link": link.name,
        "prefill_end_s": trace.prefill_end_s[moved], "send_start_s": trace.send_start_s[moved],
        "send_end_s": trace.send_end_s[moved],
        "transfer_ms": trace.transfer_s[moved] * 1e3,
        "decode_wait_ms": trace.decode_wait_s[moved] * 1e3,
        "from_lane": np.asarray(prefill, dtype=object)[trace.prefill_instance[moved]],
        "to_lane": np.asarray(decode, dtype=object)[trace.decode_instance[moved]]})
    handoffs["kv_sum"] = [f"{p:,} tokens × {b / p:,.0f} bytes = {fmt_bytes(b)}"
                          for p, b in zip(handoffs.prompt_tokens, handoffs.kv_bytes)]
    handoffs["transfer_sum"] = [transfer_sum(b, link) for b in handoffs.kv_bytes]
    handoffs["from_y"] = handoffs.from_lane.map(base).astype(float)
    handoffs["to_y"] = handoffs.to_lane.map(base).astype(float) + LANE_FILL
    handoffs["mark"] = HANDOFF
    return LaneFrames(bars, handoffs, lanes, frames.bin_ms)


def transfer_sum(nbytes: float, link: Link) -> str:
    """A hand-off's whole time as the link prices it, written out as the page writes it (sent
    layer by layer, less of it may be left after the prefill: the line's length)."""
    if not np.isfinite(link.bandwidth):
        return f"none: {link.name}"
    return (f"{fmt_bytes(nbytes)} / {fmt_bytes(link.bandwidth)}/s + {fmt_seconds(link.latency_s)}"
            f" = {fmt_seconds(link.transfer_seconds(nbytes))}")


def lanes_chart(frames: LaneFrames, look: Look, *, width: int = 900) -> Figure:
    """Every lane on one time axis, a bar per iteration coloured by what it ran, each hand-off a
    line from its prefill lane at the prefill's end to its decode lane at the KV's arrival."""
    base = sorted(set(frames.bars.y), reverse=True) if len(frames.bars) else [0.0]
    centres = {float(y) + LANE_FILL / 2: lane for lane, y in
               frames.bars.groupby("lane", sort=False).y.first().items()}
    label_expr = " : ".join(f"datum.value == {y} ? {json.dumps(name)}"
                            for y, name in centres.items()) + " : ''"
    y_scale = alt.Scale(domain=[min(base) - 0.2, max(base) + 1.0], nice=False, zero=False)
    y_axis = alt.Axis(values=list(centres), labelExpr=label_expr, grid=False, ticks=False,
                      domain=False, title=None, labelLimit=0)
    zoom = alt.selection_interval(bind="scales", encodings=["x"], name="zoom")
    x = alt.X("start_s:Q", title="time (s)", axis=alt.Axis(format=",.3~f", grid=False))
    kinds = dict(zip((*KINDS, PREFILL_GPU), (look.decode, look.muted, look.prefill, look.prefill)))
    legend = alt.Legend(orient="top", direction="horizontal", labelLimit=0, symbolOpacity=1)
    # by the player's clock: an iteration not begun yet is faint, a hand-off not begun unseen
    started, sent = by_clock("start_s"), by_clock("prefill_end_s", 0.85, 0.0)
    bars = (alt.Chart(alt.Data(name="bars")).mark_rect()
            .encode(x=x, x2="end_s:Q", opacity=started, y=alt.Y("y:Q", scale=y_scale, axis=y_axis), y2="top:Q",
                    color=alt.Color("kind:N", title=None, legend=legend,
                                    scale=alt.Scale(domain=list(kinds),
                                                    range=list(kinds.values()))),
                    tooltip=[alt.Tooltip("lane:N"),
                             alt.Tooltip("start_s:Q", title="start (s)", format=",.4f"),
                             alt.Tooltip("longest_ms:Q", title="longest iteration (ms)",
                                         format=",.3f"),
                             alt.Tooltip("decode_tokens:Q", title="decode tokens", format=","),
                             alt.Tooltip("prefill_tokens:Q", title="prefill tokens",
                                         format=",")])
            .add_params(zoom))
    handoff = (alt.Chart(alt.Data(name="handoffs"))
               .mark_rule(strokeWidth=2, color=look.ink)
               .encode(x=alt.X("prefill_end_s:Q"), x2="send_end_s:Q", opacity=sent,
                       y=alt.Y("from_y:Q"), y2="to_y:Q",
                       tooltip=[alt.Tooltip("request:Q", title="request"),
                                alt.Tooltip("from_lane:N", title="from"),
                                alt.Tooltip("to_lane:N", title="to"),
                                alt.Tooltip("prefill_end_s:Q", title="prefill done (s)",
                                            format=",.4f"),
                                alt.Tooltip("decode_wait_ms:Q",
                                            title="waited for the decode GPU (ms)",
                                            format=",.3f"),
                                alt.Tooltip("kv_sum:N", title="KV bytes = tokens × bytes/token"),
                                alt.Tooltip("transfer_sum:N",
                                            title="transfer = bytes / bandwidth + latency"),
                                alt.Tooltip("transfer_ms:Q", title="on the link after the "
                                            "prefill, drawn (ms)", format=",.4~g"),
                                alt.Tooltip("link:N", title="link"),
                                alt.Tooltip("send_end_s:Q", title="KV arrived, first token (s)",
                                            format=",.4f")]))
    height = (34 if look.presenter else 30) * (len(base) + 1)
    end = lanes_end(frames)
    chart = alt.layer(bars, handoff, clock_rule(look, end)).properties(width=width, height=height)
    return Figure(chart, look, {"bars": frames.bars, "handoffs": frames.handoffs},
                  params={CLOCK: end})


def lanes_end(frames: LaneFrames) -> float:
    """The last moment the lanes draw: the latest iteration's end or KV arrival (s)."""
    ends = [float(frames.bars.end_s.max()) if len(frames.bars) else 0.0,
            float(frames.handoffs.send_end_s.max()) if len(frames.handoffs) else 0.0]
    return max(ends)


def goodput_frame(comparison: GoodputComparison,
                  names: Mapping[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every rate each search ran (setup, rate, attainment, met) and each setup's goodput."""
    rows, marks = [], []
    for setup, found in (("disaggregated", comparison.disaggregated),
                         ("colocated", comparison.colocated)):
        name = names[setup]
        rows += [{"setup": name, "qps": p.qps, "qps_per_gpu": p.qps / found.gpus,
                  "attainment": p.slo_attainment, "meets": "yes" if p.sustained else "no"}
                 for p in found.result.points]
        marks.append({"setup": name, "goodput_qps": found.result.capacity_qps,
                      "per_gpu": found.per_gpu, "gpus": found.gpus})
    return pd.DataFrame(rows), pd.DataFrame(marks)


def goodput_chart(points: pd.DataFrame, marks: pd.DataFrame, share: float, look: Look, *,
                  width: int = 600) -> Figure:
    """SLO attainment against the rate, a line per setup through the search's runs, the share
    goodput asks for as a dashed line and each setup's goodput as a vertical."""
    inks = look.policy_inks(list(marks.setup))
    color = alt.Color("setup:N", title=None, scale=alt.Scale(domain=list(inks),
                                                             range=list(inks.values())),
                      legend=alt.Legend(orient="top", labelLimit=0))
    x = alt.X("qps:Q", title="request rate, all GPUs (requests/s, log scale)",
              scale=alt.Scale(type="log"))
    tips = [alt.Tooltip("setup:N"), alt.Tooltip("qps:Q", title="rate (requests/s)", format=",.4g"),
            alt.Tooltip("qps_per_gpu:Q", title="per GPU (requests/s)", format=",.4g"),
            alt.Tooltip("attainment:Q", title="share meeting both targets", format=".1%"),
            alt.Tooltip("meets:N", title=f"at least {share:.0%}")]
    runs = alt.Chart(alt.Data(name="points"))
    line = runs.mark_line(opacity=0.6).encode(x=x, y=alt.Y("attainment:Q", axis=alt.Axis(
        format="%"), title="requests meeting TTFT and TPOT targets",
        scale=alt.Scale(domain=[0, 1])), color=color, order="qps:Q")
    dots = runs.mark_point(filled=True, size=60).encode(
        x=x, y="attainment:Q", color=color, tooltip=tips,
        shape=alt.Shape("meets:N", title=f"≥ {share:.0%}", legend=alt.Legend(orient="top")))
    target = alt.Chart(alt.Data(values=[{"share": share}])).mark_rule(
        strokeDash=[6, 4], color=look.muted).encode(y="share:Q")
    found = (alt.Chart(alt.Data(name="goodput")).transform_filter(alt.datum.goodput_qps > 0)
             .mark_rule(strokeDash=[2, 2])
             .encode(x=alt.X("goodput_qps:Q"), color=color,
                     tooltip=[alt.Tooltip("setup:N"),
                              alt.Tooltip("goodput_qps:Q", title="goodput (requests/s)",
                                          format=",.4g"),
                              alt.Tooltip("gpus:Q", title="GPUs"),
                              alt.Tooltip("per_gpu:Q", title="goodput / GPUs (per GPU)",
                                          format=",.4g")]))
    chart = alt.layer(line, dots, target, found).properties(width=width, height=260)
    return Figure(chart, look, {"points": points, "goodput": marks})
