"""`simulate`: one workload under one scheduler, to completion."""

from __future__ import annotations

import numpy as np

from sim.errors import InputError
from sim.serving.engine import Trace
from sim.serving.metrics import class_metrics, request_times, summarize, textbook_metrics
from sim.serving.policies import get_policy, lane_budget_note
from sim.serving.trace_files import CLASS_COLUMN, MAX_BYTES, MAX_ROWS, PREFIX_COLUMNS
from sim.serving.workloads import Workload, described, prompts_together, textbook
from sim.units import fmt_seconds, fmt_wait

from .common import (
    add_run_args,
    check_iterations,
    check_work,
    checked_run,
    planned_run,
    remedy,
    work_of,
)
from .disaggregate import (
    CLASSES_NOTE,
    add_disaggregation_args,
    disaggregated_payload,
    disaggregated_text,
)
from .flags import paragraph
from .output import NO_SECOND_TOKEN, emit, table
from .paths import output_file
from .pipeline import add_pipeline_args, chunking_note, pipeline_lines, pipeline_payload

# --- simulate -------------------------------------------------------------------------------
METRICS = {"ttft_s": "TTFT", "tbt_s": "TBT (every gap)", "tpot_s": "TPOT"}


def _percentiles(p) -> dict:
    return {"p50": p.p50, "p90": p.p90, "p99": p.p99, "max": p.max}


def _simulate(args) -> None:
    if args.disaggregate is not None:
        _simulate_disaggregated(args)
        return
    run = checked_run(args)
    trace, stages = run.traced()
    workload = run.workload
    m = summarize(trace)
    profile = get_policy(args.policy).profile
    payload = {"policy": m.policy, "engine": profile.engine, "engine_version": profile.version,
               "budget": trace.budget, "iterations": m.iterations, "makespan_s": m.makespan_s,
               "requests": m.requests, "preemptions": m.preemptions,
               "throughput_tokens_per_s": m.throughput_tokens_per_s, "max_gap_s": m.max_gap_s,
               "ttft_s": _percentiles(m.ttft_s), "tbt_s": _percentiles(m.tbt_s),
               "tpot_s": _percentiles(m.tpot_s),
               "prefix_hit_tokens": trace.prefix_hit_tokens,
               "prefix_hit_rate": trace.prefix_hit_rate}
    if textbook(workload):
        payload.update(textbook_metrics(trace))
    if prompts_together(workload):
        payload["last_ttft_s"] = m.ttft_s.max   # the burst arrives at once: the last is the max
    classes = class_metrics(trace, workload)
    if classes:
        payload["classes"] = {name: c.to_json() for name, c in classes.items()}
    if stages:
        payload.update(pipeline_payload(stages))
    notes = [*trace.notes, *([NO_SECOND_TOKEN] if np.isnan(m.tbt_s.max) else [])]
    chunking = chunking_note(run)
    if chunking:
        notes.append(chunking)
    payload["notes"] = notes
    if args.trace_out is not None:
        write_trace_csv(trace, args.trace_out)
    if args.requests_out is not None:
        write_requests_csv(trace, workload, args.requests_out)
        streaming = int(trace.prefilled.sum())
        if streaming:
            notes.append(f"--requests-out: the {streaming:,} requests already streaming at the "
                         "start are written with their cached context as prompt_tokens and no "
                         "ttft_s; --trace-in would replay them as new prompts")
    rows = [(label, *(fmt_seconds(getattr(getattr(m, k), q)) for q in ("p50", "p90", "p99", "max")))
            for k, label in METRICS.items()]
    policy = get_policy(args.policy)
    budget = f", budget {trace.budget:,}" if policy.token_budget else ""
    lines = [f"{policy.label}{budget} on {described(workload)}: {m.iterations:,} iterations, "
             f"{m.requests:,} requests, makespan {fmt_seconds(m.makespan_s)}, "
             f"{m.throughput_tokens_per_s:,.0f} output tokens/s, {m.preemptions:,} preemptions",
             table(rows, ("metric", "p50", "p90", "p99", "max"), args.wide),
             f"largest gap any request saw: {fmt_seconds(m.max_gap_s)}"]
    if trace.cached_tokens is not None:
        looked_up = int(trace.looked_up_tokens.sum())
        lines.append(f"prefix cache: {trace.prefix_hit_tokens:,} of the {looked_up:,} prompt "
                     f"tokens looked up found cached ({trace.prefix_hit_rate:.1%}), "
                     f"{int(trace.prefill_tokens.sum()):,} prefilled")
    if stages:
        lines += pipeline_lines(stages, run)
    if classes:
        lines += [_class_table(classes, args.wide), HOL_WAIT_WORDS]
    own_budget = "budget" not in args.given and lane_budget_note(policy, workload, args.budget)
    if own_budget:
        lines.append(f"note: {own_budget}; --budget sets another")
    if not policy.token_budget and "budget" in args.given:
        lines.append(f"note: {policy.engine} has no token budget ({policy.summary}), so --budget "
                     "does not change its schedule")
    if textbook(workload):
        s = textbook_metrics(trace)
        lines.append(f"new request TTFT {fmt_seconds(s['new_request_ttft_s'])}; running streams' "
                     f"largest gap {fmt_seconds(s['decode_max_gap_s'])}")
    if prompts_together(workload):
        lines.append(f"the last of the burst's prompts got its first token after "
                     f"{fmt_seconds(m.ttft_s.max)}")
    lines += [f"note: {n}" for n in notes]
    emit(args, payload, "\n".join(lines))


