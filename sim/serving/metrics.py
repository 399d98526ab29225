"""Latency and throughput metrics, all functions of a Trace.

TTFT: arrival to first output token (queueing + prefill). TBT: every gap between successive tokens
of one request (the tail shows the stall; the mean hides it). TPOT per request:
(last token - first token) / (tokens - 1), as DistServe defines it. Goodput: requests per second
that meet both a TTFT and a TPOT SLO. Mixed traffic (a workload with request classes) has each of
them per class, beside the head-of-line wait (`head_of_line_waits`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from sim.serving.engine import Trace
from sim.serving.workloads import Workload


@dataclass(frozen=True)
class Percentiles:
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values) -> Percentiles:
        values = np.asarray(values, np.float64)
        if not len(values):
            return cls(*(float("nan"),) * 4)
        p50, p90, p99 = np.percentile(values, [50, 90, 99])
        return cls(float(p50), float(p90), float(p99), float(values.max()))


@dataclass(frozen=True, eq=False)
class RequestTimes:
    """Per request, in seconds (NaN where not applicable)."""
    ttft_s: np.ndarray         # new requests only (NaN for requests already streaming)
    tpot_s: np.ndarray
    max_gap_s: np.ndarray
    queue_s: np.ndarray        # arrival -> start of its first prefill iteration
    prefill_s: np.ndarray      # start of first prefill iteration -> first token
    decode_s: np.ndarray       # first token -> last token
    finish_s: np.ndarray


def request_times(trace: Trace) -> RequestTimes:
    n = len(trace.arrival_s)
    off = trace.token_offsets
    counts = np.diff(off)
    has = counts > 0
    first = np.full(n, np.nan)
    last = np.full(n, np.nan)
    first[has] = trace.token_s[off[:-1][has]]
    last[has] = trace.token_s[off[1:][has] - 1]
    gaps, owner = token_gaps(trace)
    max_gap = np.full(n, np.nan)
    if len(gaps):
        np.fmax.at(max_gap, owner, gaps)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(counts > 1, (last - first) / (counts - 1), np.nan)
    scheduled = np.full(n, np.nan)
    if len(trace.chunk_request):
        # chunks are in iteration order, so the first occurrence of each request is its first chunk
        reqs, idx = np.unique(trace.chunk_request, return_index=True)
        scheduled[reqs] = trace.start_s[trace.chunk_iteration[idx]]
    new = ~trace.prefilled
    ttft = np.where(new, first - trace.arrival_s, np.nan)
    return RequestTimes(ttft, tpot, max_gap, np.where(new, scheduled - trace.arrival_s, np.nan),
                        np.where(new, first - scheduled, np.nan), last - first, last)


def median_scheduling_delay(trace: Trace) -> float:
    """Median over new requests of arrival -> start of the first iteration that runs them
    (Sarathi-Serve's capacity condition); NaN when there are none."""
    delays = request_times(trace).queue_s
    delays = delays[~np.isnan(delays)]
    return float(np.median(delays)) if len(delays) else float("nan")


def token_gaps(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Every gap between successive tokens of one request, and the request it belongs to."""
    counts = np.diff(trace.token_offsets)
    owner = np.repeat(np.arange(len(counts)), counts)
    same = owner[1:] == owner[:-1]
    return np.diff(trace.token_s)[same], owner[1:][same]


@dataclass(frozen=True)
class Metrics:
    policy: str
    budget: int
    iterations: int
    makespan_s: float
    requests: int
    preemptions: int
    output_tokens: int               # tokens emitted (not the streams' token before the run)
    throughput_tokens_per_s: float   # output_tokens per second over the makespan
    max_gap_s: float                 # the largest gap any request saw between two tokens
    ttft_s: Percentiles
    tbt_s: Percentiles
    tpot_s: Percentiles
    goodput_rps: float | None = None
    slo_attainment: float | None = None

    def to_json(self) -> dict:
        return asdict(self)


def summarize(trace: Trace, ttft_slo_s: float | None = None,
              tpot_slo_s: float | None = None) -> Metrics:
    times = request_times(trace)
    gaps, _ = token_gaps(trace)
    makespan = float(trace.end_s[-1] - trace.arrival_s.min()) if trace.iterations else 0.0
    emitted = len(trace.token_s) - int(trace.prefilled.sum())   # not the streams' earlier token
    goodput = attainment = None
    if ttft_slo_s is not None or tpot_slo_s is not None:
        ok = np.ones(len(trace.arrival_s), bool)
        if ttft_slo_s is not None:
            ok &= ~(times.ttft_s > ttft_slo_s)    # NaN (already streaming) counts as met
        if tpot_slo_s is not None:
            ok &= ~(times.tpot_s > tpot_slo_s)
        attainment = float(ok.mean())
        goodput = float(ok.sum() / makespan) if makespan else 0.0
    return Metrics(
        trace.policy, trace.budget, trace.iterations, makespan, len(trace.arrival_s),
        int(trace.preemptions.sum()), emitted, emitted / makespan if makespan else 0.0,
        float(gaps.max()) if len(gaps) else float("nan"),
        Percentiles.of(times.ttft_s[~np.isnan(times.ttft_s)]), Percentiles.of(gaps),
        Percentiles.of(times.tpot_s[~np.isnan(times.tpot_s)]), goodput, attainment)


def textbook_metrics(trace: Trace) -> dict:
    """The two numbers of the source article's story: the new prompt's TTFT and the streams' largest gap."""
    times = request_times(trace)
    new = np.flatnonzero(~trace.prefilled)
    streams = trace.prefilled
    return {"new_request_ttft_s": float(times.ttft_s[new[0]]) if len(new) else float("nan"),
            "decode_max_gap_s": float(np.nanmax(times.max_gap_s[streams])) if streams.any()
            else float("nan")}


def head_of_line_waits(trace: Trace, request_class: np.ndarray) -> np.ndarray:
    """Per request, the seconds of its wait in the queue spent behind another class's prompt:
    of the span from its arrival to the start of the first iteration that prefills it
    (`RequestTimes.queue_s`), the part covered by iterations that prefill a chunk of a request of
    another class (`request_class`: each request's class). An iteration that also prefills the
    request's own class counts: the other class's chunk is in it. NaN for a request already
    streaming (it never queues) and for one the run never scheduled."""
    times = request_times(trace)
    arrival = trace.arrival_s
    scheduled = arrival + times.queue_s
    waits = np.full(len(arrival), np.nan)
    if not trace.iterations:
        return waits
    request_class = np.asarray(request_class)
    for c in np.unique(request_class[~np.isnan(scheduled)]):
        spent = np.where(behind_another_class(trace, request_class, c), trace.duration_s, 0.0)
        mine = (request_class == c) & ~np.isnan(scheduled)
        waits[mine] = np.maximum(_spent_until(trace, spent, scheduled[mine])
                                 - _spent_until(trace, spent, arrival[mine]), 0.0)
    return waits


def behind_another_class(trace: Trace, request_class: np.ndarray, c) -> np.ndarray:
    """A mask over the iterations: those that prefill a chunk of a request not of class `c` (a
    request of class `c` waiting then waits behind another class's prompt)."""
    behind = np.zeros(trace.iterations, bool)
    behind[trace.chunk_iteration[np.asarray(request_class)[trace.chunk_request] != c]] = True
    return behind


def _spent_until(trace: Trace, spent: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The seconds of `spent` (each iteration's, 0 for one that does not count) from the run's
    start to each time `t`: the iterations ended by then, and the part of the one running."""
    ended = np.searchsorted(trace.end_s, t, side="right")
    last = trace.iterations - 1
    k = np.minimum(ended, last)
    running = np.where(ended <= last, np.clip(t - trace.start_s[k], 0.0, spent[k]), 0.0)
    return np.r_[0.0, np.cumsum(spent)][ended] + running


@dataclass(frozen=True)
class ClassMetrics:
    """One request class's share of a run: TTFT and TBT as `summarize` has them for the whole
    run, and its head-of-line wait (`head_of_line_waits`), over its requests."""
    requests: int
    ttft_s: Percentiles
    tbt_s: Percentiles
    hol_wait_s: Percentiles

    def to_json(self) -> dict:
        """The class's entry in a command's JSON `classes`: its requests and each metric in the
        top level's percentile shape (p50, p90, p99, max)."""
        return asdict(self)


def class_metrics(trace: Trace, workload: Workload) -> dict[str, ClassMetrics]:
    """Each class of `workload` (the run's) by its name, in the workload's order; {} for a
    workload without classes."""
    if not workload.classes:
        return {}
    if len(workload) != len(trace.arrival_s):
        raise ValueError("the trace is not a run of this workload")
    times = request_times(trace)
    gaps, owner = token_gaps(trace)
    waits = head_of_line_waits(trace, workload.request_class)
    result = {}
    for code, name in enumerate(workload.classes):
        mine = workload.request_class == code
        ttft, wait = times.ttft_s[mine], waits[mine]
        result[name] = ClassMetrics(int(mine.sum()), Percentiles.of(ttft[~np.isnan(ttft)]),
                                    Percentiles.of(gaps[mine[owner]]),
                                    Percentiles.of(wait[~np.isnan(wait)]))
    return result
