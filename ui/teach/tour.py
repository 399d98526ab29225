"""The guided tour a teacher presents: its steps as data, read from one Markdown file per step
(tour/<language>/NN-name.md), with the numbers its texts quote computed from the step's runs.
Pure Python (no Streamlit): the app's Tour page (ui/teach/tour_view.py) and the printable handout
(ui/teach/handout.py) read the same steps.

A step file (tour/en/NN-name.md: ui.shell.controls.TOUR_FOLDER) is TOML front matter between `+++` lines,
then Markdown. The front matter says what the step shows: `title`; `chapter`, the Home story's
chapter it tells (ui/shell/story.py); `controls`, the link values
it sets (`budget=2048&gpu=h100-sxm`; every other scenario control at its default); `view` (VIEWS);
`moment`, where the timeline opens, and `play`, the moment it plays on to (MOMENTS); `highlight`,
what it points at (a lane's part, `chunked.rows`, or `numbers`, the key numbers); a guess before
the reveal (`guess`, the choices, and `truth`, the field whose value the nearest choice matches);
or an exercise (`exercise`, `target_ms`). The Markdown is the step's text, then sections each
opened by a marker line (`<!-- question -->`, SECTIONS). Texts take `{field}`s from the runs
(`fields`), never typed numbers, and `{term:id}` / `{term:id:words}` / `{first:id}` for the
glossary (ui/shell/glossary.py). The page's own words are in `words.toml` beside the steps. So a
translation is a folder of files.
"""

from __future__ import annotations

import math
import re
import string
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from charts.timeline import PARTS_OF_A_LANE, view_name
from sim.cost.calibration import A100
from sim.errors import InputError
from sim.serving.engine import Trace
from sim.serving.metrics import request_times
from sim.studies.budget import budget_iteration_cost, largest_budget_within
from sim.studies.lanes import compare
from sim.studies.stalls import STALL_S, stalls
from sim.units import fmt_seconds

from ..learn import words
from ..shell import controls, glossary, story
from ..shell.scenario import Scenario, Traffic, scenario_from, traffic_from

VIEWS = ("player", "burst")    # the side-by-side timeline, or a burst of prompts under two policies
MOMENTS = ("start", "first-chunk", "stall", "first-token-unchunked", "stall-end",
           "first-token-chunked", "end")
LANES = ("unchunked", "chunked")
NUMBERS = "numbers"            # a highlight: the four key numbers above the timeline
SECTIONS = ("question", "reveal", "over", "under", "within", "answer", "hint", "impossible")
EXERCISES = ("largest-budget",)
EXERCISE_SECTIONS = ("question", "over", "under", "within", "answer", "hint", "impossible")
DIGIT_STEPS = 9                # the digit keys 1-9 open those steps
BURST = 10                     # the under-load view: the source article's ten prompts at once
BURST_POLICIES = ("vllm-v0", "sarathi")
KEYS = {"title", "chapter", "controls", "view", "moment", "play", "highlight", "guess", "truth",
        "exercise", "target_ms"}
# the scenario controls a step sets: what the sidebar's Scenario, Hardware and Compare hold
SCENARIO_KEYS = tuple(c.key for c in (*controls.SCENARIO, *controls.HARDWARE, *controls.POLICY))


class TourError(InputError):
    """A step file that cannot be read: names the file and what is wrong."""


@dataclass(frozen=True)
class Step:
    number: int                    # from 1, in file-name order
    slug: str
    title: str
    chapter: str                   # ui.shell.story chapter id
    text: str
    controls: tuple[tuple[str, object], ...] = ()   # (key, value): the link values it sets
    view: str = "player"
    moment: str = "start"
    play: str | None = None
    highlight: tuple[str, ...] = ()
    guess: tuple[str, ...] = ()
    truth: str = ""
    exercise: str = ""
    target_s: float = math.nan
    sections: tuple[tuple[str, str], ...] = ()

    def section(self, name: str) -> str:
        return dict(self.sections).get(name, "")

    def scenario_values(self) -> dict[str, object]:
        """Every scenario control's value on this step: its own, the others' defaults."""
        return {key: controls.CONTROLS[key].default for key in SCENARIO_KEYS} | dict(self.controls)

    def scenario(self) -> Scenario:
        return scenario_from(self.scenario_values())

    def story_chapter(self) -> story.Chapter:
        return next(c for c in story.CHAPTERS if c.id == self.chapter)

    def chapter_title(self) -> str:
        """Home's chapter this step tells, by name: its number would be a second numbering beside
        the steps'."""
        return self.story_chapter().title.split(". ", 1)[-1]

    def player_views(self) -> tuple[str, ...]:
        """The highlight's parts of the timeline, as the chart names them (charts.timeline)."""
        return tuple(view_name(*name.split(".")) for name in self.highlight if name != NUMBERS)


