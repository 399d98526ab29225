"""Every claim the lab's words make, checked against the simulation in random scenarios.

Hypothesis draws scenarios (prompt, streams, budget, GPU, model, cost mode, the two policies),
renders what Home, the metric cards, the player's cue, the side-by-side notes, the tour's numbers
and the Worked example say about them, and checks each sentence that names a number, a ratio, a
count or a bound against the runs themselves (token times, iteration times, the cost model's
compute and memory times), computed here from the traces, not from the code under test.
`make test` runs CLAIMS_EXAMPLES (default 12) scenarios; `make fuzz-app` runs 300.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.errors import InputError
from sim.presets.hardware import GPUS
from sim.serving.engine import SimulationLimitError
from sim.serving.metrics import request_times, token_gaps
from sim.serving.policies import CHUNKED, UNCHUNKED
from sim.studies.worked_example import worked_example
from sim.units import fmt_seconds
from ui.learn import words, worked
from ui.shell import story
from ui.shell.scenario import scenario_from
from ui.teach import tour

from .claims_memory import check_memory
from .claims_text import STALL, TIME, plain, seconds
from .claims_traffic import check_burst, check_sweep

EXAMPLES = int(os.environ.get("CLAIMS_EXAMPLES", "12"))


class Truth:
    """What one lane's run did, read straight from its trace."""

    def __init__(self, trace):
        new = np.flatnonzero(~trace.prefilled)
        gaps, owner = token_gaps(trace)
        streams = trace.prefilled[owner]
        self.gaps = gaps[streams]
        self.streams = len(np.unique(owner[streams]))
        self.longest_wait = float(self.gaps.max()) if len(self.gaps) else math.nan
        self.frozen = len(np.unique(owner[streams][self.gaps > STALL]))
        carrying = np.unique(trace.chunk_iteration[np.isin(trace.chunk_request, new)])
        self.prompt_iterations = len(carrying)
        durations = trace.duration_s
        self.prompt_iteration = float(durations[carrying].max()) if len(carrying) else math.nan
        # the decode tokens beside each of the prompt's chunks: fewer once a stream has finished
        self.decodes_beside_chunks = set(trace.decode_tokens[carrying].tolist())
        top = carrying[np.argmax(durations[carrying])] if len(carrying) else None
        self.compute_bound = top is not None and trace.compute_s[top] > trace.memory_s[top]
        self.iterations = set(durations.tolist())
        self.ttft = float(request_times(trace).ttft_s[new[0]]) if len(new) else math.nan
        self.reread_tokens = int(trace.chunk_start[np.isin(trace.chunk_request, new)].sum())
        self.starved = trace.starved_iterations > 0


def shown_equal(text: str, value: float) -> bool:
    return not math.isnan(value) and text == fmt_seconds(value)


def check_times(text: str, allowed: list[float]) -> list[str]:
    """Every time the text shows is one the runs produced (no median no iteration takes)."""
    shown = {fmt_seconds(v) for v in allowed if v is not None and not math.isnan(v)}
    shown |= {"0 ms", "0.1 s"}   # no freeze; the source's "0.1 s feels instantaneous"
    return [f"{t!r} is no time of these runs" for t in re.findall(TIME, text) if t not in shown]


def check_changes(text: str) -> list[str]:
    """"falls from A to B (R× shorter)": the verb, the ratio and its direction agree."""
    problems = []
    for verb, a, b, ratio, way in re.findall(
            rf"(falls|rises) from {TIME} to {TIME} \(([\d.,]+)× (shorter|longer)\)", text):
        x, y = seconds(a), seconds(b)
        if (verb == "falls") != (y < x) or (way == "shorter") != (y < x):
            problems.append(f"'{verb} from {a} to {b} ({ratio}× {way})' points the wrong way")
        if f"{max(x, y) / min(x, y):,.3g}" != ratio and abs(max(x, y) / min(x, y)
                                                           - float(ratio)) > 0.02 * float(ratio):
            problems.append(f"{a} / {b} is not {ratio}×")
    return problems