def _simulate_disaggregated(args) -> None:
    """One workload on a prefill pool and a decode pool (--disaggregate), within the command's
    budget as any run."""
    run = planned_run(args)
    check_iterations(run.workload, args.max_iterations)
    (cap,) = check_work(work_of(run), "this run", remedy(args))
    trace = run.capped(cap).simulate()
    payload = disaggregated_payload(trace, run.disaggregation)
    notes = [*trace.notes, *([NO_SECOND_TOKEN] if np.isnan(payload["tbt_s"]["max"]) else []),
             *([CLASSES_NOTE] if run.workload.classes else [])]
    payload["notes"] = notes
    split, cost = run.disaggregation, run.cost
    title = (f"{run.policy.label}, budget {trace.budget:,}, on {described(run.workload)}: "
             f"{split.prefill_gpus} prefill + {split.decode_gpus} decode {cost.gpu.name} GPUs, "
             f"{cost.model.name}; {payload['iterations']:,} iterations, "
             f"{payload['requests']:,} requests, makespan {fmt_seconds(payload['makespan_s'])}, "
             f"{payload['throughput_tokens_per_s']:,.0f} output tokens/s")
    lines = disaggregated_text(payload, title, lambda rows, header: table(rows, header, args.wide))
    lines += [f"note: {n}" for n in notes]
    emit(args, payload, "\n".join(lines))


HOL_WAIT_WORDS = ("HOL wait: of a request's time in the queue (arrival to the first iteration that "
                  "prefills it), the part spent in iterations that prefill another class's prompt")


def _class_table(classes: dict, wide: bool) -> str:
    rows = [(name, f"{c.requests:,}", fmt_seconds(c.ttft_s.p50), fmt_seconds(c.ttft_s.p99),
             fmt_seconds(c.tbt_s.p99), fmt_wait(c.hol_wait_s.p50), fmt_wait(c.hol_wait_s.p99),
             fmt_wait(c.hol_wait_s.max))
            for name, c in classes.items()]
    return table(rows, ("class", "requests", "TTFT p50", "TTFT p99", "TBT p99", "HOL wait p50",
                        "HOL wait p99", "HOL wait max"), wide)


def trace_frame_columns(trace: Trace) -> dict[str, np.ndarray]:
    """The per-iteration records as named columns (CSV and charts)."""
    return {"iteration": np.arange(trace.iterations), "start_s": trace.start_s,
            "end_s": trace.end_s, "duration_s": trace.duration_s,
            "decode_tokens": trace.decode_tokens, "prefill_tokens": trace.prefill_tokens,
            "compute_s": trace.compute_s, "memory_s": trace.memory_s,
            "overhead_s": trace.overhead_s, "bound": trace.bound,
            "kv_used_tokens": trace.kv_used_tokens}


