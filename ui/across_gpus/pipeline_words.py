"""The Pipeline page's words (no Streamlit): each schedule's bubble with its arithmetic, which
schedule idles the stages least and by how much, what makes its micro-batches uneven, and the
same GPUs as one tensor-parallel group against tensor × pipeline parallelism; each sentence
chosen by what the runs measured, so it holds away from the defaults too.

Every number is read from the runs: a pipelined run's `StageSchedule` (sim/serving/pipeline.py:
each micro-batch's start and end on every stage, the working time, each stage's busy time),
its totals (`StageFigures`, the bubble sweep and capacity print too) and its merged Trace's token
times (sim/serving/metrics.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sim.errors import InputError
from sim.presets.hardware import Gpu
from sim.presets.links import LINKS, Link, gpu_link
from sim.serving.metrics import request_times, token_gaps
from sim.serving.pipeline import StageFigures, StageSchedule
from sim.serving.trace import Trace
from sim.units import fmt_percent, fmt_seconds, seconds_shown, shown_same

from ..shell.glossary import term

UNCHUNKED, FIXED, DYNAMIC = "unchunked", "fixed chunks", "dynamic chunks"
SCHEDULES = (UNCHUNKED, FIXED, DYNAMIC)
LISTED_STAGES = 4   # more stages than this: their busy times are summed, not listed
NEAR_POINTS = 0.5   # schedules whose bubble fractions differ by less are "nearly alike"
# One node's GPU-to-GPU domain: the HGX A100, H100 and B200 boards and AMD's MI300X platform
# join 8 GPUs by NVLink or Infinity Fabric (NVIDIA HGX and AMD Instinct platform datasheets)
NODE_GPUS = 8
NODE_LINKS = ("nvlink3", "nvlink4", "nvlink5", "infinity-fabric")


def busy_terms(b: StageFigures) -> tuple[float, ...]:
    """The busy times the idle sum subtracts: each stage's, or their total past LISTED_STAGES."""
    return b.busy_s if b.stages <= LISTED_STAGES else (sum(b.busy_s),)


def sum_digits(b: StageFigures) -> tuple[int, int]:
    """The significant figures of the bubble and of the times it is the difference of, fewest
    first, such that the sums worked with the numbers as shown give the bubble and the fraction
    as shown: the bubble is a small difference of large times, so they need more figures."""
    for idle_digits in range(4, 8):
        idle = fmt_seconds(b.bubble_s, idle_digits)
        for digits in range(idle_digits, idle_digits + 6):
            working = seconds_shown(fmt_seconds(b.working_s, digits))
            busy = sum(seconds_shown(fmt_seconds(t, digits)) for t in busy_terms(b))
            if fmt_seconds(b.stages * working - busy, idle_digits) == idle and (
                    not working or fmt_percent(seconds_shown(idle) / (b.stages * working)) ==
                    fmt_percent(b.bubble_fraction)):
                return idle_digits, digits
    return idle_digits, digits


def idle_sum(b: StageFigures) -> str:
    """stage idle time = stages × working time − busy, with this run's numbers (as many figures
    as make the shown numbers add up: sum_digits)."""
    idle_digits, digits = sum_digits(b)
    terms = [fmt_seconds(t, digits) for t in busy_terms(b)]
    busy = " + ".join(terms) if b.stages <= LISTED_STAGES else f"the {b.stages} stages' {terms[0]}"
    return (f"{b.stages} × {fmt_seconds(b.working_s, digits)} − ({busy}) = "
            f"{fmt_seconds(b.bubble_s, idle_digits)}")


def fraction_sum(b: StageFigures) -> str:
    """fraction = idle / (stages × working time), with this run's numbers, as idle_sum writes
    them."""
    idle_digits, digits = sum_digits(b)
    return (f"{fmt_seconds(b.bubble_s, idle_digits)} / ({b.stages} × "
            f"{fmt_seconds(b.working_s, digits)}) = {fmt_percent(b.bubble_fraction)}")


def arithmetic_line(name: str, b: StageFigures) -> str:
    """One schedule's bubble, both sums written out."""
    return (f"{name.capitalize()}: stage idle time = stages × working time − busy = "
            f"{idle_sum(b)}; fraction = idle / (stages × working time) = {fraction_sum(b)}.")


def with_name(name: str) -> str:
    """A schedule after its share: "unchunked", "with fixed chunks"."""
    return name if name == UNCHUNKED else f"with {name}"


WORKING = (f"{term('working_time')} (the time at least one micro-batch is in the "
           "pipeline)")


def same_micro_batches(schedules: Mapping[str, StageSchedule]) -> bool:
    """Whether every schedule ran the same micro-batches, token for token (no chunk split the
    prompt: it fits in one)."""
    first, *rest = schedules.values()
    return all(np.array_equal(first.prefill_tokens, s.prefill_tokens) and
               np.array_equal(first.decode_tokens, s.decode_tokens) for s in rest)


