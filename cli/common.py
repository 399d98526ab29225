"""What every subcommand shares: the parser that turns a usage error into exit code 2, output as a
table or JSON, the hardware / policy / workload flags and the run they describe."""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from sim.cost.iteration import MODES, CostModel
from sim.errors import InputError, check_number
from sim.presets.hardware import GPUS, get_gpu
from sim.presets.models import MODELS, get_model
from sim.serving import workloads
from sim.serving.engine import Trace, simulate
from sim.serving.policies import DEFAULT_MAX_ITERATIONS, POLICIES, Limits, get_policy
from sim.serving.trace_files import load_trace


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message):
        raise InputError(message)


def numbers(text: str) -> list[float]:
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


def finite(value):
    """JSON has no NaN: undefined numbers become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
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
                     limits=Limits(max_seqs=args.max_seqs, max_partial_prefills=args.max_partial_prefills,
                                   max_iterations=args.max_iterations))
    return workload, trace






























