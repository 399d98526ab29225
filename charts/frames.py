"""Turn a `sim` Trace into the data frames the charts draw. Times become milliseconds here.

Long runs are thinned for display only (metrics always read the full trace): past `max_bars`
iterations, consecutive iterations are merged into time bins of makespan / `max_bars`, except that an
iteration at least one bin long always keeps a bar of its own, so a stall is never averaged away.
Every running decoder is a row of ticks (`decoder_rows`); rows that tick together are stored once,
beyond MAX_ROWS decoders several share a row, and beyond MAX_TICKS ticks they are thinned by time,
both ends of every long gap kept. `until_s` cuts the frames at a time (the view's window); None
keeps the whole run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sim.serving.engine import Trace
from sim.serving.metrics import textbook_metrics
from sim.studies.stalls import STALL_S, Stalls, stalls
from sim.units import fmt_counted, fmt_seconds

MAX_BARS = 400
MAX_ROWS = 256     # decoders drawn one row each up to this many, several per row beyond
MAX_TICKS = 4000   # tick instants per lane before they are thinned by time
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
    overhead = total(trace.overhead_s)
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
        "overhead_ms": overhead * 1e3,   # the time the engine's CPU work added (sim/cost/overhead.py)
        "bound": np.where(compute >= memory, "compute", "memory"),
    })


@dataclass(frozen=True, eq=False)
class DecoderRows:
    """Every running decoder as a row of ticks, one tick per token it emits.

    Rows whose ticks fall at the same instants (in the textbook scenario, all of them: every decoder
    is in every iteration) form a *band*, stored once and drawn across its rows, so 64 rows that
    tick together cost one row of data. `ticks`: one row per (band, instant) with the band's rows
    [row0, row1), the tokens delivered then (a decoder's token from before the new prompt arrived
    counts 0), the gap since the band's previous tick (`prev_ms` = time − gap) and when the band's
    last decoder finishes (`finish_ms`, over the whole run)."""
    ticks: pd.DataFrame
    rows: int                 # rows drawn
    per_row: int              # decoders per row (> 1 beyond `max_rows` decoders)
    decoders: int
    bin_ms: float | None = None   # ticks thinned into time bins of this width, else None


TICK_COLUMNS = ["lane", "band", "row0", "row1", "decoders", "time_ms", "prev_ms", "gap_ms",
                "tokens", "finish_ms"]


def _row_ticks(trace: Trace, decoders: np.ndarray, per_row: int, until_s: float | None):
    """(row, time, tokens delivered) per distinct instant a row ticks, and each row's finish."""
    counts = np.diff(trace.token_offsets)
    owner = np.repeat(np.arange(len(counts)), counts)
    rank = np.full(len(counts), -1)
    rank[decoders] = np.arange(len(decoders))
    first = np.zeros(len(owner), bool)
    first[trace.token_offsets[:-1][counts > 0]] = True
    mine = rank[owner] >= 0
    row_all = rank[owner[mine]] // per_row
    finish = np.full(row_all.max(initial=-1) + 1, -np.inf)
    np.maximum.at(finish, row_all, trace.token_s[mine])
    keep = np.ones(len(row_all), bool) if until_s is None else trace.token_s[mine] <= until_s
    row, times, delivered = row_all[keep], trace.token_s[mine][keep], ~first[mine][keep]
    order = np.lexsort((times, row))
    row, times, delivered = row[order], times[order], delivered[order]
    distinct = np.r_[True, (row[1:] != row[:-1]) | (times[1:] != times[:-1])] if len(row) else row
    tokens = np.bincount(np.cumsum(distinct) - 1, weights=delivered) if len(row) else times
    return row[distinct], times[distinct], tokens, finish


def _bands(row, times, tokens, finish, n_rows) -> list[dict]:
    """Consecutive rows with the same instants and finish, merged (their tokens summed)."""
    starts = np.searchsorted(row, np.arange(n_rows + 1))
    bands: list[dict] = []
    for r in range(n_rows):
        t, k = times[starts[r]:starts[r + 1]], tokens[starts[r]:starts[r + 1]]
        last = bands[-1] if bands else None
        if last and last["finish"] == finish[r] and np.array_equal(last["times"], t):
            last["row1"], last["tokens"] = r + 1, last["tokens"] + k
        else:
            bands.append(dict(row0=r, row1=r + 1, times=t, tokens=k, finish=finish[r]))
    return bands


def _thin(times: np.ndarray, tokens: np.ndarray, width: float):
    """Keep a band's last tick in each time bin of `width`, and both ends of every gap at least
    one bin long, so no freeze is shortened; a dropped tick's tokens move to the next kept one."""
    gaps = np.r_[np.inf, np.diff(times)]
    long = gaps >= width
    bins = np.floor(times / width)
    keep = np.r_[bins[1:] != bins[:-1], True] | long | np.r_[long[1:], False]
    delivered = np.cumsum(tokens)[keep]
    return keep, np.diff(np.r_[0.0, delivered])


