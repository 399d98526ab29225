"""The Pipeline page's words checked against its runs in random scenarios: every bubble, share,
time and verdict they state is recomputed here from the staged runs' raw arrays (each
micro-batch's start and end on every stage, the merged trace's token times), not from the
schedule's own properties or the words' code; and the figure's shaded gaps add up to the same
idle time. `make test` runs CLAIMS_EXAMPLES (default 12) scenarios."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from charts.pipeline import idle_intervals
from sim.errors import InputError
from sim.presets.links import FREE_LINK, LINKS, gpu_link
from sim.serving.engine import SimulationLimitError
from sim.units import fmt_percent, fmt_seconds
from ui.across_gpus import pipeline_words as words
from ui.across_gpus.pipeline import Setup
from ui.shell.controls import GPU_LINK
from ui.shell.scenario import scenario_from

from .claims_text import plain

EXAMPLES = int(os.environ.get("CLAIMS_EXAMPLES", "12"))
PERCENT = r"([\d.,]+%)"
TIME = r"([\d.,]+ (?:µs|ms|s))"


class Truth:
    """One staged run's bubble by hand: the working time as the union of each micro-batch's
    span from its first stage's start to its last stage's end; busy from the bars."""

    def __init__(self, schedule):
        spans = sorted(zip(schedule.start_s[:, 0], schedule.end_s[:, -1]))
        self.working, reach = 0.0, -np.inf
        for a, b in spans:
            self.working += max(0.0, b - max(a, reach))
            reach = max(reach, b)
        self.busy = (schedule.end_s - schedule.start_s).sum(axis=0)
        p = schedule.stages
        self.bubble = 0.0 if p == 1 else p * self.working - float(self.busy.sum())
        self.fraction = self.bubble / (p * self.working) if self.working else 0.0


@st.composite
def scenarios(draw) -> dict:
    return draw(st.fixed_dictionaries(dict(
        gpu=st.sampled_from(["illustrative", "h100-sxm", "a100-80gb", "l4"]),
        model=st.sampled_from(["dense-8b", "llama-3.1-8b", "mistral-7b"]),
        mode=st.sampled_from(["simple", "roofline", "calibrated"]),
        prompt=st.one_of(st.integers(16, 2048), st.integers(16, 16_384)),
        decodes=st.integers(0, 96), context=st.sampled_from([100, 1000, 4000]),
        budget=st.sampled_from([256, 576, 2048]),
        unchunked=st.sampled_from(["vllm-v0", "orca"]),
        chunked=st.sampled_from(["sarathi", "vllm-v1", "sglang"]),
        tp=st.sampled_from([1, 2]), pp=st.sampled_from([1, 2, 3, 4, 5]),   # 3, 5: uneven
        link=st.sampled_from([*LINKS, FREE_LINK.id]), chunking=st.sampled_from(["fixed", "dynamic"]))))


def runs(v: dict):
    """The page's setup and its three staged runs, or a rejection where the page refuses."""
    try:
        s = scenario_from({k: v[k] for k in ("gpu", "model", "mode", "prompt", "decodes",
                                             "context", "budget", "unchunked", "chunked", "tp")})
        setup = Setup(s, v["pp"], v["link"], v["chunking"])
        return setup, {name: setup.run(name).capped(20_000).staged() for name in words.SCHEDULES}
    except (InputError, SimulationLimitError):
        assume(False)


SECONDS_PER = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}


def read_time(text: str) -> tuple[float, float]:
    """A shown time (s), and half its last digit: how far off its rounding may be."""
    number, unit = text.split(" ")
    decimals = len(number.split(".")[1]) if "." in number else 0
    return float(number.replace(",", "")) * SECONDS_PER[unit], 0.5 * 10.0 ** -decimals * \
        SECONDS_PER[unit]


def rounds_to(value: float, text: str) -> bool:
    shown, half = read_time(text)
    return abs(value - shown) <= half * (1 + 1e-9) + 1e-15


def check_arithmetic(name: str, line: str, truth: Truth, fraction: str, stages: int) -> list[str]:
    """A bubble's two sums: every time shown is the run's, rounded, and the sums worked with the
    times as shown give the idle time and the fraction as shown."""
    m = re.search(rf"= {stages} × {TIME} − \((.*)\) = {TIME}; fraction = idle / \(stages × "
                  rf"working time\) = {TIME} / \({stages} × {TIME}\) = {PERCENT}\.$", line)
    if not m:
        return [f"{name}'s arithmetic is not written out: {line}"]
    working, busy, idle, idle_again, working_again, said_fraction = m.groups()
    terms = busy.removeprefix(f"the {stages} stages' ").split(" + ")
    busy_s = truth.busy if stages <= words.LISTED_STAGES else [truth.busy.sum()]
    if (idle_again, working_again, said_fraction) != (idle, working, fraction) or \
            len(terms) != len(busy_s) or not all(rounds_to(v, t) for v, t in zip(
                [truth.working, *busy_s, truth.bubble], [working, *terms, idle])):
        return [f"{name}'s arithmetic is not the run's: {line}"]
    worked = stages * read_time(working)[0] - sum(read_time(t)[0] for t in terms)
    if not rounds_to(worked, idle):
        return [f"{name}'s shown times give {worked} s, not {idle}: {line}"]
    if fmt_percent(read_time(idle)[0] / (stages * read_time(working)[0])) != fraction:
        return [f"{name}'s shown idle over its shown working time is not {fraction}: {line}"]
    return []