def verdict(bubbles: Mapping[str, StageFigures], same: bool) -> str:
    """Which schedule idles the stages least here, and by how much against each other one
    (`same`: whether they ran the same micro-batches, same_micro_batches)."""
    first = next(iter(bubbles.values()))
    if first.stages == 1:
        return ("With one stage there is no pipeline and no bubble: each schedule is the "
                "one-engine run. Add stages (pp) to see them idle.")
    order = sorted(bubbles, key=lambda name: bubbles[name].bubble_fraction)
    best = order[0]
    shown = {name: fmt_percent(b.bubble_fraction) for name, b in bubbles.items()}
    others = ", ".join(f"{shown[name]} {with_name(name)}" for name in order[1:])
    if len(set(shown.values())) == 1:
        why = (": they run the same micro-batches, as no chunk splits the prompt (it fits in "
               "one)" if same else "")
        return (f"Every schedule idles its stages alike here, {shown[best]} of the stages' "
                f"{WORKING}{why}.")
    if shown[best] == shown[order[1]]:
        tied = " and ".join(n for n in order if shown[n] == shown[best])
        return (f"**{tied.capitalize()} idle the stages least here, alike:** {shown[best]} of "
                f"the stages' {WORKING}, against {shown[order[-1]]} {with_name(order[-1])}.")
    lead = f"{best} idle" if best != UNCHUNKED else "unchunked micro-batches idle"
    gap = (bubbles[order[1]].bubble_fraction - bubbles[best].bubble_fraction) * 100
    near = ", nearly alike" if gap < NEAR_POINTS else ""
    return (f"**{lead.capitalize()} the stages least here:** {shown[best]} of the stages' "
            f"{WORKING}, against {others}: {gap:.3g} percentage points below the next{near}.")


def pace_words(schedule: StageSchedule, first_runs_cpu: bool) -> str:
    """Which stage sets the pace: the busiest, against the least busy, and what it carries
    beyond its layers ('' with one stage)."""
    if schedule.stages == 1 or not schedule.working_s:
        return ""
    busy = schedule.busy_s
    most, least = int(np.argmax(busy)), int(np.argmin(busy))
    if shown_same(float(busy[most]), float(busy[least])):
        return (f"With fixed chunks every stage is busy alike ({fmt_seconds(float(busy[most]))}): "
                "the bubbles come from the micro-batches' uneven times and the sends.")
    layers = schedule.layers
    why = [f"it holds {layers[most]} layers to stage {least + 1}'s {layers[least]}"
           ] if layers[most] > layers[least] else []
    why += ["it also runs the engine's CPU work per micro-batch"] if most == 0 and first_runs_cpu \
        else []
    why += ["it also computes the LM head for every micro-batch"] \
        if most == schedule.stages - 1 else []
    extra = f" ({'; '.join(why)})" if why else ""
    return (f"With fixed chunks, stage {most + 1} is the busiest, {fmt_seconds(float(busy[most]))}"
            f" of the {fmt_seconds(schedule.working_s)} working time{extra}, "
            f"against {fmt_seconds(float(busy[least]))} on stage {least + 1}: the pipeline runs "
            "at the busiest stage's pace and the others wait for it.")


def unevenness(name: str, schedule: StageSchedule) -> str:
    """How uneven a schedule's micro-batches are: its longest on a stage against the median."""
    took = (schedule.end_s - schedule.start_s).max(axis=1)
    if not len(took):
        return ""
    longest = int(np.argmax(took))
    median = float(np.median(took))
    carries = (f"{int(schedule.prefill_tokens[longest]):,} prompt tokens and "
               f"{int(schedule.decode_tokens[longest]):,} decodes")
    ratio = took[longest] / median if median > 0 else float("nan")
    return (f"{name.capitalize()}: the longest micro-batch ({carries}) holds a stage "
            f"{fmt_seconds(float(took[longest]))}, {ratio:.3g}× the median micro-batch's "
            f"{fmt_seconds(median)}.")


def dynamic_words(policy_label: str, policy: str, stages: int, fitted: bool) -> str:
    """Whose rule dynamic chunks are here, and whether they moved at all."""
    if not fitted:
        return ("Dynamic chunks stay fixed here: the fit of prefill time against length has no "
                "positive quadratic term on this GPU and model, so, as SGLang does then, every "
                "chunk is what the budget leaves.")
    whose = ("SGLang's own rule at more than one stage (--enable-dynamic-chunking)"
             if policy == "sglang" and stages > 1 else
             f"a what-if for {policy_label} (SGLang 0.5.23 does this only for its own "
             "scheduler, with pp > 1 and --enable-dynamic-chunking)")
    return (f"Dynamic chunks are {whose}: each later chunk of a prompt is sized so its time "
            "stays level as the prompt's prefix grows.")