def write_trace_csv(trace: Trace, path: str) -> None:
    _write_csv("--trace-out", path, trace_frame_columns(trace),
               lambda v: f"{v:.9g}" if isinstance(v, float) else str(v))


def request_columns(trace: Trace, workload: Workload) -> dict[str, np.ndarray]:
    """One row per request, in request order: first what `--trace-in` reads (so the file replays
    the same requests, each in its class where the workload has classes, sharing what their
    prompts share), then what the run gave each one."""
    times = request_times(trace)
    read = {"arrival_s": trace.arrival_s, "prompt_tokens": trace.prompt,
            "output_tokens": trace.output}
    if workload.classes:
        read[CLASS_COLUMN] = workload.class_labels()
    if workload.prefix_group is not None:   # prompts that share their start, for a replay
        read.update(zip(PREFIX_COLUMNS, (workload.prefix_group, workload.prefix_tokens)))
    cached = trace.cached_tokens if trace.cached_tokens is not None \
        else np.zeros(len(trace.prompt), np.int64)
    return {**read, "ttft_s": times.ttft_s, "max_gap_s": times.max_gap_s,
            "preemptions": trace.preemptions, "cached_tokens": cached}


def _request_value(v) -> str:
    """Times in full (Python's shortest repr reads back as the same float, so a replay arrives
    at the same instants); no value (a request already streaming has no TTFT, one token no
    gap) an empty cell."""
    if isinstance(v, float):
        return "" if np.isnan(v) else repr(v)
    return str(v)


def write_requests_csv(trace: Trace, workload: Workload, path: str) -> None:
    _write_csv("--requests-out", path, request_columns(trace, workload), _request_value)


def _write_csv(flag: str, path: str, columns: dict[str, np.ndarray], shown) -> None:
    try:
        with open(path, "w") as f:
            f.write(",".join(columns) + "\n")
            for row in zip(*(c.tolist() for c in columns.values())):
                f.write(",".join(shown(v) for v in row) + "\n")
    except OSError as e:
        raise InputError(f"cannot write {flag} {path!r}: {e.strerror}") from None


def register_simulate(sub) -> None:
    p = sub.add_parser("simulate", help="run a workload under a scheduler", description=paragraph(
        """Run one workload under one scheduler to completion and print its latencies: TTFT (arrival
        to first token), TBT (every gap between two tokens of a request) and TPOT (a request's
        mean gap) as percentiles in seconds, throughput and preemptions. The workload is the
        worked example's scenario by default (--decodes requests streaming while one --prompt
        arrives; it also prints that prompt's TTFT and the streams' largest gap), a --scenario
        burst, Poisson arrivals (--requests and --qps) or a CSV trace (--trace-in). Flags that
        belong to another scenario are refused. A run whose estimated work is over the command's
        budget (60 s, 1.5 GB) is refused before it starts, with the estimate and what to
        change."""))
    add_run_args(p)
    add_disaggregation_args(p)
    add_pipeline_args(p)
    output_file(p, "--trace-out", "write per-iteration records (times in s, tokens, KV tokens) "
                "to this CSV file (default: none)")
    output_file(p, "--requests-out", "write one row per request to this CSV file: arrival_s, "
                f"prompt_tokens, output_tokens (what --trace-in replays, up to {MAX_ROWS:,} rows "
                f"and {MAX_BYTES / 1e6:g} MB; with --mix or a traced class column, {CLASS_COLUMN} "
                f"too; where prompts share their start, {' and '.join(PREFIX_COLUMNS)}), then "
                "ttft_s, max_gap_s (its largest gap between two tokens), preemptions and "
                "cached_tokens (prompt tokens it found in the prefix cache, over its admissions); "
                "times in s, an empty cell where a request has none (default: none)")
    p.set_defaults(func=_simulate)