def check_bubbles(staged: dict) -> list[str]:
    truths = {name: Truth(r.schedule) for name, r in staged.items()}
    bubbles = {name: r.schedule.figures for name, r in staged.items()}
    problems = []
    stages = next(iter(staged.values())).schedule.stages
    schedules = [r.schedule for r in staged.values()]
    same = all(np.array_equal(schedules[0].prefill_tokens, one.prefill_tokens) and
               np.array_equal(schedules[0].decode_tokens, one.decode_tokens)
               for one in schedules[1:])
    verdict = plain(words.verdict(bubbles, words.same_micro_batches(
        {name: r.schedule for name, r in staged.items()})))
    if ("they run the same micro-batches" in verdict) != (same and stages > 1 and verdict
                                                           .startswith("Every schedule")):
        problems.append(f"the schedules ran {'the same' if same else 'other'} micro-batches, "
                        f"yet: {verdict}")
    if stages > 1 and "working time (the time at least one micro-batch is in the pipeline)" \
            not in verdict:
        problems.append(f"the working time is not defined where first used: {verdict}")
    if stages == 1:
        return [] if "no bubble" in verdict else [f"one stage, yet: {verdict}"]
    shown = {name: fmt_percent(t.fraction) for name, t in truths.items()}
    lead = verdict.split(" idle")[0].lower()     # the schedules that idle the stages least
    if len(set(shown.values())) == 1:
        lead = " ".join(truths) if verdict.startswith("Every schedule idles") else ""
    for name, truth in truths.items():
        said = f"{shown[name]} {words.with_name(name)}"
        if shown[name] not in verdict or (said not in verdict and name not in lead):
            problems.append(f"{name}'s {shown[name]} is not in the verdict: {verdict}")
        problems += check_arithmetic(name, plain(words.arithmetic_line(name, bubbles[name])),
                                     truth, shown[name], stages)
        schedule = staged[name].schedule
        drawn = sum(b - a for s in range(stages) for a, b in idle_intervals(schedule, s))
        if not np.isclose(drawn, truth.bubble, rtol=1e-9, atol=1e-9):
            problems.append(f"{name}: the figure's idle gaps add to {drawn}, not {truth.bubble}")
    least = min(truths, key=lambda n: truths[n].fraction)
    if len(set(shown.values())) > 1:
        if least not in lead:
            problems.append(f"the verdict names another schedule than {least}: {verdict}")
        m = re.search(r"([\d.]+) percentage points below the next", verdict)
        ranked = sorted(t.fraction for t in truths.values())
        if m and m.group(1) != f"{(ranked[1] - ranked[0]) * 100:.3g}":
            problems.append(f"the lead is not {ranked[1] - ranked[0]}: {verdict}")
    fixed = truths[words.FIXED]
    pace = plain(words.pace_words(staged[words.FIXED].schedule, first_runs_cpu=True))
    m = re.search(rf"stage (\d+) is the busiest, {TIME} of the {TIME} working time.*against "
                  rf"{TIME} on stage (\d+)", pace)
    if m and (int(m.group(1)) - 1 != int(np.argmax(fixed.busy))
              or m.group(2) != fmt_seconds(float(fixed.busy.max()))
              or m.group(3) != fmt_seconds(fixed.working)
              or m.group(4) != fmt_seconds(float(fixed.busy.min()))
              or int(m.group(5)) - 1 != int(np.argmin(fixed.busy))):
        problems.append(f"the busiest stage is not the run's: {pace}")
    if not m and "busy alike" not in pace:
        problems.append(f"the pace reads otherwise: {pace}")
    layers = staged[words.FIXED].schedule.layers
    most, least = int(np.argmax(fixed.busy)), int(np.argmin(fixed.busy))
    held = f"it holds {layers[most]} layers to stage {least + 1}'s {layers[least]}"
    if m and (held in pace) != (layers[most] > layers[least]):
        problems.append(f"stage {most + 1}'s {layers[most]} layers against {layers[least]}: {pace}")
    for name, r in staged.items():
        took = (r.schedule.end_s - r.schedule.start_s).max(axis=1)
        said = plain(words.unevenness(name, r.schedule))
        if len(took) and (fmt_seconds(float(took.max())) not in said
                          or f"median micro-batch's {fmt_seconds(float(np.median(took)))}"
                          not in said):
            problems.append(f"{name}: the longest or median micro-batch is not the run's: {said}")
    return problems


