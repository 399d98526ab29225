"""`simulate`: one workload under one scheduler, to completion."""

from __future__ import annotations

import numpy as np

from sim.errors import InputError
from sim.serving.engine import Trace
from sim.serving.metrics import seed_metrics, summarize
from sim.serving.policies import get_policy
from sim.units import fmt_seconds

from .common import add_run_args, emit, finite, run_from, table


# --- simulate -------------------------------------------------------------------------------
def _percentiles(p) -> dict:
    return {"p50": p.p50, "p90": p.p90, "p99": p.p99, "max": p.max}


def _simulate(args) -> None:
    workload, trace = run_from(args)
    m = summarize(trace)
    payload = {"policy": m.policy, "iterations": m.iterations, "makespan_s": m.makespan_s,
               "requests": m.requests, "preemptions": m.preemptions,
               "throughput_tokens_per_s": m.throughput_tokens_per_s, "max_gap_s": m.max_gap_s,
               "ttft_s": _percentiles(m.ttft_s), "tbt_s": _percentiles(m.tbt_s),
               "tpot_s": _percentiles(m.tpot_s)}
    if workload.name == "seed":
        payload.update(seed_metrics(trace))
    if workload.name == "burst":
        payload["last_ttft_s"] = m.ttft_s.max   # the burst arrives at once: the last is the max
    payload["notes"] = list(trace.notes)
    if args.trace_out:
        write_trace_csv(trace, args.trace_out)
    rows = [(k, *(fmt_seconds(getattr(getattr(m, k), q)) for q in ("p50", "p90", "p99", "max")))
            for k in ("ttft_s", "tbt_s", "tpot_s")]
    lines = [f"{get_policy(args.policy).label}, budget {trace.budget:,}: {m.iterations:,} iterations,"
             f" {m.requests:,} requests, makespan {fmt_seconds(m.makespan_s)}, "
             f"{m.throughput_tokens_per_s:,.0f} output tokens/s, {m.preemptions} preemptions",
             table(rows, ("metric", "p50", "p90", "p99", "max")),
             f"largest gap any request saw: {fmt_seconds(m.max_gap_s)}"]
    if workload.name == "seed":
        s = seed_metrics(trace)
        lines.append(f"new request TTFT {fmt_seconds(s['new_request_ttft_s'])}; running decoders' "
                     f"largest gap {fmt_seconds(s['decode_max_gap_s'])}")
    if workload.name == "burst":
        lines.append(f"the last of the burst's prompts got its first token after "
                     f"{fmt_seconds(m.ttft_s.max)}")
    lines += [f"note: {n}" for n in trace.notes]
    emit(args, finite(payload), "\n".join(lines))


def trace_frame_columns(trace: Trace) -> dict[str, np.ndarray]:
    """The per-iteration records as named columns (CSV and charts)."""
    return {"iteration": np.arange(trace.iterations), "start_s": trace.start_s,
            "end_s": trace.end_s, "duration_s": trace.duration_s,
            "decode_tokens": trace.decode_tokens, "prefill_tokens": trace.prefill_tokens,
            "compute_s": trace.compute_s, "memory_s": trace.memory_s, "bound": trace.bound,
            "kv_used_tokens": trace.kv_used_tokens}


def write_trace_csv(trace: Trace, path: str) -> None:
    cols = trace_frame_columns(trace)
    try:
        with open(path, "w") as f:
            f.write(",".join(cols) + "\n")
            for row in zip(*cols.values()):
                f.write(",".join(f"{v:.9g}" if isinstance(v, float) else str(v) for v in row) + "\n")
    except OSError as e:
        raise InputError(f"cannot write --trace-out {path!r}: {e.strerror}") from None


def register_simulate(sub) -> None:
    p = sub.add_parser("simulate", help="run a workload under a scheduler")
    add_run_args(p)
    p.add_argument("--trace-out", help="write per-iteration records to this CSV file")
    p.set_defaults(func=_simulate)


