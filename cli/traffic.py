"""`python -m sim sweep` and `python -m sim capacity`: the budget frontier and capacity under SLO.

Registered in `cli.main.COMMANDS`; the flags and the workload come from `cli.common`.
"""

from __future__ import annotations

from functools import partial

from sim.errors import InputError, check_number
from sim.serving import workloads
from sim.serving.policies import POLICIES, Limits, get_policy
from sim.studies.capacity import (
    DELAY_SLO_S,
    MAX_ITERATIONS,
    MAX_RUNS,
    SLO_PRESETS,
    compare_capacity,
    default_baseline_budget,
    get_slo_preset,
)
from sim.studies.sweep import DEFAULT_BUDGETS, sweep
from sim.units import fmt_seconds

from .common import (
    add_hardware_args,
    add_length_args,
    add_policy_args,
    add_run_args,
    cost_model_from,
    emit,
    finite,
    numbers,
    table,
    workload_from,
)

MAX_CAPACITY_REQUESTS = 20_000   # each capacity run simulates them all, up to 2 x MAX_RUNS times


def _optional_count(name: str, value):
    return None if value is None else check_number(name, value, high=1_000_000, integer=True)


# --- sweep ------------------------------------------------------------------------------------
def _pair(p) -> dict:
    return {"p50": p.p50, "p99": p.p99}


def _sweep(args) -> None:
    workload = workload_from(args)
    cost = cost_model_from(args)
    partials = _optional_count("--max-partial-prefills", args.max_partial_prefills)
    result = sweep(workload, get_policy(args.policy), cost, numbers(args.budgets),
                   limits=Limits(max_seqs=args.max_seqs, max_partial_prefills=partials,
                                 max_iterations=args.max_iterations),
                   tbt_slo_s=args.tbt_slo)
    marks = {d.budget: d.engine for d in result.defaults}
    rows, payload = [], []
    for pt in result.points:
        m = pt.metrics
        payload.append({
            "budget": pt.budget, "ttft_s": _pair(m.ttft_s), "tbt_s": _pair(m.tbt_s),
            "tpot_s": _pair(m.tpot_s), "throughput_tokens_per_s": m.throughput_tokens_per_s,
            "iterations": m.iterations, "median_delay_s": pt.median_delay_s,
            "preemptions": m.preemptions, "fixed_share": pt.fixed_share,
            "overhead_dominated": pt.overhead_dominated, "chunking_inactive": pt.chunking_inactive,
            "split_prompts": pt.split_prompts,
            "meets_tbt_slo": None if result.tbt_slo_s is None else pt.meets_tbt(result.tbt_slo_s),
            "recommended": pt.budget == result.recommended,
            "engine_default": [d.engine for d in result.defaults if d.budget == pt.budget]})
        flags = [label for label, on in (("overhead-dominated", pt.overhead_dominated),
                                         ("no split", pt.chunking_inactive),
                                         ("recommended", pt.budget == result.recommended),
                                         (f"{marks.get(pt.budget)} default", pt.budget in marks))
                 if on]
        rows.append((f"{pt.budget:,}", fmt_seconds(m.ttft_s.p50), fmt_seconds(m.ttft_s.p99),
                     fmt_seconds(m.tbt_s.p50), fmt_seconds(m.tbt_s.p99), fmt_seconds(m.tpot_s.p50),
                     f"{m.throughput_tokens_per_s:,.0f}", f"{m.iterations:,}", ", ".join(flags)))
    header = ("budget", "TTFT p50", "TTFT p99", "TBT p50", "TBT p99", "TPOT p50", "tokens/s",
              "iterations", "")
    lines = [f"{POLICIES[result.policy].label} on {workload.name} ({len(workload):,} requests), "
             f"{cost.gpu.name}, {cost.model.name}, {cost.mode}",
             table(rows, header),
             f"recommended budget: {result.reason}",
             *(f"{d.engine} default {d.flag} {d.budget:,} ({d.rule}; {d.source})"
               for d in result.defaults),
             "overhead-dominated: t(1 token) / t(budget tokens) > 1/2 (the fixed cost of an "
             "iteration is most of it); no split: budget >= longest prompt + peak decodes"]
    lines += [f"note at budget {pt.budget:,}: {n}" for pt in result.points for n in pt.notes]
    emit(args, finite(payload), "\n".join(lines))


def register_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="one workload at many token budgets: the TTFT/TBT frontier")
    add_run_args(p, budget=False)
    p.add_argument("--budgets", default=",".join(str(b) for b in DEFAULT_BUDGETS),
                   help="comma-separated token budgets")
    p.add_argument("--tbt-slo", type=float, default=None,
                   help="p99 TBT SLO in seconds: recommend the largest budget that meets it")
    p.set_defaults(func=_sweep)


