"""`python -m sim sweep` and `python -m sim capacity`: the budget frontier and capacity under SLO.

Registered in `cli.main.COMMANDS`; the flags and the workload come from `cli.common`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

from sim.effort.caps import CLI_ALLOWANCE, CommandEffort, RunAccount
from sim.effort.estimate import estimate_run
from sim.errors import InputError
from sim.knobs import KNOBS
from sim.serving.policies import POLICIES, default_max_seqs, get_policy
from sim.serving.run import Run
from sim.serving.workloads import OWN_LENGTHS, described
from sim.studies.capacity import (
    DELAY_SLO_S,
    MAX_ITERATIONS,
    MAX_RUNS,
    SLO_PRESETS,
    compare_capacity,
    default_baseline_budget,
    get_slo_preset,
)
from sim.studies.sweep import DEFAULT_BUDGETS, MAX_BUDGETS, sweep
from sim.units import fmt_seconds

from .common import (
    PROCESS_BYTES,
    add_hardware_args,
    add_length_args,
    add_policy_args,
    add_run_args,
    check_iterations,
    check_work,
    fewer_stages,
    hardware_from,
    lengths_words,
    limits_from,
    poisson_from,
    refuse_unused_lengths,
    remedy,
    work_of,
    workload_from,
)
from .flags import choice, number, number_list, paragraph
from .goodput import add_goodput_args, capacity_goodput, refuse_goodput_flags
from .output import NO_SECOND_TOKEN, emit, table
from .pipeline import (
    BUBBLE_WORDS,
    add_pipeline_args,
    bubble_cell,
    bubble_header,
    chunking_note,
    chunking_notes,
    pipeline_payload,
    point_stages,
    stages_payload,
    stages_words,
)

MAX_CAPACITY_REQUESTS = 20_000   # each capacity run simulates them all, up to 2 x MAX_RUNS times
# The searches stop at this share of the command's time budget in estimated work: a search adds
# runs until the next might not fit, so it ends near its limit, and the rest is the margin for a
# busy machine.
CAPACITY_SHARE = 2 / 3


# --- sweep ------------------------------------------------------------------------------------
def _pair(p) -> dict:
    return {"p50": p.p50, "p99": p.p99}


def _sweep(args) -> None:
    workload = workload_from(args)
    cost, pipeline, seated_by = hardware_from(args)
    policy = get_policy(args.policy)
    limits = limits_from(args, policy, workload=workload, cost=seated_by)
    budgets = sorted(set(args.budgets))
    check_iterations(workload, args.max_iterations)
    run = Run(workload=workload, policy=policy, cost=cost, budget=budgets[0], limits=limits,
              pipeline=pipeline)
    caps = check_work(work_of(*(replace(run, budget=b) for b in budgets)),
                      f"a sweep of {len(budgets)} budgets", remedy(args) + ", or "
                      "fewer --budgets")
    result = sweep(run, budgets, tbt_slo_s=args.tbt_slo, caps=dict(zip(budgets, caps)))
    marks = {d.budget: d.engine for d in result.defaults}
    rows, payload = [], []
    # --chunking dynamic: whose rule it is and its target at each budget, as simulate notes it
    sized = {pt.budget: chunking_note(replace(run, budget=pt.budget)) for pt in result.points}
    for pt in result.points:
        m = pt.metrics
        payload.append({
            "budget": pt.budget, "ttft_s": _pair(m.ttft_s), "tbt_s": _pair(m.tbt_s),
            "tpot_s": _pair(m.tpot_s), "throughput_tokens_per_s": m.throughput_tokens_per_s,
            "iterations": m.iterations, "median_delay_s": pt.median_delay_s,
            "preemptions": m.preemptions, "fixed_share": pt.fixed_share,
            "overhead_dominated": pt.overhead_dominated, "chunking_inactive": pt.chunking_inactive,
            "split_prompts": pt.split_prompts, "output_tokens": pt.output_tokens,
            "makespan_s": m.makespan_s, "scheduled_tokens": pt.scheduled_tokens,
            "reread_tokens": pt.reread_tokens, "busy_s": pt.busy_s,
            "offline_budget": pt is result.points[-1],
            "meets_tbt_slo": None if result.tbt_slo_s is None else pt.meets_tbt(result.tbt_slo_s),
            "recommended": pt.budget == result.recommended,
            "engine_default": [d.engine for d in result.defaults if d.budget == pt.budget],
            "notes": [*pt.notes, *([NO_SECOND_TOKEN] if math.isnan(m.tbt_s.max) else []),
                      *filter(None, [sized[pt.budget]])]})
        if pt.classes:
            payload[-1]["classes"] = {name: c.to_json() for name, c in pt.classes.items()}
        if pt.stage_figures:
            payload[-1].update(pipeline_payload(pt.stage_figures))
        flags = [label for label, on in (("overhead-dominated", pt.overhead_dominated),
                                         ("no split", pt.chunking_inactive),
                                         ("recommended", pt.budget == result.recommended),
                                         (f"{marks.get(pt.budget)} default", pt.budget in marks))
                 if on]
        rows.append((f"{pt.budget:,}", fmt_seconds(m.ttft_s.p50), fmt_seconds(m.ttft_s.p99),
                     fmt_seconds(m.tbt_s.p50), fmt_seconds(m.tbt_s.p99), fmt_seconds(m.tpot_s.p50),
                     f"{m.throughput_tokens_per_s:,.0f}", f"{m.iterations:,}", *bubble_cell(pt),
                     ", ".join(flags)))
    header = ("budget", "TTFT p50", "TTFT p99", "TBT p50", "TBT p99", "TPOT p50", "tokens/s",
              "iterations", *bubble_header(pipeline), "notes")
    lines = [f"{POLICIES[result.policy].label} on {described(workload)} ({len(workload):,} "
             f"requests), {cost.gpu.name}, {cost.model.name}, {cost.mode}",
             *([stages_words(pipeline, cost)] if pipeline else []),
             table(rows, header, args.wide),
             f"recommended budget: {result.reason}",
             *([result.offline] if result.offline else []),
             *(f"{d.engine} default {d.flag} {d.budget:,} ({d.rule}; {d.source})"
               for d in result.defaults),
             "overhead-dominated: t(1 token) / t(budget tokens) > 1/2 (the fixed cost of an "
             "iteration is most of it); no split: budget >= longest prompt + peak decodes",
             *([BUBBLE_WORDS] if pipeline else [])]
    lines += [f"note at budget {pt.budget:,}: {n}" for pt in result.points
              for n in (*pt.notes, *filter(None, [sized[pt.budget]]))]
    if any(NO_SECOND_TOKEN in p["notes"] for p in payload):
        lines.append(f"note: {NO_SECOND_TOKEN}")
    emit(args, payload, "\n".join(lines))


def register_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="one workload at many token budgets: the TTFT/TBT frontier",
                       description=paragraph("""
        Run one workload under one scheduler once per token budget and print the frontier: TTFT
        and TBT percentiles, TPOT, throughput (output tokens/s) and iterations per budget. With
        --tbt-slo it recommends the largest budget whose p99 TBT meets the SLO (Sarathi-Serve's
        recipe); it also marks vLLM's and SGLang's default budgets for the GPU, budgets where the
        per-iteration fixed cost dominates, and budgets large enough that no prompt is split.
        The workload flags are simulate's, and so are --pp, --pp-layers and --pp-link: each
        budget's run then goes through the pipeline stages and the table adds its bubble fraction.
        The whole sweep's estimated work must fit the command's budget (60 s, 1.5 GB)."""))
    add_run_args(p, budget=None)
    number_list(p, "--budgets", "token budgets per iteration, decodes included", unit="tokens",
                default=DEFAULT_BUDGETS, low=1, high=KNOBS["budget"].high, most=MAX_BUDGETS)
    number(p, "--tbt-slo", "p99 TBT SLO: recommend the largest budget that meets it",
           unit="s", default=None, low=1e-6, high=3600, shown_default="none")
    add_pipeline_args(p)
    p.set_defaults(func=_sweep)


# --- capacity ---------------------------------------------------------------------------------
def _result_json(r) -> dict:
    """One search as JSON; an undefined capacity left out (NaN), the notes say why."""
    return {"name": r.policy, "budget": r.budget,
            "capacity_qps": math.nan if r.undefined else r.capacity_qps,
            "failed_qps": r.failed_qps, "ceiling_qps": r.ceiling_qps, "reason": r.reason,
            "points": [{"qps": pt.qps, "p99_tbt_s": pt.p99_tbt_s,
                        "median_delay_s": pt.median_delay_s, "sustained": pt.sustained,
                        **point_stages(pt)} for pt in r.points]}


def _cut_short(r) -> str:
    """The note on a search a cap ended early: what it leaves of the capacity."""
    return r.cut_short_words() + (" (shown as —, left out of --json)" if r.undefined else "")


def _ratio(result) -> str:
    return f"{result.ratio:.2f}x" if result.ratio is not None else \
        f"undefined ({result.why_no_ratio})"


def _tbt_slo(args) -> float:
    if (args.tbt_slo is None) == (args.slo is None):
        raise InputError("give one of --tbt-slo SECONDS or --slo PRESET "
                         f"({', '.join(SLO_PRESETS)})")
    return args.tbt_slo if args.slo is None else get_slo_preset(args.slo).tbt_slo_s


def _capacity(args) -> None:
    if args.goodput:
        capacity_goodput(args)
        return
    refuse_goodput_flags(args)
    cost, pipeline, seated_by = hardware_from(args)
    slo = _tbt_slo(args)
    refuse_unused_lengths(args)
    policy, baseline = get_policy(args.policy), get_policy(args.baseline)
    limits = limits_from(args, policy, baseline, cost=seated_by)
    # without --max-seqs each engine seats its own default number of requests
    baseline_limits = limits if args.max_seqs is not None else replace(
        limits, max_seqs=default_max_seqs(baseline, seated_by))
    workload_at = partial(poisson_from, args, args.requests)
    sample = workload_at(1.0)   # bad lengths fail here, before any search
    check_iterations(sample, args.max_iterations)
    baseline_budget = default_baseline_budget(baseline, args.budget, sample) \
        if args.baseline_budget is None else args.baseline_budget
    searches = ((policy, args.budget, limits), (baseline, baseline_budget, baseline_limits))
    estimates = {(spec.name, b): estimate_run(Run(workload=sample, policy=spec, cost=cost,
                                                  budget=b, limits=spec_limits, pipeline=pipeline))
                 for spec, b, spec_limits in searches}
    runs = CommandEffort(tuple(estimates[spec.name, b] for spec, b, _ in searches))
    account = RunAccount(replace(CLI_ALLOWANCE, seconds=CAPACITY_SHARE * CLI_ALLOWANCE.seconds,
                                 bytes=CLI_ALLOWANCE.bytes - PROCESS_BYTES),
                         estimates, windowed=cost.model.sliding_window > 0)
    shorter = "" if args.mix is not None or args.lengths in OWN_LENGTHS else \
        " or a smaller --output-tokens"
    runs.check_most(account.allowance, "one run of each policy", f"use fewer --requests{shorter}, or "
                    "a lower --max-iterations (each run stops there)" + fewer_stages(args))
    result = compare_capacity(
        workload_at, cost, policy=policy, budget=args.budget, baseline=baseline,
        baseline_budget=baseline_budget, tbt_slo_s=slo, delay_slo_s=args.delay_slo,
        limits=limits, max_runs=args.max_runs, may_start=account.may_start,
        finished=account.finished, baseline_limits=baseline_limits, pipeline=pipeline)
    both = (result.policy, result.baseline)
    untimed = any(math.isnan(pt.p99_tbt_s) for r in both for pt in r.points)
    notes = [*([NO_SECOND_TOKEN] if untimed else []), *(_cut_short(r) for r in both if r.cut_short),
             *chunking_notes(sample, cost, searches, pipeline)]
    payload = {"policy": _result_json(result.policy), "baseline": _result_json(result.baseline),
               "ratio": result.ratio, "tbt_slo_s": slo, "delay_slo_s": args.delay_slo,
               "requests": args.requests, "notes": notes,
               **(stages_payload(pipeline) if pipeline else {})}
    seats = (limits.max_seqs, baseline_limits.max_seqs)
    payload["policy"]["max_seqs"], payload["baseline"]["max_seqs"] = seats
    rows = [(r.policy, f"{r.budget:,}", f"{seated:,}", "—" if r.undefined else f"{r.capacity_qps:.3g}",
             r.reason) for r, seated in zip(both, seats)]
    curve = [(r.policy, f"{pt.qps:.3g}", fmt_seconds(pt.p99_tbt_s), fmt_seconds(pt.median_delay_s),
              *bubble_cell(pt), "yes" if pt.sustained else "no")
             for r in both for pt in r.points]
    text = "\n".join([
        f"capacity = highest Poisson QPS with p99 TBT <= {fmt_seconds(slo)} and median scheduling "
        f"delay <= {fmt_seconds(args.delay_slo)} ({args.requests:,} requests, "
        f"{lengths_words(args)}; {cost.gpu.name}, {cost.model.name}, {cost.mode})",
        *([stages_words(pipeline, cost)] if pipeline else []),
        table(rows, ("policy", "budget", "max running", "capacity QPS", "why"), args.wide),
        f"capacity ratio {result.policy.policy} / {result.baseline.policy}: {_ratio(result)}", "",
        table(curve, ("policy", "QPS", "p99 TBT", "median delay", *bubble_header(pipeline),
                      "meets both"), args.wide),
        *([BUBBLE_WORDS] if pipeline else []),
        *(f"note: {n}" for n in payload["notes"])])
    emit(args, payload, text)


def register_capacity(sub) -> None:
    p = sub.add_parser("capacity", help="highest Poisson rate within the TBT and delay SLOs, "
                                        "chunked vs unchunked", description=paragraph("""
        Sarathi-Serve's capacity of a scheduler and of a baseline: the highest Poisson arrival
        rate (requests/s) at which p99 TBT meets --tbt-slo (or an --slo preset) and the median
        scheduling delay (arrival to first scheduled) is at most --delay-slo, found by bisection
        from the compute ceiling, and the ratio of the two capacities. Every rate runs the same
        seeded --requests. Each policy's search takes at most --max-runs runs, and both stop
        early if one more run could overrun 40 s of estimated work, two thirds of the command's
        60 s budget (the reason says so). With --pp both searches run on pipeline stages (tp x pp
        GPUs), as simulate --pp does, and the curve adds each rate's bubble fraction."""))
    add_hardware_args(p)
    add_policy_args(p, budget=512, max_iterations=MAX_ITERATIONS)
    add_length_args(p)
    add_pipeline_args(p)
    p.set_defaults(func=_capacity)
    choice(p, "--baseline", "the policy compared against", POLICIES, default="vllm-v0")
    number(p, "--baseline-budget", "the baseline's budget", unit="tokens", default=None, low=1,
           high=KNOBS["budget"].high, whole=True, shown_default="--budget if the baseline chunks; "
           "unchunked: max(longest request, 2,048), vLLM V0's max(max_model_len, 2048)")
    number(p, "--tbt-slo", "p99 TBT SLO", unit="s", default=None, low=1e-6, high=3600,
           shown_default="none: give it or --slo")
    choice(p, "--slo", "an SLO preset (Sarathi-Serve's strict and relaxed)", SLO_PRESETS,
           default=None, shown_default="none")
    number(p, "--delay-slo", "median scheduling delay SLO (Sarathi-Serve: 2)", unit="s",
           default=DELAY_SLO_S, low=1e-3, high=1e5)
    number(p, "--requests", "requests per run", unit="requests", default=1000, low=1,
           high=MAX_CAPACITY_REQUESTS, whole=True)
    number(p, "--max-runs", "most simulations per policy", unit="runs", default=MAX_RUNS, low=1,
           high=100, whole=True)
    add_goodput_args(p)
