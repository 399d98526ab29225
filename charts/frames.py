"""Turn a `sim` Trace into the data frames the charts draw. Times become milliseconds here.

Long runs are thinned for display only (metrics always read the full trace): past `max_bars`
iterations, consecutive iterations are merged into time bins of makespan / `max_bars`, except that an
iteration at least one bin long always keeps a bar of its own, so a stall is never averaged away.
`until_s` cuts the frames at a time (the view's window); None keeps the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sim.serving.engine import Trace
from sim.serving.metrics import request_times, seed_metrics
from sim.units import fmt_seconds

MAX_BARS = 400
NEW_REQUEST = "new request"


def bin_width_s(start_s: np.ndarray, end_s: np.ndarray, max_bars: int = MAX_BARS) -> float | None:
    """The time bin iterations are merged into, or None when every iteration gets its own bar."""
    if len(start_s) <= max_bars:
        return None
    return (float(end_s[-1] - start_s[0]) or 1.0) / max_bars


def bar_groups(start_s: np.ndarray, end_s: np.ndarray, max_bars: int = MAX_BARS) -> np.ndarray:
    """Group id per iteration (0, 1, ...): one group each while there are at most `max_bars`
    iterations; time bins otherwise, a long iteration always alone in its group."""
    n = len(start_s)
    width = bin_width_s(start_s, end_s, max_bars)
    if width is None:
        return np.arange(n)
    key = np.floor((start_s - start_s[0]) / width).astype(np.int64)
    long = (end_s - start_s) >= width
    new_group = np.ones(n, bool)
    new_group[1:] = (key[1:] != key[:-1]) | long[1:] | long[:-1]
    return np.cumsum(new_group) - 1


def shown_iterations(trace: Trace, until_s: float | None) -> int:
    """How many iterations start before `until_s` (all when None)."""
    return trace.iterations if until_s is None else int(np.searchsorted(trace.start_s, until_s))


def iterations_frame(trace: Trace, lane: str, max_bars: int = MAX_BARS,
                     until_s: float | None = None) -> pd.DataFrame:
    """One row per bar: an iteration, or a bin of consecutive iterations (sums over the bin, and
    the longest iteration in it)."""
    n_shown = shown_iterations(trace, until_s)
    groups = bar_groups(trace.start_s[:n_shown], trace.end_s[:n_shown], max_bars)
    n = int(groups[-1]) + 1 if len(groups) else 0
    first = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]]) if n else np.empty(0, np.int64)
    last = np.r_[first[1:] - 1, len(groups) - 1] if n else np.empty(0, np.int64)

    def total(values):
        return np.bincount(groups, weights=values[:n_shown], minlength=n)

    decode = total(trace.decode_tokens)
    prefill = total(trace.prefill_tokens)
    compute = total(trace.compute_s)
    memory = total(trace.memory_s)
    longest = (np.maximum.reduceat(trace.duration_s[:n_shown], first) if n else np.empty(0))
    tokens = decode + prefill
    with np.errstate(invalid="ignore", divide="ignore"):
        decode_share = np.where(tokens > 0, decode / tokens, 0.0)
    return pd.DataFrame({
        "lane": lane,
        "iteration": first,
        "iterations": last - first + 1,
        "start_ms": trace.start_s[first] * 1e3,
        "end_ms": trace.end_s[last] * 1e3,
        "duration_ms": (trace.end_s[last] - trace.start_s[first]) * 1e3,
        "longest_ms": longest * 1e3,     # the longest single iteration in the bar
        "decode_tokens": decode.astype(np.int64),
        "prefill_tokens": prefill.astype(np.int64),
        "decode_share": decode_share,
        "compute_ms": compute * 1e3,
        "memory_ms": memory * 1e3,
        "bound": np.where(compute >= memory, "compute", "memory"),
    })


def representative_streams(trace: Trace) -> dict[str, int]:
    """{label: request id}: the first decoder, the decoder that saw the largest gap, the last
    decoder, and the new request (the seed scenario's last request)."""
    decoders = np.flatnonzero(trace.prefilled)
    picks: dict[str, int] = {}
    if len(decoders):
        gaps = request_times(trace).max_gap_s[decoders]
        worst = decoders[int(np.nanargmax(gaps))] if np.isfinite(gaps).any() else decoders[0]
        for request in sorted({int(decoders[0]), int(worst), int(decoders[-1])}):
            picks[f"decoder #{request}"] = request
    for request in np.flatnonzero(~trace.prefilled)[:1]:
        picks[NEW_REQUEST] = int(request)
    return picks


def streams_frame(trace: Trace, lane: str, until_s: float | None = None) -> pd.DataFrame:
    """One row per emitted token of each representative stream, with the gap since its previous
    token (the streams' tokens at their arrival instant have no gap)."""
    parts = []
    for label, request in representative_streams(trace).items():
        times = trace.tokens_of(request)
        gaps = np.r_[np.nan, np.diff(times)]
        if until_s is not None:
            shown = times <= until_s
            times, gaps = times[shown], gaps[shown]
        parts.append(pd.DataFrame({
            "lane": lane, "stream": label,
            "role": NEW_REQUEST if label == NEW_REQUEST else "decoder",
            "token": np.arange(len(times)), "time_ms": times * 1e3, "gap_ms": gaps * 1e3}))
    columns = ["lane", "stream", "role", "token", "time_ms", "gap_ms"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def callouts_frame(trace: Trace, lane: str, streams: pd.DataFrame,
                   until_s: float | None = None) -> pd.DataFrame:
    """Brackets to draw on the streams: the largest gap a shown decoder saw, and the new
    request's time to first token (arrival to first token), when it falls in the window."""
    rows = []
    decoders = streams[(streams.role == "decoder") & streams.gap_ms.notna()]
    if len(decoders):
        worst = decoders.loc[decoders.gap_ms.idxmax()]
        rows.append(dict(lane=lane, stream=worst.stream, start_ms=worst.time_ms - worst.gap_ms,
                         end_ms=worst.time_ms, label=f"largest gap {worst.gap_ms:,.4g} ms"))
    new = np.flatnonzero(~trace.prefilled)
    picks = representative_streams(trace)
    if len(new) and NEW_REQUEST in picks:
        times = trace.tokens_of(picks[NEW_REQUEST])
        if len(times) and (until_s is None or times[0] <= until_s):
            arrival = trace.arrival_s[picks[NEW_REQUEST]] * 1e3
            rows.append(dict(lane=lane, stream=NEW_REQUEST, start_ms=arrival, end_ms=times[0] * 1e3,
                             label=f"TTFT {times[0] * 1e3 - arrival:,.4g} ms"))
    return pd.DataFrame(rows, columns=["lane", "stream", "start_ms", "end_ms", "label"])


def boundaries_s(*frames: pd.DataFrame) -> list[float]:
    """Sorted distinct bar ends across lanes, in seconds: the instants a player steps between."""
    ends = np.unique(np.concatenate([f.end_ms.to_numpy() for f in frames] or [np.empty(0)]))
    return [0.0] + [float(x) / 1e3 for x in ends]


@dataclass(frozen=True)
class LaneFrames:
    """What one lane of the timeline draws: its bars, its token streams and their callouts."""
    key: str
    title: str
    subtitle: str
    iterations: pd.DataFrame
    streams: pd.DataFrame
    callouts: pd.DataFrame
    bin_ms: float | None = None    # the display bin when iterations were merged, else None


def lane_frames(trace: Trace, lane: str, title: str, max_bars: int = MAX_BARS,
                until_s: float | None = None) -> LaneFrames:
    """All of one lane's frames, cut at `until_s`; the subtitle carries the lane's two headline
    numbers (always over the whole run)."""
    streams = streams_frame(trace, lane, until_s)
    headline = seed_metrics(trace)
    subtitle = (f"new request TTFT {fmt_seconds(headline['new_request_ttft_s'])} · largest decoder "
                f"gap {fmt_seconds(headline['decode_max_gap_s'])} · {trace.iterations:,} iterations")
    n_shown = shown_iterations(trace, until_s)
    width = bin_width_s(trace.start_s[:n_shown], trace.end_s[:n_shown], max_bars)
    return LaneFrames(lane, title, subtitle, iterations_frame(trace, lane, max_bars, until_s),
                      streams, callouts_frame(trace, lane, streams, until_s),
                      None if width is None else width * 1e3)