@dataclass(frozen=True)
class Tour:
    steps: tuple[Step, ...]
    words: dict = field(default_factory=dict)   # the page's own words (words.toml)

    def step(self, number: int) -> Step:
        return self.steps[number - 1]


# --- reading the files ----------------------------------------------------------------------------
FRONT = re.compile(r"\A\+\+\+\n(.*?)\n\+\+\+\n(.*)\Z", re.S)
MARKER = re.compile(r"^<!--\s*([a-z-]+)\s*-->\s*$", re.M)
CHOICE = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*(µs|ms|s|×)?\s*$")


def load(folder: Path = controls.TOUR_FOLDER) -> Tour:
    """Every step of the tour in `folder` (one language), checked (a TourError names the file
    and the key)."""
    paths = sorted(folder.glob(controls.STEP_FILES))
    if not paths:
        raise TourError(f"{folder} holds no step files (NN-name.md)")
    steps = tuple(read_step(path, number) for number, path in enumerate(paths, start=1))
    words_file = folder / "words.toml"
    try:
        page_words = tomllib.loads(words_file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise TourError(f"{words_file}: {e}") from None
    return Tour(steps, page_words)


def read_step(path: Path, number: int) -> Step:
    def fail(problem: str) -> TourError:
        return TourError(f"{path.name}: {problem}")

    match = FRONT.match(path.read_text(encoding="utf-8"))
    if not match:
        raise fail("it must open with TOML front matter between two lines of +++")
    try:
        meta = tomllib.loads(match.group(1))
    except tomllib.TOMLDecodeError as e:
        raise fail(f"front matter: {e}") from None
    if unknown := set(meta) - KEYS:
        raise fail(f"unknown front-matter keys {sorted(unknown)}; known: {sorted(KEYS)}")
    for key in ("title", "chapter"):
        if not isinstance(meta.get(key), str) or not meta[key]:
            raise fail(f"`{key}` is required")
    chapters = [c.id for c in story.CHAPTERS]
    if meta["chapter"] not in chapters:
        raise fail(f"chapter {meta['chapter']!r} is not one of {', '.join(chapters)} (ui/shell/story.py)")
    parts = MARKER.split(match.group(2))
    text, sections = parts[0].strip(), dict(zip(parts[1::2], (p.strip() for p in parts[2::2])))
    if unknown := set(sections) - set(SECTIONS):
        raise fail(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    step = Step(number, path.stem.split("-", 1)[1], meta["title"], meta["chapter"], text,
                controls=_step_controls(meta.get("controls", ""), fail),
                view=meta.get("view", "player"), moment=meta.get("moment", "start"),
                play=meta.get("play"), highlight=tuple(meta.get("highlight", ())),
                guess=tuple(str(g) for g in meta.get("guess", ())), truth=meta.get("truth", ""),
                exercise=meta.get("exercise", ""),
                target_s=float(meta.get("target_ms", math.nan)) / 1e3,
                sections=tuple(sections.items()))
    _check(step, fail)
    return step


def _step_controls(query: str, fail) -> tuple[tuple[str, object], ...]:
    """`controls = "budget=2048&gpu=h100-sxm"`, read as a link is (ui.shell.controls)."""
    pairs = [item.split("=", 1) for item in query.split("&") if item]
    if any(len(p) != 2 or p[0] not in SCENARIO_KEYS for p in pairs):
        raise fail(f"controls {query!r}: write key=value pairs joined by &, keys among "
                   f"{', '.join(SCENARIO_KEYS)}")
    link = controls.read_link(dict(pairs))
    if link.notes:
        raise fail("controls: " + "; ".join(link.notes.values()))
    return tuple(link.values.items())


def _check(step: Step, fail) -> None:
    if step.view not in VIEWS:
        raise fail(f"view {step.view!r} is not one of {', '.join(VIEWS)}")
    for key in ("moment", "play"):
        value = getattr(step, key)
        if value is not None and value not in MOMENTS:
            raise fail(f"{key} {value!r} is not one of {', '.join(MOMENTS)}")
    for name in step.highlight:
        lane, _, part = name.partition(".")
        if name != NUMBERS and (lane not in LANES or part not in PARTS_OF_A_LANE):
            raise fail(f"highlight {name!r}: write {NUMBERS} or <lane>.<part>, lane one of "
                       f"{', '.join(LANES)}, part one of {', '.join(PARTS_OF_A_LANE)}")
    if step.guess:
        values = [choice_value(g) for g in step.guess]
        if None in values or len(step.guess) < 2:
            raise fail(f"guess {list(step.guess)}: two or more numbers, each with an optional "
                       "unit (µs, ms, s or ×)")
        if step.truth not in TRUTHS:
            raise fail(f"truth {step.truth!r} is not one of {', '.join(TRUTHS)}")
        if not step.section("question") or not step.section("reveal"):
            raise fail("a guess needs a <!-- question --> and a <!-- reveal --> section")
    if step.exercise:
        if step.exercise not in EXERCISES:
            raise fail(f"exercise {step.exercise!r} is not one of {', '.join(EXERCISES)}")
        if not 0 < step.target_s < math.inf:
            raise fail("the exercise needs target_ms, a positive number of milliseconds")
        missing = [s for s in EXERCISE_SECTIONS if not step.section(s)]
        if missing:
            raise fail(f"the exercise needs the sections {', '.join(missing)}")


def choice_value(choice: str) -> float | None:
    """A guess's value in the base unit (seconds, or a plain number): "300 ms" -> 0.3."""
    match = CHOICE.match(choice)
    if not match:
        return None
    number = float(match.group(1).replace(",", ""))
    return number * {"µs": 1e-6, "ms": 1e-3}.get(match.group(2), 1.0)


def nearest_choice(step: Step, truth: float) -> int:
    """The index of the choice nearest `truth`, on a log scale (10 vs 50 vs 300 ms)."""
    values = [choice_value(g) for g in step.guess]
    return min(range(len(values)), key=lambda i: abs(math.log(values[i] / truth)))


# --- the numbers a step quotes -------------------------------------------------------------------
# The fields whose raw value a guess can be checked against (seconds, or a count).
TRUTHS = ("gap_u", "gap_c", "ttft_u", "ttft_c", "prompt_over_decode", "chunks_c", "drain_u",
          "drain_c")


@dataclass(frozen=True)
class Numbers:
    """A step's fields as shown (`text`) and the raw values a guess is checked against."""
    text: dict[str, str]
    values: dict[str, float]


def lane_numbers(s: Scenario, unchunked: Trace, chunked: Trace) -> Numbers:
    """What the timeline steps quote: Home's story fields (ui.learn.words.story_fields) and more, every
    value from the lanes' facts (sim.studies.lanes), as Home and the cards have them."""
    text = words.story_fields(unchunked, chunked, s.cost_model())
    lanes = compare(unchunked, chunked, s.cost_model())
    u, c = lanes.unchunked, lanes.chunked
    values = dict(gap_u=u.longest_wait_s, gap_c=c.longest_wait_s, ttft_u=u.ttft_s, ttft_c=c.ttft_s,
                  prompt_over_decode=u.prompt_iteration_s / u.decode_step_s,
                  chunks_c=float(c.prompt_iterations))
    text |= dict(gap_u=fmt_seconds(u.longest_wait_s), gap_c=fmt_seconds(c.longest_wait_s),
                 budget=f"{s.budget:,}", chunk=f"{c.largest_chunk:,}",
                 chunk_sum=chunk_sum(s.budget, s.decodes, s.prompt),
                 chunks_c=f"{c.prompt_iterations:,}",
                 prompt_iterations=f"{c.prompt_iterations:,} iteration"
                                   + ("" if c.prompt_iterations == 1 else "s"),
                 prompt_over_decode=f"{values['prompt_over_decode']:,.3g}×",
                 prompt_over_decode_tokens=f"{s.prompt / max(s.decodes, 1):,.3g}",
                 gpu=s.gpu.name, model=s.model.name,
                 # Home's trade without its note on re-read KV: a projector's column has no room
                 trade=words.trade_story(lanes, ""))
    return Numbers(text, values)


def chunk_sum(budget: int, decodes: int, prompt: int) -> str:
    """The chunk a budget leaves, C = B − D, by regime: no room for one (the streams take the
    whole budget), the whole prompt (it fits in one iteration), or B − D of it."""
    room = budget - decodes
    if room <= 0:
        return (f"B − D = {budget:,} − {decodes:,} leaves **no room** for a chunk: the prompt "
                "waits until streams finish")
    if room >= prompt:
        return (f"B − D = {budget:,} − {decodes:,} = {room:,}, room for the whole "
                f"{prompt:,}-token prompt: **C = {prompt:,}** prompt tokens, in one iteration")
    return f"**C = B − D = {budget:,} − {decodes:,} = {room:,}** prompt tokens"


def step_fields(step: Step, numbers: Numbers) -> dict[str, str]:
    """The fields a step's text takes: its runs' numbers, and an exercise's target and the
    tolerance it counts within."""
    return numbers.text | (dict(target=fmt_seconds(step.target_s), tile=f"{TILE:,}")
                           if step.exercise else {})


def burst_numbers(s: Scenario, traces: Mapping[str, Trace]) -> Numbers:
    """What the under-load step quotes: each policy's last first token (the burst's drain) and
    the streams' largest gap."""
    unchunked, chunked = (traces[p] for p in BURST_POLICIES)
    values = {}
    for lane, trace in (("u", unchunked), ("c", chunked)):
        values[f"drain_{lane}"] = float(np.nanmax(request_times(trace).ttft_s))
        values[f"burst_gap_{lane}"] = stalls(trace, STALL_S, trace.prefilled).largest_gap_s
    text = {name: fmt_seconds(value) for name, value in values.items()}
    return Numbers(text | dict(burst=f"{BURST:,}", prompt=f"{s.prompt:,}",
                               decodes=f"{s.decodes:,}"), values)


def moments(unchunked: Trace, chunked: Trace, t_max: float) -> dict[str, float]:
    """The instants (s since the new prompt arrived, within [0, t_max]) a step can open at or
    play to: the chunked lane's first chunk done, the middle and the end of the unchunked
    streams' freeze, each lane's first token of the new request, the axis's end."""
    def first_token(trace: Trace) -> float:
        new = np.flatnonzero(~trace.prefilled)
        return float(request_times(trace).ttft_s[new[0]] + trace.arrival_s[new[0]]) if len(new) \
            else 0.0

    def streams_resume(trace: Trace) -> float:
        owner = np.repeat(np.arange(len(trace.prefilled)), np.diff(trace.token_offsets))
        after = trace.token_s[trace.prefilled[owner] & (trace.token_s > 0)]
        return float(after.min()) if len(after) else t_max

    with_chunk = np.flatnonzero(chunked.prefill_tokens > 0)
    resume = streams_resume(unchunked)
    found = {"start": 0.0,
             "first-chunk": float(chunked.end_s[with_chunk[0]]) if len(with_chunk) else 0.0,
             "stall": resume / 2, "first-token-unchunked": first_token(unchunked),
             "stall-end": resume, "first-token-chunked": first_token(chunked), "end": t_max}
    return {name: min(max(t, 0.0), t_max) for name, t in found.items()}


# --- the exercise ---------------------------------------------------------------------------------
# A pick within one GEMM tile below the largest budget counts: matrix kernels compute whole tiles
# of token rows, so engines set budgets in whole tiles (the calibrated cost mode's tile, fitted on
# measured kernels; the budget field moves by as much).
TILE = A100.gemm_tile


@dataclass(frozen=True)
class BudgetCheck:
    """One pick in the largest-budget exercise: the largest gap its run gives and the verdict
    (over the target; within it and within one TILE of the answer; under it, with room for more),
    and the answer: the largest budget whose iteration, priced alone, meets the target (the
    Sarathi-Serve recipe; the same in the simple cost mode). No answer: no budget meets it."""
    pick: int
    gap_s: float
    answer: int | None
    verdict: str
    fields: dict[str, str]


def ms3(seconds: float) -> str:
    """A gap close to a target, to the µs: 49.999 ms against 50.015 ms."""
    return f"{seconds * 1e3:,.3f} ms"


def largest_gap(s: Scenario, budget: int,
                lane_cards: Callable[[Scenario, str], list[words.Card]]) -> float:
    """The chunked lane's largest gap at `budget` (`lane_cards(scenario, policy)`: the lane's
    cards, cached in the app)."""
    cards = lane_cards(replace(s, budget=budget), s.chunked)
    return next(card.seconds for card in cards if card.label == words.GAP)


def check_budget(s: Scenario, pick: int, target_s: float, gap_of: Callable[[int], float]) -> BudgetCheck:
    """Judge `pick` by its run (`gap_of(budget)`: the chunked lane's largest gap at that budget)
    against the answer, which comes from pricing one iteration per budget (sim.studies.budget)."""
    cost = s.cost_model()
    gap = gap_of(pick)
    answer = largest_budget_within(cost, s.decodes, s.context, target_s, s.prompt)
    if gap > target_s:
        verdict = "over"
    elif answer is not None and pick > answer - TILE:
        verdict = "within"
    else:
        verdict = "under"

    def priced(budget: int) -> str:
        return ms3(budget_iteration_cost(cost, s.decodes, s.context, s.prompt, budget).time_s)

    fields = dict(pick=f"{pick:,}", pick_gap=ms3(gap), target=fmt_seconds(target_s)) \
        | budget_hint(s, target_s)
    if answer is not None:
        fields |= dict(answer=f"{answer:,}", answer_chunk=f"{answer - s.decodes:,}",
                       answer_gap=priced(answer), answer_next=f"{answer + 1:,}",
                       answer_next_gap=priced(answer + 1), lowest=f"{max(answer - TILE + 1, 1):,}")
    return BudgetCheck(pick, gap, answer, verdict, fields)


def budget_hint(s: Scenario, target_s: float) -> dict[str, str]:
    """The numbers to reason with, beside the decode step: the arithmetic each token of an
    iteration adds (2 FLOPs per parameter, over the GPUs' peak), and the budget whose
    arithmetic alone takes the target. In the simple cost mode an iteration takes the longer of
    its arithmetic and its weight reads, so that is the answer once the reads fit."""
    peak = f"{s.gpu.peak_flops / 1e12:,.4g} TFLOP/s"
    per_token_s = s.model.flops_per_token / (s.tp * s.gpu.peak_flops)
    # four figures: the division B <= target / time per token, done with the numbers shown
    return dict(cost_rule=s.cost_rule, token_time=f"{per_token_s * 1e6:,.4g} µs",
                token_formula=f"2 × {s.model.active_params / 1e9:,.3g} billion parameters / "
                              + (f"({s.tp} GPUs × {peak})" if s.tp > 1 else peak),
                estimate=f"{math.floor(target_s / per_token_s):,}")


# --- the text -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Glossary:
    kind: str   # "term" or "first"


class _Text(string.Formatter):
    """str.format with the glossary: {term:id}, {term:id:words}, {first:id}."""

    def __init__(self, hover: bool):
        self.hover = hover

    def get_value(self, key, args, kwargs):
        return _Glossary(key) if key in ("term", "first") else kwargs[key]

    def format_field(self, value, format_spec):
        if not isinstance(value, _Glossary):
            return super().format_field(value, format_spec)
        key, _, text = format_spec.partition(":")
        if key not in glossary.TERMS:
            raise TourError(f"{{{value.kind}:{format_spec}}}: {key!r} is not in ui/shell/glossary.py")
        if value.kind == "first":
            return glossary.first(key, hover=self.hover)
        return glossary.term(key, text or None) if self.hover else (text or glossary.TERMS[key].name)


def render(markdown: str, fields: Mapping[str, str], hover: bool = True) -> str:
    """A step's Markdown with its fields filled; glossary terms with their hover (HTML) or, for
    a printed handout, as plain words."""
    try:
        return _Text(hover).format(markdown, **fields)
    except KeyError as e:
        raise TourError(f"the text asks for the field {e} that this step's runs do not give") from None


def burst_traffic(s: Scenario) -> Traffic:
    """The under-load step's workload: BURST prompts of the scenario's length at once, beside
    its decoders (the Tour page and the handout run it under BURST_POLICIES)."""
    return traffic_from({"workload": "burst", "burst": BURST, "prompt": s.prompt,
                         "decodes": s.decodes, "context": s.context})