@dataclass(frozen=True)
class Setup:
    """One way to spend the same GPUs, as its run measured it."""
    name: str
    gpus: int
    step_median_s: float    # a micro-batch on its slowest stage (an iteration with one stage)
    step_longest_s: float
    bubble_fraction: float
    ttft_s: float           # the new requests' median TTFT
    tbt_p99_s: float        # every gap between two tokens of a request, its 99th percentile


def setup_of(name: str, gpus: int, trace: Trace, schedule: StageSchedule) -> Setup:
    took = (schedule.end_s - schedule.start_s).max(axis=1)
    ttft = request_times(trace).ttft_s
    ttft = ttft[~np.isnan(ttft)]
    gaps, _ = token_gaps(trace)
    return Setup(name, gpus, float(np.median(took)) if len(took) else float("nan"),
                 float(took.max()) if len(took) else float("nan"), schedule.bubble_fraction,
                 float(np.median(ttft)) if len(ttft) else float("nan"),
                 float(np.percentile(gaps, 99)) if len(gaps) else float("nan"))


def setup_rows(setups: tuple[Setup, ...]) -> list[dict[str, str]]:
    """The side-by-side table's rows, each figure as the words write it."""
    return [{"setup": s.name, "GPUs": f"{s.gpus}",
             "micro-batch on a stage, median (one stage: an iteration)":
                 fmt_seconds(s.step_median_s),
             "longest": fmt_seconds(s.step_longest_s), "bubble": fmt_percent(s.bubble_fraction),
             "TTFT (median of new requests)": fmt_seconds(s.ttft_s),
             "TBT p99": fmt_seconds(s.tbt_p99_s)} for s in setups]


def setups_verdict(tp: Setup, pp: Setup) -> str:
    """What splitting the layers instead of every matrix buys and costs here."""
    lead = (f"On the same {tp.gpus} GPUs, {pp.name} runs each micro-batch on a stage in "
            f"{fmt_seconds(pp.step_median_s)} (median) where {tp.name} runs a whole iteration in "
            f"{fmt_seconds(tp.step_median_s)}")
    if shown_same(pp.tbt_p99_s, tp.tbt_p99_s):
        tbt = f"the same p99 gap between tokens, {fmt_seconds(tp.tbt_p99_s)}"
    else:
        smoother = tp if tp.tbt_p99_s < pp.tbt_p99_s else pp
        rougher = pp if smoother is tp else tp
        tbt = (f"a p99 gap between tokens of {fmt_seconds(smoother.tbt_p99_s)} with "
               f"{smoother.name} against {fmt_seconds(rougher.tbt_p99_s)} with {rougher.name}")
    if not np.isfinite(tp.ttft_s) or shown_same(pp.ttft_s, tp.ttft_s):
        ttft = ""
    else:
        sooner = tp if tp.ttft_s < pp.ttft_s else pp
        later = pp if sooner is tp else tp
        ttft = (f"; the first token comes sooner with {sooner.name} "
                f"({fmt_seconds(sooner.ttft_s)} against {fmt_seconds(later.ttft_s)})")
    return (f"{lead}; the pipeline idles {fmt_percent(pp.bubble_fraction)} of its stages' "
            f"working time. The streams see {tbt}{ttft}.")


def links_words(gpu: Gpu, stage_link: Link | None, tp: int, pp: int, tensor_ran: bool) -> str:
    """Why the stages may take the link picked on the page while tensor parallelism takes the
    GPU's own, and, past one node's GPU-to-GPU domain on a node's link, that the figures are a
    best case (`tensor_ran`: whether TP(tp × pp) ran beside the stages)."""
    gpus = tp * pp
    try:
        own = gpu_link(gpu)
    except InputError:
        own = None
    said = ("Tensor parallelism all-reduces the activations twice in every layer, so engines "
            "keep its GPUs in one node on their own link: "
            + (f"{own.name} on {gpu.name}." if own else
               f"the {gpu.name} preset has none, so no TP{gpus} runs here."))
    if stage_link is not None:
        said = (f"The stages send each micro-batch's activations on to the next stage over the "
                f"link picked above, {stage_link.name}: one send per stage boundary, so stages "
                f"may sit in different nodes. {said}")
    on_node = []
    if own and own.id in NODE_LINKS:
        on_node += [(f"TP{gpus}", own)] if tensor_ran else []
        on_node += [(f"each stage's TP{tp}", own)] if tp > NODE_GPUS else []
    if stage_link is not None and stage_link.id in NODE_LINKS:
        on_node.append(("the stages", stage_link))
    if gpus <= NODE_GPUS or not on_node:
        return said
    if len({link.id for _, link in on_node}) == 1:
        priced = f"{' and '.join(who for who, _ in on_node)} over {on_node[0][1].name}"
    else:
        priced = " and ".join(f"{who} over {link.name}" for who, link in on_node)
    return (f"{said} One node joins at most {NODE_GPUS} GPUs by such a link, not {gpus}: "
            f"{priced} assume one domain of {gpus}, so those figures are a best case (across "
            f"nodes they would go over the network, e.g. {LINKS['ib-ndr'].name}).")