# --- capacity ---------------------------------------------------------------------------------
def _result_json(r) -> dict:
    return {"name": r.policy, "budget": r.budget, "capacity_qps": r.capacity_qps,
            "failed_qps": r.failed_qps, "ceiling_qps": r.ceiling_qps, "reason": r.reason,
            "points": [{"qps": pt.qps, "p99_tbt_s": pt.p99_tbt_s,
                        "median_delay_s": pt.median_delay_s, "sustained": pt.sustained}
                       for pt in r.points]}


def _tbt_slo(args) -> float:
    if (args.tbt_slo is None) == (args.slo is None):
        raise InputError("give one of --tbt-slo SECONDS or --slo PRESET "
                         f"({', '.join(SLO_PRESETS)})")
    return args.tbt_slo if args.slo is None else get_slo_preset(args.slo).tbt_slo_s


def _capacity(args) -> None:
    cost = cost_model_from(args)
    slo = _tbt_slo(args)
    requests = check_number("--requests", args.requests, high=MAX_CAPACITY_REQUESTS, integer=True)
    workload_at = partial(workloads.poisson, requests, seed=args.seed, lengths=args.lengths,
                          prompt=args.prompt_tokens, output=args.output_tokens)
    sample = workload_at(1.0)   # bad lengths fail here, before any search
    budget = check_number("--budget", args.budget, high=10_000_000, integer=True)
    baseline = get_policy(args.baseline)
    baseline_budget = default_baseline_budget(baseline, budget, sample) \
        if args.baseline_budget is None else check_number(
            "--baseline-budget", args.baseline_budget, high=10_000_000, integer=True)
    result = compare_capacity(
        workload_at, cost, policy=get_policy(args.policy), budget=budget,
        baseline=baseline, baseline_budget=baseline_budget, tbt_slo_s=slo,
        delay_slo_s=args.delay_slo,
        limits=Limits(max_seqs=args.max_seqs, max_partial_prefills=_optional_count(
            "--max-partial-prefills", args.max_partial_prefills), max_iterations=args.max_iterations),
        max_runs=args.max_runs)
    payload = {"policy": _result_json(result.policy), "baseline": _result_json(result.baseline),
               "ratio": result.ratio, "tbt_slo_s": slo, "delay_slo_s": args.delay_slo,
               "requests": requests}
    rows = [(r.policy, f"{r.budget:,}", f"{r.capacity_qps:.3g}", r.reason)
            for r in (result.policy, result.baseline)]
    ratio = "undefined (the baseline sustains no rate tried)" if result.ratio is None else \
        f"{result.ratio:.2f}x"
    curve = [(r.policy, f"{pt.qps:.3g}", fmt_seconds(pt.p99_tbt_s), fmt_seconds(pt.median_delay_s),
              "yes" if pt.sustained else "no")
             for r in (result.policy, result.baseline) for pt in r.points]
    text = "\n".join([
        f"capacity = highest Poisson QPS with p99 TBT <= {fmt_seconds(slo)} and median scheduling "
        f"delay <= {fmt_seconds(args.delay_slo)} ({requests:,} requests, {args.lengths} lengths; "
        f"{cost.gpu.name}, {cost.model.name}, {cost.mode})",
        table(rows, ("policy", "budget", "capacity QPS", "why")),
        f"capacity ratio {result.policy.policy} / {result.baseline.policy}: {ratio}", "",
        table(curve, ("policy", "QPS", "p99 TBT", "median delay", "meets both"))])
    emit(args, finite(payload), text)


def register_capacity(sub) -> None:
    p = sub.add_parser("capacity", help="highest Poisson rate within the TBT and delay SLOs, "
                                        "chunked vs unchunked")
    add_hardware_args(p)
    add_policy_args(p)
    add_length_args(p)
    p.set_defaults(budget=512, max_iterations=MAX_ITERATIONS, func=_capacity)
    p.add_argument("--baseline", default="vllm-v0", help=f"one of: {', '.join(POLICIES)}")
    p.add_argument("--baseline-budget", type=float, default=None,
                   help="the baseline's budget (default: --budget if it is chunked; unchunked: "
                        "max(longest request, 2048), vLLM V0's max(max_model_len, 2048))")
    p.add_argument("--tbt-slo", type=float, default=None, help="p99 TBT SLO, seconds")
    p.add_argument("--slo", default=None, help=f"an SLO preset: {', '.join(SLO_PRESETS)}")
    p.add_argument("--delay-slo", type=float, default=DELAY_SLO_S,
                   help="median scheduling delay SLO, seconds (Sarathi-Serve: 2)")
    p.add_argument("--requests", type=float, default=1000, help="requests per run")
    p.add_argument("--max-runs", type=float, default=MAX_RUNS, help="simulations per policy")
