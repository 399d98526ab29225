"""`python -m sim <command>`: human-readable tables by default, `--json` for scripts.

Bad input exits with code 2 and a one-line message that names the value; never a traceback.
Each command is a `register(subparsers)` function; commands that grow elsewhere add theirs to
COMMANDS at the bottom.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict

import numpy as np

from . import workloads
from .cost import Chunk, Composition, CostModel, MODES
from .engine import DEFAULT_MAX_ITERATIONS, Trace, simulate
from .errors import InputError, check_number
from .hardware import GPUS, get_gpu
from .metrics import seed_metrics, summarize
from .models import MODELS, get_model
from .policies import POLICIES, get_policy
from .traces import load_trace
from .units import fmt_bytes, fmt_flops, fmt_seconds
from .worked_example import DEFAULTS, worked_example


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message):
        raise InputError(message)


def _numbers(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated numbers, got {text!r}") from None


def emit(args, payload: dict, table: str) -> None:
    print(json.dumps(payload, indent=2, allow_nan=False, default=_jsonable) if args.json else table)


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def table(rows: list[tuple], header: tuple | None = None) -> str:
    """Left-aligned text columns."""
    rows = [tuple(str(c) for c in r) for r in ([header] if header else []) + rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if header:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _finite(value):
    """JSON has no NaN: undefined numbers become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# --- shared flags ---------------------------------------------------------------------------
def add_hardware_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", default="illustrative", help=f"one of: {', '.join(GPUS)}")
    p.add_argument("--model", default="dense-8b", help=f"one of: {', '.join(MODELS)}")
    p.add_argument("--mode", default="roofline", help=f"cost mode: {', '.join(MODES)}")
    p.add_argument("--overhead-ms", type=float, default=None,
                   help="fixed time per iteration (default: 0, or the calibrated mode's)")
    p.add_argument("--tp", type=float, default=1, help="tensor-parallel degree (GPUs)")


def cost_model_from(args) -> CostModel:
    overhead_s = None if args.overhead_ms is None else check_number(
        "--overhead-ms", args.overhead_ms, low=0, low_inclusive=True, high=10_000) / 1e3
    return CostModel(get_gpu(args.gpu), get_model(args.model), args.mode, overhead_s, args.tp)


def add_policy_args(p: argparse.ArgumentParser, budget: bool = True) -> None:
    """The scheduler and its limits (`budget=False` for commands that take several budgets)."""
    p.add_argument("--policy", default="sarathi", help=f"one of: {', '.join(POLICIES)}")
    if budget:
        p.add_argument("--budget", type=float, default=576, help="token budget per iteration")
    p.add_argument("--max-seqs", type=float, default=1024, help="max running requests")
    p.add_argument("--max-partial-prefills", type=float, default=None,
                   help="chunked policies: max requests mid-prefill at once (default: no cap)")
    p.add_argument("--max-iterations", type=float, default=DEFAULT_MAX_ITERATIONS)


def add_length_args(p: argparse.ArgumentParser) -> None:
    """Request lengths of generated (Poisson) traffic."""
    p.add_argument("--prompt-tokens", type=float, default=1024, help="poisson: prompt length")
    p.add_argument("--output-tokens", type=float, default=128, help="poisson: output length")
    p.add_argument("--lengths", default="fixed", choices=("fixed", "uniform", "sharegpt"))
    p.add_argument("--seed", type=float, default=0, help="poisson: random seed")


def add_run_args(p: argparse.ArgumentParser, budget: bool = True) -> None:
    """Flags for one simulated run: hardware, policy, limits and the workload."""
    add_hardware_args(p)
    add_policy_args(p, budget)
    p.add_argument("--scenario", choices=("seed", "burst", "poisson"), default=None,
                   help="seed: decoders streaming + one long prompt (default unless --requests); "
                        "burst: --burst prompts arrive together while the decoders stream")
    p.add_argument("--decodes", type=float, default=64, help="seed, burst: running decoders")
    p.add_argument("--context", type=float, default=4000,
                   help="seed, burst: decoders' cached context")
    p.add_argument("--prompt", type=float, default=8192,
                   help="seed, burst: each new prompt's tokens")
    p.add_argument("--decode-output", type=float, default=256,
                   help="seed, burst: tokens each decoder still emits")
    p.add_argument("--prompt-output", type=float, default=32,
                   help="seed, burst: tokens each new request emits")
    p.add_argument("--burst", type=float, default=10, help="burst: prompts arriving together")
    p.add_argument("--allow-starvation", action="store_true",
                   help="seed, burst: simulate a budget <= decodes (new prompts starve)")
    p.add_argument("--requests", type=float, help="poisson: number of requests")
    p.add_argument("--qps", type=float, help="poisson: arrival rate, requests per second")
    add_length_args(p)
    p.add_argument("--trace-in", help="replay a CSV trace: arrival_s, prompt_tokens, output_tokens")


