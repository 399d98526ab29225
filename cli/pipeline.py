"""`simulate --pp P`: the flags of a pipelined run, the `Pipeline` they give, and what `simulate`
adds for one: the stages and their bubbles (sim/serving/pipeline.py)."""

from __future__ import annotations

import argparse

from sim.cost.iteration import CostModel
from sim.knobs import PIPELINE_KNOBS
from sim.presets.hardware import get_gpu
from sim.presets.links import get_link
from sim.presets.models import get_model
from sim.serving.chunking import fit_dynamic_chunks
from sim.serving.pipeline import (
    Pipeline,
    StageFigures,
    make_pipeline,
    parse_layers,
    stage_costs,
)
from sim.serving.run import Run
from sim.serving.workloads import Workload
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
        refuse(args, OWN_FLAGS, why="without --pp there are no pipeline stages; add --pp STAGES (2 or more)")
        return None
    layers = parse_layers(args.pp_layers) if args.pp_layers is not None else None
    return make_pipeline(get_model(args.model), get_gpu(args.gpu), args.pp, layers, args.pp_link)


# What a sweep's or a capacity search's bubble column is, beside its table.
BUBBLE_WORDS = ("bubble = idle stage-time / (stages x working time), idle stage-time = stages x "
                "working time - the stages' busy time, working time = the time at least one "
                "micro-batch is in the pipeline")


def stages_payload(pipeline: Pipeline) -> dict:
    """The stages as simulate --json names them, for a command whose runs all use them."""
    return {"pp_stages": pipeline.stages, "pp_layers": list(pipeline.layers),
            "pp_link": pipeline.link or None}


def pipeline_payload(stages: StageFigures) -> dict:
    """simulate --json's pipeline keys: the stages, their idle stage-seconds and its share."""
    return {"pp_stages": stages.stages, "pp_layers": list(stages.layers),
            "pp_link": stages.link.id if stages.link else None,
            "pp_micro_batches": stages.micro_batches, "pp_working_s": stages.working_s,
            "pp_busy_s": list(stages.busy_s), "pp_bubble_s": stages.bubble_s,
            "pp_bubble_fraction": stages.bubble_fraction}


def point_stages(point) -> dict:
    """A capacity point's pipeline keys (pipeline_payload's), none where it ran unpipelined."""
    return pipeline_payload(point.stage_figures) if point.stage_figures else {}


def bubble_header(pipeline: Pipeline | None) -> tuple[str, ...]:
    """The bubble column's header where the runs are pipelined, else no column."""
    return ("bubble",) if pipeline else ()


def bubble_cell(point) -> tuple[str, ...]:
    """A run's bubble fraction as its table cell (bubble_header's column)."""
    return (fmt_percent(point.stage_figures.bubble_fraction),) if point.stage_figures else ()


def stages_words(pipeline: Pipeline, cost: CostModel) -> str:
    """"pipeline: 2 stages of 40/40 layers, each on 4 A100 GPUs (8 in all), activations over
    ...": where the runs are served."""
    p = pipeline.stages
    link = f", activations over {get_link(pipeline.link).name}" if pipeline.link else ""
    return (f"pipeline: {p} stage{'s' * (p > 1)} of {'/'.join(map(str, pipeline.layers))} layers, "
            f"each on {cost.tp} {cost.gpu.name} GPU{'s' * (cost.tp > 1)} ({cost.tp * p} in all)"
            f"{link}")


def pipeline_lines(stages: StageFigures, run: Run) -> list[str]:
    """The stages, and the bubble with its arithmetic."""
    p = stages.stages
    busy = " + ".join(fmt_seconds(b) for b in stages.busy_s)
    return [f"{stages_words(run.pipeline, run.cost)}; {stages.micro_batches:,} micro-batches",
            f"bubble = stages x working time - busy = {p} x {fmt_seconds(stages.working_s)} - "
            f"({busy}) = {fmt_seconds(stages.bubble_s)} idle stage-time, "
            f"{fmt_percent(stages.bubble_fraction)} of {p} x the working time (the time a "
            "micro-batch is in the pipeline)"]


def chunking_notes(workload: Workload, cost: CostModel, searches, pipeline: Pipeline | None
                   ) -> list[str]:
    """chunking_note of each (policy, budget, limits) of `searches` that chunks, named by its
    policy (capacity's: a search runs one policy at one budget)."""
    notes = []
    for policy, budget, limits in searches:
        note = policy.chunked and chunking_note(Run(workload=workload, policy=policy, cost=cost,
                                                    budget=budget, limits=limits,
                                                    pipeline=pipeline))
        if note:
            notes.append(f"{policy.name}: {note}")
    return notes


def chunking_note(run: Run) -> str | None:
    """What --chunking dynamic is on this run: SGLang's own rule (sglang, pp > 1) or a what-if,
    and whether its fit priced a quadratic term (SGLang turns it off when not)."""
    if run.limits.chunking != "dynamic":
        return None
    stages = run.pipeline.stages if run.pipeline else 1
    first = stage_costs(run.cost.for_engine(run.policy.overhead), run.pipeline)[0]
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