def check_home(text: str, u: Truth, c: Truth) -> list[str]:
    problems = []

    def claim(ok: bool, what: str):
        if not ok:
            problems.append(what)

    intro = re.search(r"Top lane: (.*?)\. Bottom lane: (.*?), while (.*?)\.\n", text)
    if intro:
        for lane, said, truth in (("top", intro.group(1), u), ("bottom", intro.group(2), c)):
            claim("every stream freezes" not in said or truth.frozen == truth.streams > 0,
                  f"the intro's {lane} lane: every stream freezes, the run froze {truth.frozen}")
            claim(not re.search(r"too short to notice|keep ticking", said) or not truth.frozen,
                  f"the intro's {lane} lane: no freeze, the run froze {truth.frozen}")
            for n, m in re.findall(r"([\d,]+) of the ([\d,]+) streams freeze", said):
                claim((int(n.replace(",", "")), int(m.replace(",", ""))) == (truth.frozen,
                                                                           truth.streams),
                      f"the intro's {lane} lane: {n} of {m} froze, the run {truth.frozen} of "
                      f"{truth.streams}")
        claim(("in chunks" in intro.group(2)) == (c.prompt_iterations > 1),
              "the intro says the prompt is read in chunks where it is not, or the reverse")
        claim("grows" not in intro.group(3) or c.ttft > u.ttft, "the intro says the TTFT grows")
    headings = dict(re.findall(r"^(\d)\. (.*)$", text, re.MULTILINE))
    chapter_1 = text.split("Two kinds of work share each pass.")[1].split(f"2. {headings['2']}")[0]
    if "reads a new prompt" in chapter_1:
        says_compute = "so it is compute-bound" in chapter_1.split("Decode adds")[0]
        claim(says_compute == u.compute_bound,
              f"the prompt's pass is called {'compute' if says_compute else 'memory'}-bound; "
              f"its compute time {'>' if u.compute_bound else '<='} its memory time")
    prompt = re.search(r"all ([\d,]+) tokens at once", text)
    for tokens in re.findall(r"carries the prompt \(([\d,]+) prompt tokens", text):
        claim(int(tokens.replace(",", "")) <= int(prompt.group(1).replace(",", "")),
              f"the prompt's iteration is said to carry {tokens} tokens")
    longest = re.search(rf"their longest wait is (?:that iteration.*?= )?{TIME}", text)
    if longest:
        claim(shown_equal(longest.group(1), u.longest_wait),
              f"the unchunked longest wait is said to be {longest.group(1)}, the run's is "
              f"{fmt_seconds(u.longest_wait)}")
    chapter_2 = text.split(f"2. {headings['2']}")[1].split(f"3. {headings['3']}")[0]
    claim(not re.search(r"is the freeze|: a freeze", chapter_2) or u.frozen > 0,
          "chapter 2 shows a freeze where no stream froze")
    claim("no stream freezes" not in chapter_2 or u.frozen == 0,
          "chapter 2 says no stream freezes where some froze")
    claim(not re.search(r"over all of them|every user's reply stopped", chapter_2)
          or u.frozen == u.streams > 0, "chapter 2 says every stream froze where not all did")
    for c_n, m, u_n in re.findall(r"([\d,]+) of the ([\d,]+) streams freeze \(a gap over 100 ms\) "
                                  r"instead of ([\d,]+)", text):
        claim(tuple(int(n.replace(",", "")) for n in (c_n, u_n, m)) == (c.frozen, u.frozen, c.streams),
              f"'{c_n} of the {m} streams freeze instead of {u_n}': the runs freeze {c.frozen} and "
              f"{u.frozen} of {c.streams}")
    if "still freeze" in text:
        claim(c.frozen == u.frozen > 0, "'still freeze, as unchunked' with different counts")
    if "no stream freezes in either lane" in text:
        claim(c.frozen == u.frozen == 0, "'no stream freezes in either lane' but some froze")
    gain = "It buys:" in text
    claim(not gain or (c.longest_wait < u.longest_wait and (c.frozen < u.frozen or not c.frozen)),
          "a gain is claimed where chunking does not shorten the wait or end the freezes")
    claim(not gain or "longest wait stays at" not in text, "a gain is claimed where the wait stays")
    claim("It buys fewer freezes" not in text or c.frozen < u.frozen,
          "fewer freezes are claimed where there are not")
    claim(("nothing is split" in text) == (c.prompt_iterations == 1 and not c.starved),
          "'nothing is split' is said where the prompt was split, or not said where one "
          "iteration carried it all")
    wait = re.search(rf"the streams' longest wait (?:falls|rises) from {TIME} to {TIME}", text)
    if wait:
        claim(shown_equal(wait.group(1), u.longest_wait) and shown_equal(wait.group(2),
                                                                         c.longest_wait),
              f"the longest wait 'from {wait.group(1)} to {wait.group(2)}' is not the runs' "
              f"{fmt_seconds(u.longest_wait)} and {fmt_seconds(c.longest_wait)}")
    return problems + check_headings(headings, u, c) + check_changes(text)