def workload_from(args) -> workloads.Workload:
    if args.trace_in is not None:
        if args.scenario is not None or args.requests is not None or args.qps is not None:
            raise InputError("--trace-in replays a trace; drop --scenario, --requests and --qps")
        return load_trace(args.trace_in)
    scenario = args.scenario or ("poisson" if args.requests is not None else "seed")
    if scenario != "poisson" and (args.requests is not None or args.qps is not None):
        raise InputError(f"--requests and --qps belong to --scenario poisson, not {scenario}")
    if scenario == "seed":
        return workloads.seed_scenario(args.decodes, args.context, args.prompt, args.decode_output,
                                       args.prompt_output)
    if scenario == "burst":
        return workloads.burst(args.burst, args.prompt, args.prompt_output, args.decodes,
                               args.context, args.decode_output)
    if args.requests is None or args.qps is None:
        raise InputError("poisson needs --requests N and --qps Q")
    return workloads.poisson(args.requests, args.qps, seed=args.seed, lengths=args.lengths,
                             prompt=args.prompt_tokens, output=args.output_tokens)


def run_from(args) -> tuple[workloads.Workload, Trace]:
    """Build the workload and run it: the shared core of simulate, export, sweep..."""
    workload = workload_from(args)
    budget = check_number("--budget", args.budget, high=10_000_000, integer=True)
    policy = get_policy(args.policy)
    decoders = int(workload.prefilled.sum())
    if workload.name in ("seed", "burst") and policy.decodes_take_budget and budget <= decoders \
            and not args.allow_starvation:
        raise InputError(
            f"--budget {budget} is at or below the {decoders} running decodes: chunk = budget - "
            f"decodes = {budget - decoders} <= 0, so new prompts would starve until decoders "
            f"finish; use a budget > {decoders}, or --allow-starvation to watch it")
    trace = simulate(workload, policy, cost_model_from(args), budget=budget,
                     max_seqs=args.max_seqs, max_iterations=args.max_iterations,
                     max_partial_prefills=args.max_partial_prefills)
    return workload, trace


# --- worked-example -------------------------------------------------------------------------
def _worked_example(args) -> None:
    ex = worked_example(
        params=args.params, bytes_per_param=args.bytes_per_param, peak_tflops=args.peak_tflops,
        bandwidth_tbps=args.bandwidth_tbps, decodes=args.decodes, context=args.context,
        prompt=args.prompt,
        budgets=_numbers(args.budgets), layers=args.layers, kv_heads=args.kv_heads,
        head_dim=args.head_dim, kv_bytes=args.kv_bytes, long_prompt=args.long_prompt,
        burst=args.burst)
    rows = [(s.title, s.formula, s.substituted, s.display) for s in ex.steps]
    notes = [f"* {s.title}: {s.seed_note}" for s in ex.steps if s.seed_note]
    text = table(rows, ("step", "formula", "substituted", "result"))
    emit(args, _finite(ex.to_json()), text + ("\n\nWhere seed 001 rounds or slips:\n" + "\n".join(notes)
                                              if notes else ""))


def register_worked_example(sub) -> None:
    p = sub.add_parser("worked-example", help="seed 001's arithmetic, step by step")
    d = DEFAULTS
    for flag, key in (("--params", "params"), ("--bytes-per-param", "bytes_per_param"),
                      ("--peak-tflops", "peak_tflops"), ("--bandwidth-tbps", "bandwidth_tbps"),
                      ("--decodes", "decodes"), ("--context", "context"), ("--prompt", "prompt"),
                      ("--layers", "layers"),
                      ("--kv-heads", "kv_heads"), ("--head-dim", "head_dim"),
                      ("--kv-bytes", "kv_bytes"), ("--long-prompt", "long_prompt"),
                      ("--burst", "burst")):
        p.add_argument(flag, type=float, default=d[key])
    p.add_argument("--budgets", default=",".join(str(b) for b in d["budgets"]),
                   help="comma-separated token budgets")
    p.set_defaults(func=_worked_example)