def check_setups(setup: Setup) -> list[str]:
    """TP(tp × pp) against TP(tp) × PP(pp): the TTFT and TBT said are the traces' own."""
    try:
        tensor = setup.tensor_run().capped(20_000).staged()
        split = setup.split_run().capped(20_000).staged()
    except (InputError, SimulationLimitError):
        return []
    gpus = setup.scenario.tp * setup.pp
    a = words.setup_of(f"TP{gpus}", gpus, tensor.trace, tensor.schedule)
    b = words.setup_of("split", gpus, split.trace, split.schedule)
    said = plain(words.setups_verdict(a, b))
    problems = []
    for one, run in ((a, tensor), (b, split)):
        t = run.trace
        gaps = np.concatenate([np.diff(t.token_s[t.token_offsets[i]:t.token_offsets[i + 1]])
                               for i in range(len(t.arrival_s))])
        p99 = fmt_seconds(float(np.percentile(gaps, 99))) if len(gaps) else "—"
        if p99 not in said:
            problems.append(f"{one.name}'s p99 gap {p99} is not said: {said}")
        first = t.token_s[t.token_offsets[:-1]] - t.arrival_s
        new = ~t.prefilled
        if new.any() and "first token comes sooner" in said \
                and fmt_seconds(float(np.median(first[new]))) not in said:
            problems.append(f"{one.name}'s TTFT is not the trace's: {said}")
    sooner = re.search(r"sooner with (TP\d+|split)", said)
    if sooner and (sooner.group(1) == "split") != (b.ttft_s < a.ttft_s):
        problems.append(f"the sooner first token is the other setup's: {said}")
    return problems


def check_links(setup: Setup, staged: dict) -> list[str]:
    """The links said are the runs' own, and the figures are called a best case exactly where
    more than one node's 8 GPUs are priced on a node's own link (NVLink, Infinity Fabric)."""
    s, pp = setup.scenario, setup.pp
    gpus, link = s.tp * pp, staged[words.FIXED].schedule.link
    try:
        tensor_ran = bool(setup.tensor_run().capped(20_000).staged())
    except (InputError, SimulationLimitError):
        tensor_ran = False
    said = plain(words.links_words(s.gpu, link, s.tp, pp, tensor_ran))
    try:
        own = gpu_link(s.gpu)
    except InputError:
        own = None
    node = {"nvlink3", "nvlink4", "nvlink5", "infinity-fabric"}
    problems = []
    if (link is not None) != (pp > 1) or (link is not None and f"picked above, {link.name}"
                                          not in said):
        problems.append(f"the stages' link is not the run's {link}: {said}")
    if own and f"on their own link: {own.name} on {s.gpu.name}" not in said:
        problems.append(f"tensor parallelism's link is not {own.name}: {said}")
    beyond = gpus > 8 and ((own and own.id in node and tensor_ran) or
                           (link is not None and link.id in node))
    if ("best case" in said) != bool(beyond):
        problems.append(f"{gpus} GPUs on {own} and {link}, yet: {said}")
    return problems


def check(v: dict) -> list[str]:
    setup, staged = runs(v)
    return check_bubbles(staged) + check_setups(setup) + check_links(setup, staged)


NAMED = [dict(gpu="illustrative", model="dense-8b", mode="simple", prompt=8192, decodes=64,
              context=4000, budget=576, unchunked="vllm-v0", chunked="sarathi", tp=1, pp=2,
              link="nvlink4", chunking="fixed"),
         # Sarathi-Serve's set-up, TP4 x PP2 on A100s over 100 GbE, calibrated
         dict(gpu="a100-80gb", model="llama-3.1-8b", mode="calibrated", prompt=4096, decodes=64,
              context=1024, budget=512, unchunked="vllm-v0", chunked="sglang", tp=4, pp=2,
              link="100gbe", chunking="dynamic"),
         dict(gpu="h100-sxm", model="llama-3.1-8b", mode="roofline", prompt=16_000, decodes=8,
              context=100, budget=2048, unchunked="orca", chunked="vllm-v1", tp=1, pp=4,
              link=GPU_LINK, chunking="fixed")]


@pytest.mark.parametrize("values", NAMED, ids=["defaults", "sarathi-serve's set-up", "four stages"])
def test_the_words_hold_in_named_scenarios(values):
    assert check(values) == []


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(scenarios())
def test_the_words_hold_in_random_scenarios(values):
    assert check(values) == []


def test_one_stage_is_said_to_have_no_bubble():
    setup, staged = runs(dict(NAMED[0], pp=1))
    verdict = words.verdict({n: r.schedule.figures for n, r in staged.items()}, same=False)
    assert "no pipeline and no bubble" in verdict