def check_headings(headings: dict[str, str], u: Truth, c: Truth) -> list[str]:
    """The chapters' titles: a freeze, a split, a gain claimed only where the runs have one."""
    problems = []
    freeze = headings["2"]
    if re.search(r"freezes (?!no stream)", freeze) and not u.frozen:
        problems.append(f"chapter 2's title '{freeze}' claims a freeze; no stream froze")
    if "every stream" in freeze and u.frozen != u.streams:
        problems.append(f"chapter 2's title '{freeze}': {u.frozen} of {u.streams} froze")
    for n, m in re.findall(r"([\d,]+) of the ([\d,]+) streams", freeze):
        if (int(n.replace(",", "")), int(m.replace(",", ""))) != (u.frozen, u.streams):
            problems.append(f"chapter 2's title '{freeze}': {u.frozen} of {u.streams} froze")
    if re.search(r"freezes no stream|no stream to freeze", freeze) and u.frozen:
        problems.append(f"chapter 2's title '{freeze}' claims no freeze; {u.frozen} froze")
    split = headings["3"]
    if split.startswith("Split it") and c.prompt_iterations < 2:
        problems.append(f"chapter 3's title '{split}': the prompt went in one iteration")
    if "holds the whole prompt" in split and (c.prompt_iterations != 1 or c.starved):
        problems.append(f"chapter 3's title '{split}': the budget did not hold it")
    if "no room for a chunk" in split and not c.starved:
        problems.append(f"chapter 3's title '{split}': the prompt was never starved")
    trade = headings["4"]
    shorter = c.longest_wait < u.longest_wait * (1 - 1e-3)
    if trade.endswith("what it buys") and not (shorter and (c.frozen < u.frozen or not c.frozen)):
        problems.append(f"chapter 4's title '{trade}' claims a gain the runs do not show")
    if "buys nothing" in trade and (shorter or c.frozen < u.frozen):
        problems.append(f"chapter 4's title '{trade}': chunking did buy something")
    if "fewer freezes" in trade and not c.frozen < u.frozen:
        problems.append(f"chapter 4's title '{trade}': {c.frozen} froze instead of {u.frozen}")
    return problems


scenarios = st.fixed_dictionaries(dict(
    prompt=st.one_of(st.integers(1, 512), st.integers(1, 20_000)),
    decodes=st.one_of(st.integers(0, 8), st.integers(0, 256)),
    budget=st.one_of(st.integers(1, 1024), st.integers(1, 20_000)),
    gpu=st.sampled_from(sorted(GPUS)),
    model=st.sampled_from(["dense-8b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "llama-2-7b",
                           "mixtral-8x7b"]),
    mode=st.sampled_from(["simple", "roofline", "calibrated"]),
    unchunked=st.sampled_from(UNCHUNKED), chunked=st.sampled_from(CHUNKED),
    together=st.one_of(st.integers(0, 3), st.integers(0, 200)), burst=st.integers(1, 4)))


def runs(values: dict):
    """The scenario and its two lanes, or a Hypothesis rejection when the app refuses it."""
    try:
        s = scenario_from(values)
        return s, s.run(s.unchunked, 50_000), s.run(s.chunked, 50_000)
    except (InputError, SimulationLimitError):
        assume(False)


def home_text(s, unchunked, chunked) -> str:
    """What Home, the cards, the cue and the side-by-side notes say, as one plain text."""
    fields = words.story_fields(unchunked, chunked, s.cost_model())
    cards_u = words.lane_cards(unchunked, s.mode, s.tp)
    cards_c = words.lane_cards(chunked, s.mode, s.tp)
    parts = [words.home_intro(unchunked, chunked)]
    parts += [f"{chapter.heading_for(fields)}\n{chapter.text.format(**fields)}"
              for chapter in story.CHAPTERS]
    parts += [words.player_cue(cards_u, cards_c, s.decodes)]
    parts += [f"{card.label}: {card.value}. {card.help}" for card in cards_u + cards_c]
    parts += list(words.trade_notes(unchunked, chunked, cards_u, cards_c).values())
    return plain("\n".join(parts))


def allowed_times(s, u: Truth, c: Truth, unchunked, chunked) -> list[float]:
    cost = s.cost_model()
    reread = c.reread_tokens * cost.kv_bytes_per_token / cost.gpu.bandwidth
    times = [*u.iterations, *c.iterations, u.longest_wait, c.longest_wait, u.ttft, c.ttft, STALL,
             reread, 0.0]
    for trace in (unchunked, chunked):
        gaps, _ = token_gaps(trace)
        if len(gaps):
            times += [float(gaps.max()), float(np.percentile(gaps, 99))]
        times += list(trace.token_s[:1]) + list(request_times(trace).queue_s[~trace.prefilled])
        times += [float(t) for t in trace.token_s[trace.token_offsets[:-1][~trace.prefilled]]]
        frozen = np.bincount(token_gaps(trace)[1][gaps > STALL], weights=gaps[gaps > STALL],
                             minlength=len(trace.arrival_s))
        streams = np.unique(token_gaps(trace)[1][trace.prefilled[token_gaps(trace)[1]]])
        if len(streams):
            times.append(float(frozen[streams].mean()))
    return times


