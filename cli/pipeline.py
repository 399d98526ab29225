"""`simulate --pp P`: the flags of a pipelined run, the `Pipeline` they give, and what `simulate`
adds for one: the stages and their bubbles (sim/serving/pipeline.py)."""

from __future__ import annotations

import argparse

from sim.knobs import PIPELINE_KNOBS
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.chunking import fit_dynamic_chunks
from sim.serving.pipeline import Pipeline, StageSchedule, make_pipeline, parse_layers, stage_costs
from sim.serving.run import Run
from sim.units import fmt_percent, fmt_seconds

from .flags import knob_flag, refuse

OWN_FLAGS = ("pp_link", "pp_layers")


def add_pipeline_args(p: argparse.ArgumentParser) -> None:
    for name in ("pp", "pp_link"):
        knob_flag(p, PIPELINE_KNOBS[name])
    p.add_argument("--pp-layers", default=None, metavar="N,N,...",
                   help="each pipeline stage's layers, first stage first, adding up to the "
                        "model's layers (default: split evenly)")


def pipeline_from(args) -> Pipeline | None:
    """The flags' Pipeline; None where the command has no --pp or it was not given (its own
    flags then refused)."""
    if not hasattr(args, "pp"):
        return None
    if "pp" not in args.given:
        refuse(args, OWN_FLAGS, why="they shape pipeline stages; add --pp STAGES (2 or more)")
        return None
    layers = parse_layers(args.pp_layers) if args.pp_layers is not None else None
    return make_pipeline(get_model(args.model), get_gpu(args.gpu), args.pp, layers, args.pp_link)


def pipeline_payload(schedule: StageSchedule) -> dict:
    """simulate --json's pipeline keys: the stages, their idle stage-seconds and its share."""
    return {"pp_stages": schedule.stages, "pp_layers": list(schedule.layers),
            "pp_link": schedule.link.id if schedule.link else None,
            "pp_micro_batches": schedule.micro_batches, "pp_working_s": schedule.working_s,
            "pp_busy_s": schedule.busy_s.tolist(), "pp_bubble_s": schedule.bubble_s,
            "pp_bubble_fraction": schedule.bubble_fraction}


def pipeline_lines(schedule: StageSchedule, run: Run) -> list[str]:
    """The stages, and the bubble with its arithmetic."""
    p, cost = schedule.stages, run.cost
    link = f", activations over {schedule.link.name}" if schedule.link else ""
    busy = " + ".join(fmt_seconds(b) for b in schedule.busy_s)
    return [f"pipeline: {p} stage{'s' * (p > 1)} of {'/'.join(map(str, schedule.layers))} layers, "
            f"each on {cost.tp} {cost.gpu.name} GPU{'s' * (cost.tp > 1)} ({cost.tp * p} in all)"
            f"{link}; {schedule.micro_batches:,} micro-batches",
            f"bubble = stages x working time - busy = {p} x {fmt_seconds(schedule.working_s)} - "
            f"({busy}) = {fmt_seconds(schedule.bubble_s)} idle stage-time, "
            f"{fmt_percent(schedule.bubble_fraction)} of {p} x the working time (the time a "
            "micro-batch is in the pipeline)"]


def chunking_note(run: Run) -> str | None:
    """What --chunking dynamic is on this run: SGLang's own rule (sglang, pp > 1) or a what-if,
    and whether its fit priced a quadratic term (SGLang turns it off when not)."""
    if run.limits.chunking != "dynamic":
        return None
    stages = run.pipeline.stages if run.pipeline else 1
    first = stage_costs(run.cost.for_engine(run.policy.overhead),
                        run.pipeline or Pipeline((run.cost.model.layers,)))[0]
    fit = fit_dynamic_chunks(first, run.budget)
    if fit is None:
        return ("--chunking dynamic: the fit of prefill time against length has no positive "
                "quadratic term here, so, as SGLang does then, chunks stay fixed")
    own = run.policy.name == "sglang" and stages > 1
    whose = ("SGLang's own rule at pp > 1 (--enable-dynamic-chunking)" if own else
             "a what-if: SGLang 0.5.23 sizes chunks so only for sglang with pp > 1")
    return (f"--chunking dynamic is {whose}; fit f(l) = {fit.a:.3g}·l² + {fit.b:.3g}·l + "
            f"{fit.c:.3g} s, each later chunk sized to add f({run.budget:,}) − f(0) = "
            f"{fmt_seconds(fit.target_s)}")
