"""The Traffic page's sentence on when a freeze shows in p50, p99 and the max gap, checked over
random traffic runs: the share of gaps over 100 ms, the p50, the p99 and the max recomputed from
the trace with numpy, and the regime the sentence picks true of them."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import SimulationLimitError
from sim.serving.policies import POLICIES, Limits
from sim.serving.run import Run
from sim.serving.workloads import burst, poisson
from sim.studies.stalls import stalls
from sim.units import fmt_percent, fmt_seconds
from ui.under_load.percentile_words import percentile_words

from .claims_text import TIME, number, plain


def truth(trace):
    """(gaps over 100 ms, gaps, p50, p99, max) from the token times, request by request."""
    gaps = np.concatenate([np.diff(trace.tokens_of(r)) for r in range(len(trace.arrival_s))]
                          or [np.zeros(0)])
    if not len(gaps):
        return 0, 0, None, None, None
    return (int(np.sum(gaps > 0.1)), len(gaps), float(np.percentile(gaps, 50)),
            float(np.percentile(gaps, 99)), float(gaps.max()))


def problems(text: str, trace) -> list[str]:
    over, count, p50, p99, top = truth(trace)
    if not count:
        return [] if "no gap to rank" in text else [f"no gaps, yet: {text}"]
    found = []
    said = {name: re.search(rf"{name} {TIME}", text) for name in ("p50", "p99")}
    for name, value in (("p50", p50), ("p99", p99)):
        if said[name] and said[name].group(1) != fmt_seconds(value):
            found.append(f"{name} is {fmt_seconds(value)}: {text}")
    shown_max = re.search(rf"(?:max gap,? (?:is )?|max ){TIME}", text)
    if shown_max is None or shown_max.group(1) != fmt_seconds(top):
        found.append(f"max gap {fmt_seconds(top)}: {text}")
    share = re.search(r"([\d.,]+%) of all gaps \(([\d,]+) of ([\d,]+)\)", text)
    if over and (share is None or share.groups() != (fmt_percent(over / count), f"{over:,}",
                                                      f"{count:,}")):
        found.append(f"{over} of {count} gaps are freezes: {text}")
    regime = ("none" if not over else "p50" if p50 > 0.1 else "p99" if p99 > 0.1 else
              "just over" if over / count > 0.01 else "hidden")
    marks = {"none": "no gap is a freeze", "p50": "even the median gap is one",
             "p99": "enough to reach the p99", "just over": "just over 1%, yet the p99",
             "hidden": "so the p99 stays put"}
    if marks[regime] not in text or sum(m in text for m in marks.values()) != 1:
        found.append(f"the regime is '{regime}' ({over} of {count} over, p50 {p50}, p99 {p99}): "
                     f"{text}")
    for name in ("p50", "p99"):
        if not said[name] and regime != "none":
            found.append(f"{name} not said: {text}")
    return found


@st.composite
def runs(draw):
    """A small traffic run: a Poisson stream or a burst beside streams, on a few GPUs, models,
    cost modes and policies (chunked and not), at any budget."""
    cost = CostModel(get_gpu(draw(st.sampled_from(["a100-80gb", "h100-sxm", "l4"]))),
                     get_model(draw(st.sampled_from(["llama-2-7b", "llama-3.1-8b"]))),
                     draw(st.sampled_from(["simple", "roofline"])))
    if draw(st.booleans()):
        workload = poisson(draw(st.integers(1, 60)), draw(st.floats(0.2, 30)),
                           prompt=draw(st.integers(1, 12000)), output=draw(st.integers(1, 200)),
                           seed=draw(st.integers(0, 99)))
    else:
        workload = burst(draw(st.integers(1, 4)), draw(st.integers(1, 12000)),
                         draw(st.integers(1, 64)), draw(st.integers(0, 48)),
                         draw(st.integers(1, 2000)), draw(st.integers(1, 200)))
    policy = draw(st.sampled_from(["vllm-v0", "sarathi", "vllm-v1", "orca"]))
    return Run(workload=workload, policy=POLICIES[policy], cost=cost,
               budget=draw(st.integers(64, 16384)), limits=Limits(max_iterations=20_000))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_each_sentence_is_true_of_its_run(run):
    try:
        trace = run.simulate()
    except (InputError, SimulationLimitError):   # what the page refuses or caps
        assume(False)
    text = plain(percentile_words(run.policy.label, stalls(trace)))
    assert problems(text, trace) == []


def test_a_freeze_below_one_percent_leaves_the_p99_and_moves_the_max():
    """The unchunked textbook burst: one long prefill among many short gaps."""
    cost = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"), "roofline")
    run = Run(workload=burst(1, 8192, 32, 16, 4000, 256), policy=POLICIES["vllm-v0"], cost=cost,
              budget=16384, limits=Limits())
    trace = run.simulate()
    text = plain(percentile_words("vLLM V0", stalls(trace)))
    over, count, _, p99, top = truth(trace)
    assert 0 < over / count <= 0.01 and p99 <= 0.1 < top, (over, count, p99, top)
    assert "so the p99 stays put" in text and problems(text, trace) == []
    assert number(re.search(r"\(([\d,]+) of", text).group(1)) == over
    wrong = text.replace(fmt_seconds(top), fmt_seconds(top * 2))
    assert problems(wrong, trace)


A100 = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"), "roofline")
# (workload, policy, budget, what the sentence must say): the regimes random runs seldom reach
NAMED = {
    "the median": (burst(4, 12000, 4, 16, 1000, 8), "sarathi", 8192, "even the median gap is one"),
    "the p99": (burst(1, 8000, 4, 8, 1000, 10), "sarathi", 8192, "enough to reach the p99"),
    "none": (burst(1, 8000, 4, 8, 1000, 10), "sarathi", 256, "no gap is a freeze"),
}


@pytest.mark.parametrize("name", NAMED)
def test_each_regime_in_a_named_run(name):
    workload, policy, budget, said = NAMED[name]
    trace = Run(workload=workload, policy=POLICIES[policy], cost=A100, budget=budget,
                limits=Limits()).simulate()
    text = plain(percentile_words(POLICIES[policy].label, stalls(trace)))
    assert said in text and problems(text, trace) == []