# --- cost -----------------------------------------------------------------------------------
def _cost(args) -> None:
    model = cost_model_from(args)
    decodes = check_number("--decodes", args.decodes, low=0, low_inclusive=True, high=1e6, integer=True)
    context = check_number("--context", args.context, low=0, low_inclusive=True, high=1e8, integer=True)
    chunk = check_number("--chunk", args.chunk, low=0, low_inclusive=True, high=1e8, integer=True)
    prefix = check_number("--prefix", args.prefix, low=0, low_inclusive=True, high=1e8, integer=True)
    if decodes + chunk == 0:
        raise InputError("an iteration needs --decodes > 0 or --chunk > 0")
    comp = Composition((context,) * decodes, (Chunk(chunk, prefix, args.last),) if chunk else ())
    c = model.price(comp)
    payload = {"time_s": c.time_s, "compute_s": c.compute_s, "memory_s": c.memory_s,
               "flops": c.flops, "bytes": c.bytes, "bound": c.bound,
               "components": {k: asdict(v) for k, v in c.components.items()},
               "overhead_s": c.overhead_s}
    rows = [(name, fmt_flops(v.flops), fmt_bytes(v.bytes), fmt_seconds(v.time_s))
            for name, v in c.components.items()]
    if model.tp > 1:
        payload.update(tp=model.tp, allreduce_s=c.allreduce_s)
        rows.append((f"all-reduce ({model.tp} GPUs)", "", "", fmt_seconds(c.allreduce_s)))
    rows.append(("overhead", "", "", fmt_seconds(c.overhead_s)))
    rows.append(("iteration", fmt_flops(c.flops), fmt_bytes(c.bytes), fmt_seconds(c.time_s)))
    rule = "max(FLOPs / peak, bytes / bandwidth)" if model.calibration is None else \
        "the sum over kernels of their achievable time (below)"
    text = (f"{model.gpu.name} · {model.model.name} · {args.mode} · {decodes} decodes at context "
            f"{context:,} + chunk {chunk:,} on prefix {prefix:,}"
            + (f" · TP {model.tp} (per GPU)" if model.tp > 1 else "") + "\n"
            + table(rows, ("component", "FLOPs", "bytes", "time alone")) +
            f"\ncompute {fmt_seconds(c.compute_s)} vs memory {fmt_seconds(c.memory_s)}: "
            f"{c.bound}-bound; time = {rule}"
            + (" + all-reduce" if model.tp > 1 else "") + " + overhead")
    if c.factors:
        payload["factors"] = [asdict(f) for f in c.factors]
        text += "\n\nfrom the roofline to the calibrated time:\n" + table(
            [(f.name, f"+{fmt_seconds(f.added_s)}", f.why) for f in c.factors],
            ("factor", "adds", "why"))
    emit(args, payload, text)


def register_cost(sub) -> None:
    p = sub.add_parser("cost", help="the cost of one iteration")
    add_hardware_args(p)
    p.add_argument("--decodes", type=float, default=0)
    p.add_argument("--context", type=float, default=0, help="each decode's cached context")
    p.add_argument("--chunk", type=float, default=0, help="prefill chunk tokens")
    p.add_argument("--prefix", type=float, default=0, help="tokens already cached before the chunk")
    p.add_argument("--last", action="store_true", help="the chunk ends its prompt (emits a token)")
    p.set_defaults(func=_cost)


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
    emit(args, _finite(payload), "\n".join(lines))


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


def register_traffic(sub) -> None:
    """sweep and capacity, from sim/cli_traffic.py (imported late: it builds on the helpers here)."""
    from .cli_traffic import register_capacity, register_sweep
    register_sweep(sub)
    register_capacity(sub)


def register_fidelity(sub) -> None:
    """validate, from sim/cli_fidelity.py (imported late: it builds on the helpers here)."""
    from .cli_fidelity import register_validate
    register_validate(sub)


def register_export(sub) -> None:
    """export, from sim/cli_export.py (imported late: it builds on the helpers here)."""
    from .cli_export import register_export as register
    register(sub)


COMMANDS = [register_worked_example, register_cost, register_simulate, register_traffic,
            register_fidelity, register_export]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m sim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for register in COMMANDS:
        register(sub)
    for p in sub.choices.values():
        p.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.func(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