def decoder_rows(trace: Trace, lane: str, until_s: float | None = None,
                 max_rows: int = MAX_ROWS, max_ticks: int = MAX_TICKS) -> DecoderRows:
    """Every decoder streaming when the new prompt arrives, a row each (several per row beyond
    `max_rows`, more while that merges bands and there are more than `max_ticks` ticks), and,
    if still more than `max_ticks`, ticks thinned by time (`_thin`)."""
    decoders = np.flatnonzero(trace.prefilled)
    if not len(decoders):
        return DecoderRows(pd.DataFrame(columns=TICK_COLUMNS), 0, 1, 0)
    per_row = math.ceil(len(decoders) / max_rows)
    while True:
        n_rows = math.ceil(len(decoders) / per_row)
        bands = _bands(*_row_ticks(trace, decoders, per_row, until_s), n_rows)
        total = sum(len(b["times"]) for b in bands)
        if total <= max_ticks or len(bands) == 1 or n_rows == 1:
            break
        per_row *= 2
    bin_s = None
    if total > max_ticks:
        span = max(float(b["times"][-1]) for b in bands if len(b["times"])) or 1.0
        bin_s = span * len(bands) / max_ticks
    parts = []
    for i, b in enumerate(bands):
        times, tokens = b["times"], b["tokens"]
        gaps = np.r_[np.nan, np.diff(times)]
        if bin_s is not None:
            keep, tokens = _thin(times, tokens, bin_s)
            times, gaps = times[keep], gaps[keep]
        rows_decoders = min(b["row1"] * per_row, len(decoders)) - b["row0"] * per_row
        parts.append(pd.DataFrame({
            "lane": lane, "band": i, "row0": b["row0"], "row1": b["row1"],
            "decoders": rows_decoders, "time_ms": times * 1e3, "prev_ms": (times - gaps) * 1e3,
            "gap_ms": gaps * 1e3, "tokens": tokens.astype(np.int64),
            "finish_ms": b["finish"] * 1e3}))
    return DecoderRows(pd.concat(parts, ignore_index=True), n_rows, per_row, len(decoders),
                       None if bin_s is None else bin_s * 1e3)


def new_request(trace: Trace) -> int | None:
    """The request that arrives while the decoders stream (the textbook scenario's last), if any."""
    new = np.flatnonzero(~trace.prefilled)
    return int(new[0]) if len(new) else None


def new_request_frame(trace: Trace, lane: str, until_s: float | None = None) -> pd.DataFrame:
    """One row per token the new request emits (within the window)."""
    request = new_request(trace)
    times = np.empty(0) if request is None else trace.tokens_of(request)
    if until_s is not None:
        times = times[times <= until_s]
    return pd.DataFrame({"lane": lane, "stream": NEW_REQUEST, "token": np.arange(len(times)),
                         "time_ms": times * 1e3, "gap_ms": np.r_[np.nan, np.diff(times)][:len(times)] * 1e3})


def callouts_frame(trace: Trace, lane: str) -> pd.DataFrame:
    """The new request's wait for its first token: arrival and first token (ms; NaN if it never
    gets one). The timeline grows a bracket over it as the clock runs."""
    request = new_request(trace)
    columns = ["lane", "stream", "arrival_ms", "first_ms"]
    if request is None:
        return pd.DataFrame(columns=columns)
    times = trace.tokens_of(request)
    return pd.DataFrame([dict(lane=lane, stream=NEW_REQUEST, arrival_ms=trace.arrival_s[request] * 1e3,
                              first_ms=times[0] * 1e3 if len(times) else np.nan)], columns=columns)


def boundaries_s(*frames: pd.DataFrame) -> list[float]:
    """Sorted distinct bar ends across lanes, in seconds: the instants a player steps between."""
    ends = np.unique(np.concatenate([f.end_ms.to_numpy() for f in frames] or [np.empty(0)]))
    return [0.0] + [float(x) / 1e3 for x in ends]


@dataclass(frozen=True)
class LaneShape:
    """What a lane's chart is built from (its data aside): equal shapes draw with one spec."""
    key: str
    rows: int
    per_row: int
    decoders: int


@dataclass(frozen=True)
class LaneFrames:
    """What one lane of the timeline draws: its bars, every decoder's ticks, the new request's
    tokens and its time-to-first-token callout."""
    key: str
    title: str
    subtitle: str
    iterations: pd.DataFrame
    decoders: DecoderRows
    new_request: pd.DataFrame
    callouts: pd.DataFrame
    bin_ms: float | None = None    # the display bin when iterations were merged, else None
    froze: Stalls | None = None    # the running streams' freezes over the whole run

    @property
    def shape(self) -> LaneShape:
        return LaneShape(self.key, self.decoders.rows, self.decoders.per_row, self.decoders.decoders)

    @property
    def heading(self) -> pd.DataFrame:
        """The lane's title and its whole-run numbers, drawn from data (one spec serves any run):
        with what the freeze counter says once the clock reaches the end (`froze_text`)."""
        frozen = self.froze.frozen_streams if self.froze else 0
        return pd.DataFrame([{"title": self.title, "subtitle": self.subtitle,
                              "froze": froze_text(self.froze), "frozen_streams": frozen}])