def check_scenario(values: dict) -> list[str]:
    s, unchunked, chunked = runs(values)
    u, c = Truth(unchunked), Truth(chunked)
    text = home_text(s, unchunked, chunked)
    problems = check_home(text, u, c)
    problems += check_times(text, allowed_times(s, u, c, unchunked, chunked))
    numbers = tour.lane_numbers(s, unchunked, chunked).values
    for name, truth in (("gap_u", u.longest_wait), ("gap_c", c.longest_wait),
                        ("ttft_u", u.ttft), ("ttft_c", c.ttft),
                        ("chunks_c", float(c.prompt_iterations))):
        if not (math.isnan(truth) and math.isnan(numbers[name])) and numbers[name] != truth:
            problems.append(f"the tour's {name} is {numbers[name]}, the run's {truth}")
    problems += check_worked(s, u, c)
    return (problems + check_memory(s, values.get("together", 20))
            + check_burst(s, values.get("burst", 3)) + check_sweep(s, values.get("burst", 3)))


def check_worked(s, u: Truth, c: Truth) -> list[str]:
    """The Worked example's story, and, where the app runs its arithmetic (the simple mode, one
    GPU, vLLM V0 against Sarathi-Serve), the same values as the runs."""
    ex = worked_example(**s.worked_example_inputs(2048))
    chain = worked.core_chain(ex, s.gpu.memory_bytes)
    text = plain("\n".join(f"{step.title}\n{step.sentence}" for step in chain))
    problems = check_changes(text)
    inputs = ex.inputs
    prompt_compute = inputs["prompt"] * ex.values["flops_per_token"] / (inputs["peak_tflops"] * 1e12)
    if ("pass is compute-bound" in text) != (prompt_compute > ex.values["decode_weight_read_s"]):
        problems.append("the Worked example's prompt pass is called by the wrong bound")
    split = 0 < ex.values["chunk_0"] < inputs["prompt"]
    if "nothing is split" in text and split:
        problems.append("the Worked example says nothing is split where the prompt is split")
    if "× shorter" in text:
        ratio = float(re.search(r"([\d.,]+)× shorter", text).group(1).replace(",", ""))
        wait, chunked = ex.values["wait_unchunked_s"], max(ex.values["iteration_0"], ex.values[
            "ttft_0"] - (ex.values["iterations_0"] - 1) * ex.values["iteration_0"])
        if f"{wait / chunked:,.3g}" != f"{ratio:,.3g}":
            problems.append(f"the Worked example's {ratio}× is not its wait ratio")
    # the Worked example's closed form keeps every stream decoding until the prompt's first token;
    # a stream that finishes sooner leaves its budget to the chunks, and the run is quicker
    same_arithmetic = (s.mode == "simple" and s.tp == 1 and s.unchunked == "vllm-v0"
                       and s.chunked == "sarathi" and s.decodes > 0 and 0 < s.chunk < s.prompt
                       and c.decodes_beside_chunks == {s.decodes})
    if same_arithmetic:
        for key, truth in (("unchunked_prefill_s", u.prompt_iteration),
                           ("wait_unchunked_s", u.longest_wait), ("ttft_0", c.ttft)):
            if fmt_seconds(ex.values[key]) != fmt_seconds(truth):
                problems.append(f"the Worked example's {key} {fmt_seconds(ex.values[key])} is not "
                                f"the run's {fmt_seconds(truth)}")
    return problems


# scenarios the issue names, and the regimes a random draw can miss
NAMED = [dict(), dict(prompt=100), dict(budget=8192), dict(decodes=0), dict(budget=32),
         dict(prompt=600, budget=576), dict(decodes=1024, context=100),
         dict(unchunked="orca", chunked="sglang"), dict(chunked="vllm-v1", budget=40),
         dict(mode="roofline", prompt=2000), dict(gpu="l4", decodes=4, together=20),
         dict(together=1, decodes=1), dict(together=0, decodes=0)]


@pytest.mark.parametrize("values", NAMED, ids=lambda v: "&".join(f"{k}={x}" for k, x in v.items())
                         or "defaults")
def test_the_claims_hold_in_named_scenarios(values):
    assert check_scenario(values) == []


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(scenarios)
def test_the_claims_hold_in_random_scenarios(values):
    assert check_scenario(values) == []
