"""`capacity --goodput`: DistServe's goodput as capacity's criterion, in capacity's shape.

Goodput (sim/studies/capacity.py `GoodputSlo`): the highest Poisson rate at which at least
--slo-attainment of the requests meet both --ttft-slo and --tpot-slo. With --disaggregate X:Y it
compares that split with the same policy colocated on the same X + Y GPUs ((X + Y) / tp
instances, requests round-robin), per GPU and in total; without, --policy with --baseline, one
instance of --tp GPUs each.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from functools import partial

from sim.effort.caps import CLI_ALLOWANCE, CommandEffort, RunAccount
from sim.effort.estimate import estimate_run
from sim.errors import InputError
from sim.serving.policies import get_policy
from sim.serving.run import Run
from sim.studies.capacity import (
    GOODPUT_SHARE,
    GoodputSlo,
    compare_goodput,
    default_baseline_budget,
    find_goodput,
)
from sim.units import fmt_seconds

from .common import (
    PROCESS_BYTES,
    check_iterations,
    fewer_stages,
    hardware_from,
    lengths_words,
    limits_from,
    poisson_from,
    refuse_unused_lengths,
)
from .disaggregate import add_disaggregation_args, disaggregation_from
from .flags import number, refuse
from .output import emit, table
from .pipeline import (
    BUBBLE_WORDS,
    bubble_cell,
    bubble_header,
    chunking_notes,
    point_stages,
    stages_payload,
    stages_words,
)

# capacity's flags of the TBT criterion, which goodput takes the place of
TBT_CRITERION = ("tbt_slo", "slo", "delay_slo")


def add_goodput_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--goodput", action="store_true",
                   help="DistServe's goodput criterion in place of the TBT one: the highest rate "
                        "at which --slo-attainment of requests meet both --ttft-slo and "
                        "--tpot-slo (default off)")
    number(p, "--ttft-slo", "--goodput: each request's TTFT target", unit="s", default=None,
           low=1e-6, high=3600, shown_default="none: --goodput needs it")
    number(p, "--tpot-slo", "--goodput: each request's TPOT target (its mean gap between tokens)",
           unit="s", default=None, low=1e-6, high=3600, shown_default="none: --goodput needs it")
    number(p, "--slo-attainment", "--goodput: the share of requests that must meet both "
           "targets (DistServe: 0.9)", unit="fraction", default=GOODPUT_SHARE, low=1e-3, high=1)
    add_disaggregation_args(p)


def refuse_goodput_flags(args) -> None:
    """Without --goodput its flags (and --disaggregate's) do not apply."""
    refuse(args, ("ttft_slo", "tpot_slo", "slo_attainment", "disaggregate", "link",
                  "prefill_tp", "decode_tp", "layerwise_send"),
           why="without --goodput there is no goodput criterion; add --goodput")


def _slo(args) -> GoodputSlo:
    refuse(args, TBT_CRITERION, why="--goodput takes the place of the TBT criterion (its "
                                    "targets are --ttft-slo and --tpot-slo)")
    missing = [flag for flag, value in (("--ttft-slo", args.ttft_slo),
                                        ("--tpot-slo", args.tpot_slo)) if value is None]
    if missing:
        raise InputError(f"--goodput needs {' and '.join(missing)} SECONDS (DistServe's chatbot "
                         "targets for OPT-13B: --ttft-slo 0.25 --tpot-slo 0.1)")
    return GoodputSlo(args.ttft_slo, args.tpot_slo, args.slo_attainment)


def _json(found, gpus: int) -> dict:
    r = found.result
    return {"name": r.policy, "budget": r.budget, "gpus": gpus,
            "capacity_qps": math.nan if r.undefined else r.capacity_qps,
            "per_gpu_qps": math.nan if r.undefined else found.per_gpu,
            "failed_qps": r.failed_qps, "ceiling_qps": r.ceiling_qps, "reason": r.reason,
            "points": [{"qps": pt.qps, "slo_attainment": pt.slo_attainment,
                        "p99_tbt_s": pt.p99_tbt_s, "median_delay_s": pt.median_delay_s,
                        "sustained": pt.sustained, **point_stages(pt)} for pt in r.points]}


def capacity_goodput(args) -> None:
    slo = _slo(args)
    refuse_unused_lengths(args)
    split = disaggregation_from(args)
    cost, pipeline, seated_by = hardware_from(args)
    if split is not None:
        refuse(args, ("baseline", "baseline_budget"), why="--disaggregate compares the split "
               "with --policy colocated on the same GPUs")
        if pipeline is not None and pipeline.stages > 1:
            raise InputError(
                f"--disaggregate {args.disaggregate} with --pp {pipeline.stages}: pipeline stages "
                "inside a split's pools are not modelled; drop --pp to compare the split with "
                "colocated instances, or drop --disaggregate to compare --policy with --baseline "
                f"on {pipeline.stages} stages")
        # one stage is one engine: the split and its colocated twin run as without --pp, as
        # simulate --disaggregate --pp 1 does (a split's points have no stages to show)
        pipeline = None
    policy = get_policy(args.policy)
    baseline = get_policy(args.baseline)
    limits = limits_from(args, policy, cost=seated_by) if split is not None else limits_from(
        args, policy, baseline, cost=seated_by)
    workload_at = partial(poisson_from, args, args.requests)
    sample = workload_at(1.0)
    check_iterations(sample, args.max_iterations)
    run = Run(workload=sample, policy=policy, cost=cost, budget=args.budget, limits=limits,
              disaggregation=split, pipeline=pipeline)
    estimates = {(policy.name, args.budget): estimate_run(run)}
    baseline_budget = default_baseline_budget(baseline, args.budget, sample) \
        if args.baseline_budget is None else args.baseline_budget
    if split is None:
        estimates[baseline.name, baseline_budget] = estimate_run(
            replace(run, policy=baseline, budget=baseline_budget))
    account = RunAccount(replace(CLI_ALLOWANCE, seconds=2 / 3 * CLI_ALLOWANCE.seconds,
                                 bytes=CLI_ALLOWANCE.bytes - PROCESS_BYTES),
                         estimates, windowed=cost.model.sliding_window > 0)
    CommandEffort(tuple(estimates.values())).check_most(
        account.allowance, "one run of each setup", "use fewer --requests, or a lower "
        "--max-iterations (each run stops there)" + fewer_stages(args))
    search = dict(max_runs=args.max_runs, may_start=account.may_start, finished=account.finished)
    if split is not None:
        comparison = compare_goodput(workload_at, run, slo, **search)
        ours, theirs, ratio = comparison.disaggregated, comparison.colocated, comparison.ratio
        compared = (f"{split.prefill_gpus} prefill + {split.decode_gpus} decode GPUs against "
                    f"{theirs.gpus // cost.tp} colocated instance(s) of tp {cost.tp} on the same "
                    f"{theirs.gpus} GPUs")
    else:
        ours = find_goodput(workload_at, run, slo, **search)
        theirs = find_goodput(workload_at, replace(run, policy=baseline, budget=baseline_budget),
                              slo, **search)
        ratio = ours.per_gpu / theirs.per_gpu \
            if theirs.result.capacity_qps > 0 and not ours.result.undefined else None
        on = f"tp {cost.tp} x pp {pipeline.stages}" if pipeline else f"tp {cost.tp}"
        compared = f"{policy.name} against {baseline.name}, one instance of {on} each"
    both = (ours, theirs)
    # --chunking dynamic's note, as simulate's (a split's pools have their own tp: none there)
    searched = () if split is not None else ((policy, args.budget, limits),
                                             (baseline, baseline_budget, limits))
    notes = [*(r.result.cut_short_words() for r in both if r.result.cut_short),
             *chunking_notes(sample, cost, searched, pipeline)]
    payload = {"criterion": "goodput", "policy": _json(ours, ours.gpus),
               "baseline": _json(theirs, theirs.gpus), "ratio": ratio,
               "ttft_slo_s": slo.ttft_s, "tpot_slo_s": slo.tpot_s, "slo_attainment": slo.share,
               "requests": args.requests, "notes": notes,
               **(stages_payload(pipeline) if pipeline else {})}
    if split is not None:
        payload["disaggregation"] = {"prefill_gpus": split.prefill_gpus,
                                     "decode_gpus": split.decode_gpus,
                                     "link": split.link_for(cost).id}
    rows = [(r.result.policy, f"{r.gpus}", "—" if r.result.undefined else
             f"{r.result.capacity_qps:.3g}", "—" if r.result.undefined else f"{r.per_gpu:.3g}")
            for r in both]
    curve = [(r.result.policy, f"{pt.qps:.3g}", f"{pt.slo_attainment:.1%}",
              fmt_seconds(pt.p99_tbt_s), *bubble_cell(pt), "yes" if pt.sustained else "no")
             for r in both for pt in r.result.points]
    shown_ratio = f"{ratio:.2f}x" if ratio is not None else "undefined (a search proved no rate)"
    text = "\n".join([
        f"goodput = highest Poisson QPS with {slo.words()} ({args.requests:,} requests, "
        f"{lengths_words(args)}; {cost.gpu.name}, {cost.model.name}, {cost.mode}); {compared}",
        *([stages_words(pipeline, cost)] if pipeline else []),
        table(rows, ("setup", "GPUs", "goodput QPS", "per GPU"), args.wide),
        f"per-GPU goodput ratio {ours.result.policy} / {theirs.result.policy}: {shown_ratio}",
        *(r.result.reason for r in both), "",
        table(curve, ("setup", "QPS", "met both", "p99 TBT", *bubble_header(pipeline),
                      "meets the share"), args.wide),
        *([BUBBLE_WORDS] if pipeline else []),
        *(f"note: {n}" for n in notes)])
    emit(args, payload, text)