def froze_text(froze: Stalls | None) -> str:
    """What happened to the streams, said after it happened: how many froze and the longest freeze
    ("64 streams froze, up to 333 ms"), the metric cards' numbers (sim.studies.stalls over the
    streams running when the prompt arrives)."""
    if froze is None or not froze.streams:
        return "no streams running"
    if not froze.frozen_streams:
        return "no stream froze"
    n = froze.frozen_streams
    return f"{fmt_counted(n, 'stream')} froze, up to {fmt_seconds(froze.largest_gap_s)}"


def lane_frames(trace: Trace, lane: str, title: str, max_bars: int = MAX_BARS,
                until_s: float | None = None) -> LaneFrames:
    """All of one lane's frames, cut at `until_s`; the subtitle carries the lane's two headline
    numbers (always over the whole run)."""
    headline = textbook_metrics(trace)
    subtitle = (f"streams' largest gap {fmt_seconds(headline['decode_max_gap_s'])} · new request "
                f"TTFT {fmt_seconds(headline['new_request_ttft_s'])} · {trace.iterations:,} iterations")
    n_shown = shown_iterations(trace, until_s)
    width = bin_width_s(trace.start_s[:n_shown], trace.end_s[:n_shown], max_bars)
    return LaneFrames(lane, title, subtitle, iterations_frame(trace, lane, max_bars, until_s),
                      decoder_rows(trace, lane, until_s), new_request_frame(trace, lane, until_s),
                      callouts_frame(trace, lane), None if width is None else width * 1e3,
                      stalls(trace, STALL_S, trace.prefilled))


SAME_GAP_MS = 1e-6   # gaps equal but for float rounding (a chunked lane's 23.04 ms) are one size


@dataclass(frozen=True)
class LaneAtClock:
    """What one lane's streams show at a clock, as numbers (ms), by the lab's one definition of a
    freeze (sim.studies.stalls): a stream is frozen while its current gap, the time since its
    last token, exceeds STALL_S; a gap longer than that is a freeze, its whole length the freeze.
    For pictures drawn frame by frame (charts.film.gif) rather than by the chart's own clock.

    `waits`: per band still running, its rows, last token and current gap (`wait_ms`);
    `freezes`: the freezes that have ended (rows, `prev_ms`, `time_ms`); `largest`: the largest
    gap so far (the latest of equal ones, a row each where rows share it), as much of it as the
    clock has reached (rows, `prev_ms`, `end_ms`; empty before the first gap begins);
    `delivered`: tokens the streams have received since the prompt arrived."""
    waits: pd.DataFrame
    freezes: pd.DataFrame
    largest: pd.DataFrame
    delivered: int

    @property
    def frozen_ms(self) -> float | None:
        """How long the longest-waiting stream has been frozen (its whole current gap), or None
        while no stream's current gap exceeds the threshold."""
        longest = self.waits.wait_ms.max() if len(self.waits) else 0.0
        return float(longest) if longest > STALL_S * 1e3 else None

    @property
    def largest_ms(self) -> float | None:
        """The largest gap so far (None before the first begins)."""
        return float((self.largest.end_ms - self.largest.prev_ms).max()) if len(self.largest) else None


def lane_at_clock(ticks: pd.DataFrame, t_ms: float) -> LaneAtClock:
    """A lane's `DecoderRows.ticks` at the clock `t_ms` (in numpy: a GIF asks this of every
    lane at every frame)."""
    c = {name: ticks[name].to_numpy(float) for name in
         ("band", "row0", "row1", "finish_ms", "time_ms", "prev_ms", "gap_ms", "tokens")}
    band, seen = c["band"].astype(np.int64), c["time_ms"] <= t_ms
    last = np.full(int(band.max(initial=-1)) + 1, -np.inf)
    np.maximum.at(last, band[seen], c["time_ms"][seen])
    first = np.flatnonzero(np.r_[True, band[1:] != band[:-1]]) if len(band) else band
    running = first[(last[band[first]] > -np.inf) & (t_ms < c["finish_ms"][first])]
    waits = pd.DataFrame({"row0": c["row0"][running], "row1": c["row1"][running],
                          "last_ms": last[band[running]], "wait_ms": t_ms - last[band[running]]})
    froze = seen & (c["gap_ms"] > STALL_S * 1e3)
    freezes = pd.DataFrame({name: c[name][froze] for name in ("row0", "row1", "prev_ms", "time_ms")})
    begun = ~np.isnan(c["prev_ms"]) & (c["prev_ms"] <= t_ms)
    end_ms = np.minimum(c["time_ms"], t_ms)
    shown = np.where(begun, end_ms - c["prev_ms"], -np.inf)
    worst = begun & (shown >= shown.max(initial=-np.inf) - SAME_GAP_MS)
    worst &= c["prev_ms"] >= np.max(c["prev_ms"][worst], initial=-np.inf)   # the latest of equals
    largest = pd.DataFrame({"row0": c["row0"][worst], "row1": c["row1"][worst],
                            "prev_ms": c["prev_ms"][worst], "end_ms": end_ms[worst]})
    return LaneAtClock(waits, freezes, largest, int(c["tokens"][seen].sum()))
