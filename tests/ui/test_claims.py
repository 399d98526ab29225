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

from sim.cost.iteration import Composition
from sim.errors import InputError
from sim.presets.hardware import GPUS
from sim.serving.engine import SimulationLimitError
from sim.serving.metrics import request_times, token_gaps
from sim.serving.policies import CHUNKED, POLICIES, UNCHUNKED
from sim.studies.budget import fused_iteration
from sim.studies.worked_example import worked_example
from sim.units import fmt_seconds
from ui.learn import words, worked
from ui.shell import story
from ui.shell.scenario import scenario_from
from ui.teach import tour

from .claims_memory import check_memory
from .claims_prefix import check_prefix
from .claims_text import STALL, TIME, number, plain, seconds
from .claims_tiles import check_last_chunk, check_tiles
from .claims_traffic import check_burst, check_sweep

EXAMPLES = int(os.environ.get("CLAIMS_EXAMPLES", "12"))


class Truth:
    """What one lane's run did, read straight from its trace (`window`: the model's sliding
    window, 0 for none)."""

    def __init__(self, trace, window: int = 0):
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
        # each chunk reads back the prompt's earlier KV, at most the window
        self.reread_tokens = sum(min(start, window or start) for start in
                                 trace.chunk_start[np.isin(trace.chunk_request, new)].tolist())
        self.starved = trace.starved_iterations > 0
        self.events(trace, new, carrying)

    def events(self, trace, new, carrying):
        """What happened to the prompt: its queue and what filled it, the streams still running
        when it started, and what its iterations carried."""
        left_out = np.where(trace.decode_tokens > 0, trace.running_decoders - trace.decode_tokens, 0)
        self.left_out = (int(np.sum(left_out > 0)), int(left_out.max(initial=0)))
        self.prompt_time = float(trace.duration_s[carrying].sum())
        self.whole_iteration_tokens = (int(trace.prefill_tokens[carrying[0]]
                                           + trace.decode_tokens[carrying[0]])
                                       if len(carrying) == 1 else 0)
        self.shared = int(np.sum(trace.decode_tokens[carrying] > 0))
        self.weight_bound = int(np.sum(trace.memory_s[carrying] >= trace.compute_s[carrying]))
        if not len(carrying):
            self.queue, self.queued, self.memory_wait, self.budget_wait = math.nan, 0, False, False
            self.left_at_start, self.prefill_only, self.stream_count = 0, [], 0
            return
        start, arrival = trace.start_s[carrying[0]], trace.arrival_s[new[0]]
        self.queue = float(start - arrival)
        waiting = [i for i in range(carrying[0]) if trace.start_s[i] >= arrival]
        self.queued = len(waiting)
        free = trace.kv_capacity_tokens - trace.kv_used_tokens[waiting[0]] if waiting else math.inf
        self.memory_wait = bool(waiting) and free < trace.prompt[new[0]]
        self.kv_held = int(trace.kv_used_tokens[waiting[0]]) if waiting else 0
        self.kv_capacity = trace.kv_capacity_tokens
        self.budget_wait = any(trace.decode_tokens[i] >= trace.budget for i in waiting)
        last = [trace.tokens_of(r)[-1] for r in np.flatnonzero(trace.prefilled)
                if len(trace.tokens_of(r))]
        self.stream_count = len(last)
        longest = carrying[np.argmax(trace.duration_s[carrying])]
        self.ran_out_before_longest = all(t <= trace.start_s[longest] for t in last)
        self.left_at_start = sum(t > start for t in last)
        # runs of the prompt's iterations back to back with no stream token while streams run
        self.prefill_only, run = [], []
        for i in carrying:
            alone = trace.decode_tokens[i] == 0 and sum(t > trace.start_s[i] for t in last)
            if alone and run and i == run[-1] + 1:
                run.append(i)
            else:
                run = [i] if alone else []
            if run:
                self.prefill_only.append((len(run), float(trace.duration_s[run].sum())))


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
    chapter_1 = text.split("Two kinds of work can share a pass.")[1].split(f"2. {headings['2']}")[0]
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
    claim(not re.search(r"is the freeze|: a freeze|counts as a freeze", chapter_2) or u.frozen > 0,
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


def check_causes(text: str, u: Truth, c: Truth, decode_step: float) -> list[str]:
    """Every cause the words give is an event of the run: the prompt's queue and what filled it
    (KV memory, a budget the decodes take whole), streams that finished before it, chunks
    without stream tokens back to back, what its iterations carried and what bound them; and
    the decode step is one value wherever it is named."""
    problems = []

    def claim(ok: bool, what: str):
        if not ok:
            problems.append(what)

    headings = dict(re.findall(r"^(\d)\. (.*)$", text, re.MULTILINE))

    def chapter(n: int) -> str:
        return text.split(f"{n}. {headings[str(n)]}")[1].split(f"{n + 1}. {headings[str(n + 1)]}")[0]

    for lane, truth, said in (("unchunked", u, chapter(2)), ("chunked", c, chapter(3))):
        wait = re.search(rf"The prompt first waits {TIME} \(([\d,]+) iterations\)(.*?)\.(?: |$)",
                         said)
        claim(bool(wait) == (truth.queued > 0),
              f"the {lane} prompt queued through {truth.queued} iterations; its chapter says "
              + (wait.group(0) if wait else "nothing of it"))
        if wait:
            claim(shown_equal(wait.group(1), truth.queue) and number(wait.group(2)) == truth.queued,
                  f"'{wait.group(0)}': it waited {fmt_seconds(truth.queue)}, {truth.queued} iterations")
            claim("for KV memory" not in wait.group(3) or truth.memory_wait,
                  f"the {lane} prompt is said to wait for KV memory; the KV free was not short of it")
            claim("take the whole budget" not in wait.group(3) or truth.budget_wait,
                  f"the {lane} prompt is said to wait for the budget; the decodes never took it whole")
        for held, capacity in re.findall(r"the streams hold ([\d,]+) of the ([\d,]+) tokens of KV",
                                         said):
            claim((number(held), number(capacity)) == (truth.kv_held, truth.kv_capacity),
                  f"the streams hold {truth.kv_held} of {truth.kv_capacity} KV tokens, not {held} "
                  f"of {capacity}")
        claim("every stream has finished" not in said
              or (truth.stream_count and not truth.left_at_start),
              f"the {lane} chapter says every stream finished first; {truth.left_at_start} ran on")
        for k, n in re.findall(r"once ([\d,]+) of the ([\d,]+) streams have finished", said):
            claim((number(k), number(n)) == (truth.stream_count - truth.left_at_start,
                                             truth.stream_count),
                  f"'{k} of the {n} streams have finished': {truth.left_at_start} still ran")
    for d in re.findall(r"Chunk = budget − stream tokens = [\d,]+ − ([\d,]+) = [\d,]+",
                               text):
        claim(number(d) in c.decodes_beside_chunks, f"a chunk beside {d} stream tokens: the "
              f"chunks had {sorted(c.decodes_beside_chunks)} beside them")
        if number(d) == 0 and c.stream_count:
            claim(("every stream has finished" in text and not c.left_at_start)
                  or ("without the streams' tokens" in text and c.prefill_only)
                  or ("By its longest iteration every stream had finished" in text
                      and c.ran_out_before_longest),
                  "a chunk beside 0 stream tokens while streams run, with no reason the run shows")
    longest_run = max(c.prefill_only, default=(0, 0.0))
    for n, shown in re.findall(rf"([\d,]+) (?:such iterations run|prompt iterations run|of the "
                               rf"prompt's iterations) back to back(?: without the streams' "
                               rf"tokens)?, {TIME} in all", text, re.IGNORECASE):
        claim(number(n) == longest_run[0] and shown_equal(shown, longest_run[1]),
              f"'{n} iterations back to back, {shown}': the longest such run is {longest_run[0]}, "
              f"{fmt_seconds(longest_run[1])}")
    for n, total, before, why in re.findall(
            rf"its ([\d,]+) iterations? takes? {TIME} together, against {TIME} unchunked"
            rf"(?: \(([^)]*)\))?", text):
        claim(number(n) == c.prompt_iterations and shown_equal(total, c.prompt_time)
              and shown_equal(before, u.prompt_time),
              f"'its {n} iterations take {total} together, against {before}': the runs' "
              f"{c.prompt_iterations} take {fmt_seconds(c.prompt_time)}, against "
              f"{fmt_seconds(u.prompt_time)}")
        claim(c.prompt_time > u.prompt_time, "the chunked prompt's iterations are said to take "
              "longer together; they do not")
        shared = re.search(r"(?:all )?([\d,]+|it)(?: of them)? also carr", why)
        claim(_counted(shared.group(1)) == c.shared if shared else not c.shared,
              f"{c.shared} of the prompt's iterations carry stream tokens: '{why}'")
        bound = re.search(r"(?:all )?([\d,]+|it)(?: of them)? takes? as long as reading the "
                          r"weights", why)
        claim(_counted(bound.group(1)) == c.weight_bound if bound else not c.weight_bound,
              f"{c.weight_bound} of the prompt's iterations are bound by their memory reads: '{why}'")
    for shown, before in re.findall(rf"it waits {TIME} before its first chunk \(unchunked: {TIME}\)",
                                    text):
        claim(shown_equal(shown, c.queue) and (shown_equal(before, u.queue) or before == "0 ms"),
              f"the chunked prompt waits {fmt_seconds(c.queue)}, not {shown}")
    for verb, a, b in re.findall(rf"TTFT\)? (rises|falls) from {TIME} to {TIME}", text):
        claim(shown_equal(a, u.ttft) and shown_equal(b, c.ttft),
              f"the TTFT {verb} from {a} to {b}: the runs' {fmt_seconds(u.ttft)} and "
              f"{fmt_seconds(c.ttft)}")
    for shown in re.findall(rf"TTFT\)? stays at {TIME}", text):
        claim(fmt_seconds(u.ttft) == fmt_seconds(c.ttft) == shown,
              f"the TTFT 'stays at {shown}': {fmt_seconds(u.ttft)} and {fmt_seconds(c.ttft)}")
    claim(not re.search(r"grows a little|share their iterations", text),
          "a cause or a size no run measured ('grows a little', 'share their iterations')")
    steps = set(re.findall(rf"(?<!'s )(?:a|the) {TIME} decode step|decode step of the [\d,]+ "
                           rf"streams? takes {TIME}|no longer than a decode step \({TIME}\)", text))
    shown = {t for group in steps for t in group if t}
    claim(shown <= {fmt_seconds(decode_step)}, f"the decode step is named with {sorted(shown)}; "
          f"the streams' decode tokens alone take {fmt_seconds(decode_step)}")
    for longest, step in re.findall(rf"takes up to {TIME} instead of (?:a|[\w. ]+'s) {TIME} decode "
                                    r"step", text):
        claim(seconds(longest) > seconds(step), f"'up to {longest} instead of {step}': no cost")
    if "prompt iterations are longer than the unchunked lane's" in text:
        claim(c.prompt_iteration > u.prompt_iteration, "the chunked prompt's iterations are said "
              f"to be longer: {fmt_seconds(c.prompt_iteration)} against "
              f"{fmt_seconds(u.prompt_iteration)}")
    for n, most in re.findall(r"in ([\d,]+) iterations? it holds only some of their decode tokens, "
                              r"leaving up to ([\d,]+) streams? without a token", text):
        claim((number(n), number(most)) == c.left_out, f"'in {n} iterations ... up to {most} "
              f"streams without a token': the run left out streams in {c.left_out[0]} "
              f"iterations, up to {c.left_out[1]}")
    if c.left_out[0] and c.frozen:
        claim("It buys" not in text, "a gain is claimed for chunking where the budget itself left "
              "streams out")
    for shown in re.findall(rf"the streams keep their pace only because the prompt waits {TIME} "
                            r"until every stream has finished", text):
        claim(shown_equal(shown, c.queue) and c.stream_count and not c.left_at_start
              and u.left_at_start, f"'only because the prompt waits {shown}': it waited "
              f"{fmt_seconds(c.queue)}, {c.left_at_start} streams still ran, unchunked "
              f"{u.left_at_start}")
    if c.stream_count and not c.left_at_start and u.left_at_start:
        claim("It buys" not in text, "a gain is claimed for chunking where the prompt waited "
              "until the streams had finished")
    for whole in re.findall(r"A budget smaller than the (?:[\d,]+-token prompt|prompt plus the "
                            r"stream tokens beside it, [\d,]+ \+ [\d,]+ = [\d,]+)", text):
        least = number(re.findall(r"[\d,]+", whole)[-1])
        claim(c.prompt_iterations == 1 and least == c.whole_iteration_tokens,
              f"'{whole} splits it': the iteration that carried the prompt held "
              f"{c.whole_iteration_tokens} tokens")
    claim(not re.search(r"\(1× (?:shorter|longer)\)", text), "a change shown as '1×'")
    for shown in re.findall(rf"a {TIME} pass is too short to hurt", text):
        claim(shown_equal(shown, u.prompt_iteration) and u.prompt_iteration <= STALL,
              f"'a {shown} pass is too short to hurt': the pass took {fmt_seconds(u.prompt_iteration)}")
    if headings["2"].startswith("A pass this short"):
        claim(u.prompt_iteration <= STALL, f"chapter 2's title calls a "
              f"{fmt_seconds(u.prompt_iteration)} pass short")
    if "finish before the prompt starts" in headings["2"]:
        claim(u.stream_count and not u.left_at_start,
              f"chapter 2's title: {u.left_at_start} streams still ran when the prompt started")
    return problems


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
    if "fill the budget first" in split and not c.starved:
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


# budgets at the boundaries the words change at: equal to the streams (no room for a chunk), one
# above, a chunk exactly the prompt (budget = streams + prompt), a prompt exactly the budget
BOUNDARY_BUDGETS = {"streams": lambda d, p: d, "streams + 1": lambda d, p: d + 1,
                    "chunk = prompt": lambda d, p: d + p, "prompt": lambda d, p: p}


@st.composite
def scenarios(draw) -> dict:
    """A scenario for the words: random, with its regimes (a prompt that waits for KV memory, a
    prefill-first policy, many streams, a tiny budget, a mixture of experts) and its boundaries
    (prompt, streams and budget at 1, the budgets above) each drawn often."""
    values = draw(st.fixed_dictionaries(dict(
        prompt=st.one_of(st.just(1), st.integers(1, 512), st.integers(1, 20_000)),
        decodes=st.one_of(st.just(1), st.integers(0, 8), st.integers(0, 256)),
        budget=st.one_of(st.just(1), st.integers(1, 1024), st.integers(1, 20_000)),
        gpu=st.sampled_from(sorted(GPUS)),
        model=st.sampled_from(["dense-8b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b",
                               "llama-2-7b", "mixtral-8x7b"]),
        mode=st.sampled_from(["simple", "roofline", "calibrated"]),
        unchunked=st.sampled_from(UNCHUNKED), chunked=st.sampled_from(CHUNKED),
        together=st.one_of(st.integers(0, 3), st.integers(0, 200)), burst=st.integers(1, 4))))
    boundary = draw(st.sampled_from([None, *BOUNDARY_BUDGETS]))
    if boundary:
        values["budget"] = max(1, BOUNDARY_BUDGETS[boundary](values["decodes"], values["prompt"]))
    return values


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
    parts = [words.home_intro(unchunked, chunked, s.cost_model())]
    parts += [f"{chapter.heading_for(fields)}\n{chapter.text.format(**fields)}"
              for chapter in story.CHAPTERS]
    parts += [words.player_cue(cards_u, cards_c, s.decodes)]
    parts += [f"{card.label}: {card.value}. {card.help}" for card in cards_u + cards_c]
    parts += list(words.trade_notes(unchunked, chunked, cards_u, cards_c, s.cost_model()).values())
    return plain("\n".join(parts))


def allowed_times(s, u: Truth, c: Truth, unchunked, chunked) -> list[float]:
    cost = s.cost_model()
    reread = c.reread_tokens * cost.kv_bytes_per_token / cost.gpu.bandwidth
    times = [*u.iterations, *c.iterations, u.longest_wait, c.longest_wait, u.ttft, c.ttft, STALL,
             reread, 0.0, u.queue, c.queue, u.prompt_time, c.prompt_time,
             *(t for _, t in c.prefill_only)]
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


def decode_step(s, trace) -> float:
    """The streams' decode tokens alone in one iteration at the context they hold, priced on the
    lane's engine: the one value the words may call the decode step."""
    contexts = tuple(int(n) for n in trace.prompt[trace.prefilled])
    if not contexts:
        return math.nan
    cost = s.cost_model().for_engine(POLICIES[trace.policy].overhead)
    return cost.price(Composition(contexts)).time_s


def _counted(said: str) -> int:
    """A count of the prompt's iterations as the words give it: a number, or "it" (its one)."""
    return 1 if said == "it" else number(said)


def check_dial(text: str, s, unchunked, step: float) -> list[str]:
    """Chapter 5's budget that rides free: the iteration at it (the streams' decode tokens and
    the prompt's costliest chunk of what is left) costs no more than the decode step, and one
    token more does; or, where it says one prompt token already costs, it does."""
    cost = s.cost_model().for_engine(POLICIES[unchunked.policy].overhead)
    d = int(np.count_nonzero(unchunked.prefilled))

    def iteration(budget: int) -> float:
        return cost.price(fused_iteration(d, s.context, s.prompt, budget)).time_s

    problems = []
    for free, step_shown, chunk in re.findall(
            rf"Up to a budget of ([\d,]+) here, an iteration costs no more than the streams' "
            rf"{TIME} decode step .*? so a chunk of up to ([\d,]+) tokens", text):
        b = number(free)
        if (not iteration(b) <= step or (b < d + s.prompt and iteration(b + 1) <= step)
                or number(chunk) != b - d or not shown_equal(step_shown, step)):
            problems.append(f"'{free}' is not the largest budget whose iteration costs no more "
                            f"than the {fmt_seconds(step)} decode step")
    if "one prompt token beside the streams already makes an iteration longer" in text:
        if not iteration(d + 1) > step:
            problems.append("one prompt token is said to lengthen the iteration; it does not")
    return problems


def check_scenario(values: dict) -> list[str]:
    s, unchunked, chunked = runs(values)
    window = s.cost_model().model.sliding_window
    u, c = Truth(unchunked, window), Truth(chunked, window)
    text = home_text(s, unchunked, chunked)
    steps = [decode_step(s, trace) for trace in (unchunked, chunked)]
    problems = (check_home(text, u, c) + check_causes(text, u, c, steps[0])
                + check_dial(text, s, unchunked, steps[0]))
    problems += check_times(text, allowed_times(s, u, c, unchunked, chunked) + steps)
    for card_u, card_c in zip(words.lane_cards(unchunked, s.mode, s.tp),
                              words.lane_cards(chunked, s.mode, s.tp), strict=True):
        if card_u.value == card_c.value and words.card_delta(card_c, card_u) is not None:
            problems.append(f"{card_c.label} reads {card_c.value} in both lanes, and its delta "
                            f"says {words.card_delta(card_c, card_u)}")
    numbers = tour.lane_numbers(s, unchunked, chunked).values
    for name, truth in (("gap_u", u.longest_wait), ("gap_c", c.longest_wait),
                        ("ttft_u", u.ttft), ("ttft_c", c.ttft),
                        ("chunks_c", float(c.prompt_iterations))):
        if not (math.isnan(truth) and math.isnan(numbers[name])) and numbers[name] != truth:
            problems.append(f"the tour's {name} is {numbers[name]}, the run's {truth}")
    problems += check_worked(s, u, c)
    return (problems + check_memory(s, values.get("together", 20)) + check_tiles(s) + check_last_chunk(s)
            + check_burst(s, values.get("burst", 3)) + check_sweep(s, values.get("burst", 3))
            + check_prefix(s, values.get("burst", 3)))


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
         dict(together=1, decodes=1), dict(together=0, decodes=0),
         # the prompt waits for KV memory until the streams finish
         dict(prompt=20000, decodes=7, gpu="l4"),
         # prefill-first: the chunks run back to back while every stream waits
         dict(mode="calibrated", gpu="h100-sxm", chunked="sglang"),
         # the streams take the whole budget; a chunk iteration no longer than a decode step
         dict(budget=64), dict(gpu="b200", model="mixtral-8x7b"),
         # the boundaries: everything at 1, a budget equal to the streams and one above, a chunk
         # exactly the prompt, a prompt exactly the budget; a compute-bound decode step
         dict(prompt=1, decodes=1, budget=1), dict(budget=64 + 1), dict(prompt=512, budget=576),
         dict(prompt=576, budget=576), dict(decodes=512, context=500),
         # a budget smaller than the streams leaves some out; the longest chunk after they finish
         dict(chunked="vllm-v1", budget=40),
         dict(prompt=381, budget=2, gpu="l4", chunked="vllm-v1", decodes=1, model="qwen2.5-7b",
              unchunked="orca"),
         # a sliding window (4,096 tokens) shorter than the prompt: later chunks re-read at most it
         dict(model="mistral-7b", prompt=16384, gpu="h100-sxm")]


@pytest.mark.parametrize("values", NAMED, ids=lambda v: "&".join(f"{k}={x}" for k, x in v.items())
                         or "defaults")
def test_the_claims_hold_in_named_scenarios(values):
    assert check_scenario(values) == []


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(scenarios())
def test_the_claims_hold_in_random_scenarios(values):
    assert check_scenario(values) == []
