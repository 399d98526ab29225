"""The Traffic page's figures: one workload served by several policies (a zoomable per-iteration
timeline, CDFs, each request's latency split, the metrics table), and the policy colour scale every
traffic figure shares (its colours: charts/theme.py, `Look.policy_inks`).

Frame builders turn `sim` results into the small frames the charts draw, thinned for display only
(every metric reads the full trace) and saying how; chart builders take those frames and a Look and
return a Figure. Policies are named by their registry keys (`sarathi`, `vllm-v0`, ...) and keep one
colour on every chart; a name the registry does not hold is drawn too, in a spare colour.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from sim.serving.engine import Trace
from sim.serving.metrics import request_times, summarize, token_gaps
from sim.serving.policies import POLICIES
from sim.studies.stalls import stalls
from sim.units import fmt_seconds

from .figure import Figure
from .frames import bin_width_s, iterations_frame
from .theme import Look

TIMELINE_BARS = 900      # bars across all timeline panels together
CDF_POINTS = 200         # points per CDF curve
SPLIT_REQUESTS = 120     # requests per policy in the latency-split chart
ZOOM = "zoom"            # the timeline's brush


def policy_title(name: str) -> str:
    """A policy's name as a reader sees it: its label ("Sarathi-Serve OSDI'24 (stall-free)"), or
    the key for a policy the registry does not hold. The data keeps the key (a link's)."""
    return POLICIES[name].label if name in POLICIES else name


def policy_names(value: str = "datum.label", full: bool = False) -> str:
    """A Vega expression naming the policy whose key is `value` (the key where no policy has
    it): its engine ("Sarathi-Serve") where a legend, an axis or a header has little room, its
    label where `full` (a tooltip)."""
    named = "".join(f"{value} === {json.dumps(key)} ? "
                    f"{json.dumps(policy.label if full else policy.engine)} : "
                    for key, policy in POLICIES.items())
    return f"{named}{value}"


NAMED_POLICY = alt.Tooltip("policy_name:N", title="policy")   # needs `with_policy_names`


def with_policy_names(chart):
    """`chart` with the column NAMED_POLICY shows: the policy's label beside its key."""
    return chart.transform_calculate(policy_name=policy_names("datum.policy", full=True))


def policy_color(names: Sequence[str], look: Look) -> alt.Color:
    inks = look.policy_inks(names)
    return alt.Color("policy:N", title="policy", sort=list(names), scale=alt.Scale(
        domain=list(names), range=[inks[n] for n in names]),
        legend=alt.Legend(orient="top", direction="horizontal", symbolOpacity=1, labelLimit=0,
                          labelExpr=policy_names()))


# --- the per-iteration timeline ------------------------------------------------------------
KINDS = ("decode only", "decode + prefill", "prefill only (decodes wait)")


@dataclass(frozen=True, eq=False)
class TimelineFrames:
    bars: pd.DataFrame
    bin_ms: dict[str, float | None]      # per policy: the display bin, None when not thinned
    iterations: dict[str, int]


def timeline_frame(traces: Mapping[str, Trace], total_bars: int = TIMELINE_BARS) -> TimelineFrames:
    """One row per bar per policy: an iteration, or (long runs) a time bin of them whose height is
    its longest iteration (`charts.frames.iterations_frame`), so a stall is never averaged away."""
    per_lane = max(50, total_bars // max(1, len(traces)))
    parts, bins = [], {}
    for name, trace in traces.items():
        frame = iterations_frame(trace, name, per_lane)
        width = bin_width_s(trace.start_s, trace.end_s, per_lane)
        bins[name] = None if width is None else width * 1e3
        kind = np.where(frame.prefill_tokens == 0, "decode only",
                        np.where(frame.decode_tokens == 0, "prefill only (decodes wait)",
                                 "decode + prefill"))
        parts.append(pd.DataFrame({
            "policy": name, "start_s": frame.start_ms / 1e3, "end_s": frame.end_ms / 1e3,
            "longest_ms": frame.longest_ms, "iterations": frame.iterations,
            "decode_tokens": frame.decode_tokens, "prefill_tokens": frame.prefill_tokens,
            "kind": kind}))
    return TimelineFrames(pd.concat(parts, ignore_index=True), bins,
                          {name: t.iterations for name, t in traces.items()})


def traffic_timeline(frames: TimelineFrames, look: Look, *, width: int = 900, overview: bool = True,
                     panel_px: int | None = None) -> Figure:
    """An overview ribbon per policy, each iteration coloured by what it ran (drag on it to zoom),
    over one panel per policy: each bar an iteration from its start to its end, as tall as it
    took. A prefill-only iteration is a stall: every running decode waits for it. Without the
    `overview` (a guided tour's slide) the panels show the whole run, `panel_px` tall each."""
    names = list(frames.iterations)
    zoom = alt.selection_interval(name=ZOOM, encodings=["x"])
    data = alt.Data(name="timeline")
    inks = dict(zip(KINDS, (look.decode, look.muted, look.prefill)))   # both kinds: neutral
    color = alt.Color("kind:N", title=None, scale=alt.Scale(domain=list(inks),
                                                           range=list(inks.values())),
                      legend=alt.Legend(orient="top", direction="horizontal", symbolOpacity=1,
                                        labelLimit=0))
    tooltip = [NAMED_POLICY,
               alt.Tooltip("start_s:Q", title="start (s)", format=",.4f"),
               alt.Tooltip("end_s:Q", title="end (s)", format=",.4f"),
               alt.Tooltip("iterations:Q", title="iterations in this bar", format=","),
               alt.Tooltip("longest_ms:Q", title="longest iteration (ms)", format=",.3f"),
               alt.Tooltip("decode_tokens:Q", title="decode tokens", format=","),
               alt.Tooltip("prefill_tokens:Q", title="prefill tokens", format=",")]
    ribbons = (with_policy_names(alt.Chart(data)).mark_rect()
                .encode(x=alt.X("start_s:Q", title="time (s)", axis=alt.Axis(format=",.3~f"),
                                scale=alt.Scale(nice=False)),
                        x2="end_s:Q", y=alt.Y("policy:N", title=None, sort=names,
                                              axis=alt.Axis(labelExpr=policy_names())),
                        color=color, tooltip=tooltip)
                .add_params(zoom)
                .properties(width=width, height=(22 if look.presenter else 18) * len(names),
                            title=alt.TitleParams(
                                "Every iteration of the run",
                                subtitle="drag across these ribbons to zoom the panels below; "
                                         "double-click them to see the whole run again")))
    y = alt.Y("longest_ms:Q", title="iteration time (ms)", scale=alt.Scale(zero=True))
    # a projector's labels are larger: fewer of them, so that they never touch
    ticks = {"tickCount": max(4, width // 90)} if look.presenter else {}
    panels = []
    for name in names:
        bins = frames.bin_ms[name]
        subtitle = (f"{frames.iterations[name]:,} iterations"
                    + ("" if bins is None else f", drawn as bins of {bins:,.3g} ms (height: the "
                                              "longest iteration in the bin)"))
        panels.append(with_policy_names(alt.Chart(data).transform_filter(alt.datum.policy == name))
                      .mark_rect(clip=True)
                      .encode(x=alt.X("start_s:Q", title="time (s)",
                                      scale=alt.Scale(domain=zoom, nice=False) if overview
                                      else alt.Scale(nice=False),
                                      axis=alt.Axis(format=",.3~f", grid=False, **ticks)),
                              x2="end_s:Q", y=y, y2=alt.datum(0), color=color, tooltip=tooltip)
                      .properties(width=width, height=panel_px or 80,   # on a 1280x720 projector too: whole
                                  title=alt.TitleParams(policy_title(name),
                                                        subtitle=subtitle)))
    # one iteration-time scale for every panel, so a stall is as tall in each
    details = alt.vconcat(*panels, resolve=alt.Resolve(scale=alt.ScaleResolveMap(
        x="shared", y="shared")))
    if not overview:
        return Figure(details, look, {"timeline": frames.bars})
    chart = alt.vconcat(ribbons, details, resolve=alt.Resolve(scale=alt.ScaleResolveMap(
        color="shared", y="independent")))
    return Figure(chart, look, {"timeline": frames.bars})


# --- CDFs ----------------------------------------------------------------------------------
def cdf_frame(values: Mapping[str, np.ndarray], scale: float = 1.0,
              points: int = CDF_POINTS) -> pd.DataFrame:
    """Each policy's empirical CDF, P(X <= x): its sorted values, at most `points` of them (evenly
    by rank, the largest always kept), so a curve is exact where drawn. `scale` converts units
    (1e3: seconds to ms)."""
    parts = []
    for name, raw in values.items():
        v = np.sort(np.asarray(raw, np.float64)[~np.isnan(raw)])
        if not len(v):
            continue
        rank = np.unique(np.linspace(0, len(v) - 1, min(points, len(v))).round().astype(int))
        parts.append(pd.DataFrame({"policy": name, "value": v[rank] * scale,
                                   "fraction": (rank + 1) / len(v), "count": len(v)}))
    columns = ["policy", "value", "fraction", "count"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def tail_frame(values: Mapping[str, np.ndarray], scale: float = 1.0,
               points: int = CDF_POINTS) -> pd.DataFrame:
    """Each policy's share of values at least x, P(X >= x) = (n - rank) / n over its sorted values
    (the complementary CDF): half its points evenly by rank, half ever closer to the largest
    (ranks n - n / 10^k), so the tail where the freezes are is drawn in detail; every point drawn
    is exact, the largest always kept."""
    parts = []
    for name, raw in values.items():
        v = np.sort(np.asarray(raw, np.float64)[~np.isnan(raw)])
        n = len(v)
        if not n:
            continue
        even = np.linspace(0, n - 1, min(points // 2, n))
        tail = n - np.ceil(n / 10 ** np.linspace(0, np.log10(n), points - points // 2))
        rank = np.unique(np.r_[even, tail].round().astype(int).clip(0, n - 1))
        parts.append(pd.DataFrame({"policy": name, "value": v[rank] * scale,
                                   "share": (n - rank) / n, "count": n}))
    columns = ["policy", "value", "share", "count"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def ttft_and_gaps(traces: Mapping[str, Trace]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The TTFT CDF (seconds, new requests) and the inter-token gaps' tail (ms, every gap)."""
    ttft = {n: request_times(t).ttft_s for n, t in traces.items()}
    gaps = {n: token_gaps(t)[0] for n, t in traces.items()}
    return cdf_frame(ttft), tail_frame(gaps, 1e3)


def _steps(name: str, frame: pd.DataFrame, look: Look, x: alt.X, y: alt.Y, *, x_title: str,
           share: str, interpolate: str, tip: alt.Tooltip, levels: dict[str, float], width: int,
           title: str, marks: Sequence = ()) -> Figure:
    """Step curves per policy of `y` (the frame's column `share`) against `x`, with dotted lines
    at `levels` ({label: share}) and any extra `marks` beneath the curves."""
    names = list(dict.fromkeys(frame.policy))
    curves = with_policy_names(alt.Chart(alt.Data(name=name))) \
        .mark_line(interpolate=interpolate, strokeWidth=2.5) \
        .encode(x=x, y=y, color=policy_color(names, look), tooltip=[
            NAMED_POLICY, alt.Tooltip("value:Q", title=x_title, format=",.4~g"), tip,
            alt.Tooltip("count:Q", title="values in all", format=",")])
    at = alt.Chart(alt.Data(values=[{share: v, "text": k} for k, v in levels.items()]))
    rules = at.mark_rule(color=look.muted, strokeDash=[2, 3]).encode(y=y)
    labels = at.mark_text(align="left", dx=3, dy=-6, x=0, color=look.muted,
                          fontSize=look.font_size).encode(y=y, text=alt.Text("text:N"))
    chart = alt.layer(rules, labels, *marks, curves, width=width,
                      height=300 if look.presenter else 240, title=title)
    return Figure(chart, look, {name: frame})


# The Traffic page draws the TTFT and the gaps' tail side by side: at 1280 px a column is 402 px
# wide, and a wider picture loses its right edge (the last tick's label) to the column's.
HALF_PAGE_PX = 400


def half_page_width(look: Look) -> int:
    """The plot width that keeps a distribution's whole picture (axis titles and labels, the
    last tick's label flush at the right) within HALF_PAGE_PX; presenter fonts take more."""
    return 300 if look.presenter else 320


def tail_chart(frame: pd.DataFrame, look: Look, *, name: str, title: str, x_title: str,
               threshold: float, unit: str, width: int | None = None) -> Figure:
    """Step curves of the share of values at least x per policy, both axes on a log scale, so one
    freeze among thousands of short gaps stays in sight; dotted lines where half and 1% of the
    values are at least x (a curve crosses them at its p50 and p99), a dashed one at `threshold`
    (the freeze, in the values' `unit`)."""
    smallest = float(frame.share.min()) if len(frame) else 1e-3
    x = alt.X("value:Q", title=x_title, scale=alt.Scale(type="log"),
              axis=alt.Axis(format=",.4~r", labelOverlap="greedy", labelSeparation=4))
    y = alt.Y("share:Q", title="share of gaps at least this long",
              scale=alt.Scale(type="log", domain=[smallest, 1]), axis=alt.Axis(format="~%"))
    freeze = alt.Chart(alt.Data(values=[{"value": threshold,
                                         "text": f"freeze: > {threshold:g} {unit}"}]))
    line = freeze.mark_rule(color=look.ink, strokeDash=[6, 3]).encode(x=x)
    label = freeze.mark_text(align="left", baseline="top", dx=3, y=2, color=look.ink,
                             fontSize=look.font_size).encode(x=x, text=alt.Text("text:N"))
    return _steps(name, frame, look, x, y, x_title=x_title, share="share", interpolate="step-before",
                  tip=alt.Tooltip("share:Q", title="share at least this long", format=".3~%"),
                  levels={"p50": 0.5, "p99": 0.01}, width=width or half_page_width(look),
                  title=title, marks=(line, label))


def cdf_chart(frame: pd.DataFrame, look: Look, *, name: str, title: str, x_title: str,
              log: bool, width: int | None = None) -> Figure:
    """Step curves of P(X <= x) per policy; dotted lines at 0.5 and 0.99, where a curve crosses
    them is that policy's p50 and p99."""
    x = alt.X("value:Q", title=x_title,
              scale=alt.Scale(type="log") if log else alt.Scale(zero=True),
              axis=alt.Axis(format=",.4~g", labelOverlap="greedy", labelSeparation=4))
    y = alt.Y("fraction:Q", title="fraction ≤ x", scale=alt.Scale(domain=[0, 1]),
              axis=alt.Axis(format="%"))
    return _steps(name, frame, look, x, y, x_title=x_title, share="fraction",
                  interpolate="step-after",
                  tip=alt.Tooltip("fraction:Q", title="fraction ≤ x", format=".1%"),
                  levels={"p50": 0.5, "p99": 0.99}, width=width or half_page_width(look),
                  title=title)


# --- where each request's time goes ---------------------------------------------------------
PARTS = {"queue_s": "queue wait", "prefill_s": "prefill", "decode_s": "decode"}


@dataclass(frozen=True, eq=False)
class Split:
    requests: pd.DataFrame      # the drawn requests (every `every`-th new request) per policy
    means: pd.DataFrame         # per policy: mean of each part over every new request
    every: int
    total: int


def split_frame(traces: Mapping[str, Trace], max_requests: int = SPLIT_REQUESTS) -> Split:
    """Each new request's latency, arrival to last token, as queue wait (arrival to its first
    scheduled iteration) + prefill (to its first token) + decode (to its last token), from
    `sim.serving.metrics.request_times`. Requests already streaming at arrival have no queue or prefill
    and are left out."""
    parts, means = [], []
    total, every = 0, 1
    for name, trace in traces.items():
        times = request_times(trace)
        new = np.flatnonzero(~trace.prefilled)
        total = len(new)
        every = max(1, int(np.ceil(len(new) / max_requests)))
        shown = new[::every]
        parts.append(pd.DataFrame({"policy": name, "request": shown,
                                   "arrival_s": trace.arrival_s[shown],
                                   **{k: getattr(times, k)[shown] for k in PARTS}}))
        means.append({"policy": name, **{k: float(np.mean(getattr(times, k)[new]))
                                         for k in PARTS}})
    return Split(pd.concat(parts, ignore_index=True), pd.DataFrame(means), every, total)


def split_chart(split: Split, look: Look, *, width: int = 900) -> Figure:
    """One stacked bar per drawn request, a panel per policy, on one seconds scale."""
    inks = {"queue wait": look.muted, "prefill": look.prefill, "decode": look.decode}
    color = alt.Color("part:N", title=None, sort=list(inks), scale=alt.Scale(
        domain=list(inks), range=list(inks.values())),
        legend=alt.Legend(orient="top", direction="horizontal", symbolOpacity=1))
    bars = (alt.Chart(alt.Data(name="split"))
            .transform_fold(list(PARTS), as_=["part_key", "seconds"])
            .transform_calculate(part=" : ".join(
                f"datum.part_key == '{k}' ? '{v}'" for k, v in PARTS.items()) + " : ''")
            .transform_calculate(order="indexof(['queue_s', 'prefill_s', 'decode_s'], "
                                       "datum.part_key)")
            .mark_bar()
            .encode(x=alt.X("request:O", title="new requests in arrival order (request id)",
                            axis=alt.Axis(labelOverlap=True, labelAngle=0)),
                    y=alt.Y("seconds:Q", title="seconds", stack="zero"),
                    color=color, order=alt.Order("order:Q"),
                    tooltip=[NAMED_POLICY, alt.Tooltip("request:Q", title="request"),
                             alt.Tooltip("arrival_s:Q", title="arrival (s)", format=",.4f"),
                             *(alt.Tooltip(f"{k}:Q", title=f"{v} (s)", format=",.4f")
                               for k, v in PARTS.items())])
            .properties(width=width, height=110 if look.presenter else 80))
    names = [policy_title(n) for n in dict.fromkeys(split.requests.policy)]
    # each panel's header on top of it, the policy by its label (faceted on the named column, as a
    # header's labelExpr is not drawn on top)
    chart = with_policy_names(bars.facet(
        row=alt.Row("policy_name:N", title=None, sort=names,
                    header=alt.Header(labelAngle=0, labelAlign="left", labelOrient="top",
                                      labelPadding=2)), spacing=8))
    return Figure(chart, look, {"split": split.requests})


# --- the metrics table ----------------------------------------------------------------------
def metrics_frame(traces: Mapping[str, Trace]) -> pd.DataFrame:
    """Rows: the stall first (the largest gap, the gaps over the freeze threshold), then the
    percentiles of TTFT, TBT and TPOT, throughput and its terms; a column per policy (formatted
    text), and one saying what each row is computed from."""
    rows: dict[str, dict[str, str]] = {}
    how = {}
    for name, trace in traces.items():
        m = summarize(trace)
        new = int(np.count_nonzero(~trace.prefilled))
        gaps = len(token_gaps(trace)[0])
        timed = int(np.count_nonzero(np.diff(trace.token_offsets) > 1))
        frozen = stalls(trace)
        rows.setdefault("largest gap (TBT max)", {})[name] = fmt_seconds(m.tbt_s.max)
        how["largest gap (TBT max)"] = f"the longest gap between two tokens of a request, {gaps:,} gaps"
        freezes = f"stalls over {fmt_seconds(frozen.threshold_s)}"
        rows.setdefault(freezes, {})[name] = (f"{frozen.gaps_over:,} ({frozen.frozen_streams:,} "
                                              "requests)")
        how[freezes] = f"gaps longer than {fmt_seconds(frozen.threshold_s)}: a stream seen to stop"
        for metric, p, over in (("TTFT", m.ttft_s, f"first token − arrival, {new:,} new requests"),
                                ("TBT", m.tbt_s, f"each gap between a request's tokens, {gaps:,} "
                                                 "gaps"),
                                ("TPOT", m.tpot_s, "(last token − first) / (tokens − 1), "
                                                   f"{timed:,} requests")):
            for q in ("p50", "p90", "p99", "max")[:3 if metric == "TBT" else 4]:
                rows.setdefault(f"{metric} {q}", {})[name] = fmt_seconds(getattr(p, q))
                how[f"{metric} {q}"] = over
        output = int(trace.output.sum())
        for label, text, formula in (
                ("throughput", f"{m.throughput_tokens_per_s:,.0f} tokens/s",
                 "output tokens / makespan"),
                ("output tokens", f"{output:,}", "Σ tokens each request emits"),
                ("makespan", fmt_seconds(m.makespan_s), "last iteration's end − first arrival"),
                ("iterations", f"{m.iterations:,}", "forward passes"),
                ("preemptions", f"{m.preemptions:,}", "memory for keys and values full: newest "
                                                       "request evicted, recomputed later")):
            rows.setdefault(label, {})[name] = text
            how[label] = formula
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.insert(0, "computed from", pd.Series(how))
    return frame


















