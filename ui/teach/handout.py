"""The guided tour as a printable handout: one Markdown file with each step's words and its figure
at doc size, a recap, and an answer key at the end (each guess's answer and its figure, the
exercise's answer), so that a reader predicts before they see. Each figure shows the lanes the
step points at, at the moment it explains: no two are alike. No browser and no server (no
Streamlit): the same steps (ui/teach/tour.py) and figure builders (charts/) as the app, drawn by
vl-convert.

    .venv/bin/python -m ui.teach.handout               # make handout: out/handout/handout.md and its PNGs
    .venv/bin/python -m ui.teach.handout --out DIR --width 900
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from dataclasses import replace
from pathlib import Path

from charts import export
from charts import traffic as traffic_charts
from charts.figure import Figure
from charts.theme import Look
from charts.views import timeline
from sim.errors import InputError, check_number
from sim.serving.engine import Trace
from sim.serving.policies import get_policy, lane_budget
from sim.serving.run import Run

from ..learn import words
from ..shell import controls, glossary
from ..shell.scenario import Scenario
from . import tour

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "handout"
WIDTH = 900           # CSS pixels of a figure's plot: a page's width at PNG_SCALE
MAX_ITERATIONS = 500_000
RECAP = "recap.md"    # beside the steps: the tour in a few lines, for the handout
HTML_TAG = re.compile(r"<[^>]+>")
GLOSSARY_USE = re.compile(r"\{(?:term|first):(\w+)")


def _runs(s: Scenario) -> tuple[Trace, Trace]:
    return s.run(s.unchunked, MAX_ITERATIONS), s.run(s.chunked, MAX_ITERATIONS)


def _burst(s: Scenario) -> dict[str, Trace]:
    t = tour.burst_traffic(s)
    workload = t.workload()
    return {p: Run(workload=workload, policy=get_policy(p), cost=s.cost_model(),
                   budget=lane_budget(get_policy(p), workload, s.budget),
                   limits=t.limits(p, s)).capped(MAX_ITERATIONS).simulate()
            for p in tour.BURST_POLICIES}


def step_figure(step: tour.Step, width: int) -> tuple[Figure, dict[str, float], tour.Numbers]:
    """The step's figure (the lanes it points at, both when it names none), the clock values to
    draw it at (the moment its reveal plays to, else the one it opens at), and the numbers its
    words quote."""
    s = step.scenario()
    look = Look()
    if step.view == "burst":
        traces = _burst(s)
        figure = traffic_charts.traffic_timeline(traffic_charts.timeline_frame(traces), look,
                                                 width=width, overview=False)
        return figure, {}, tour.burst_numbers(s, traces)
    unchunked, chunked = _runs(s)
    tl = timeline(unchunked, chunked)
    named = {part.split(".")[0] for part in step.highlight} & set(tour.LANES)
    lanes = [lane for lane in tl.lanes if lane.key in named] or tl.lanes
    shown = tour.moments(unchunked, chunked, tl.t_max)[step.play or step.moment]
    return (replace(tl, lanes=lanes).figure(look, width), {"t": shown},
            tour.lane_numbers(s, unchunked, chunked))


def exercise_check(step: tour.Step) -> tour.BudgetCheck:
    """The exercise judged at its answer (where there is one): the fields its answer quotes."""
    s = step.scenario()

    def gap_of(budget: int) -> float:
        return tour.largest_gap(s, budget, lambda x, policy: words.lane_cards(
            x.run(policy, MAX_ITERATIONS), x.mode, x.tp))

    check = tour.check_budget(s, s.budget, step.target_s, gap_of)
    return check if check.answer is None else tour.check_budget(s, check.answer, step.target_s, gap_of)


def _plain(markdown: str, fields: dict[str, str]) -> str:
    """A text for print: glossary terms as plain words, a field's hover markup (HTML) dropped."""
    return html.unescape(HTML_TAG.sub("", tour.render(markdown, fields, hover=False)))


def step_markdown(t: tour.Tour, step: tour.Step, numbers: tour.Numbers,
                  image: str) -> tuple[str, str]:
    """A step as the handout prints it (its text, its guess's question and choices or its
    exercise with the hint, and, unless it is a guess's answer, its figure) and its entry in the
    answer key ("" for a step that asks nothing)."""
    w = t.words
    fields = tour.step_fields(step, numbers)
    figure = f"![{step.number}. {step.title}]({image})"
    parts = [f"## {step.number}. {step.title}",
             f"*{w['chapter'].format(title=step.chapter_title())}*", _plain(step.text, fields)]
    key = ""
    if step.guess:
        parts.append(f"**{w['guess_first']}** {_plain(step.section('question'), fields)} "
                     f"({' · '.join(step.guess)})")
        key = f"**{step.number}. {step.title}.** {_plain(step.section('reveal'), fields)}\n\n{figure}"
    else:
        parts.append(figure)
    if step.exercise:
        check = exercise_check(step)
        said = fields | check.fields
        parts += [f"**{w['exercise']}** {_plain(step.section('question'), said)}"]
        if check.answer is None:
            key = f"**{step.number}. {step.title}.** {_plain(step.section('impossible'), said)}"
        else:
            parts.append(f"**{w['hint']}** {_plain(step.section('hint'), said)}")
            key = f"**{step.number}. {step.title}.** {_plain(step.section('answer'), said)}"
    return "\n\n".join(parts), key


def recap_markdown(t: tour.Tour, folder: Path = controls.TOUR_FOLDER) -> str:
    """The tour in a few lines (recap.md beside the steps), with the first step's numbers: the
    default scenario's."""
    first = t.step(1)
    s = first.scenario()
    fields = tour.step_fields(first, tour.lane_numbers(s, *_runs(s)))
    return _plain((folder / RECAP).read_text(encoding="utf-8").strip(), fields)


def glossary_markdown(t: tour.Tour) -> str:
    """Every term the tour's words use, with its definition (ui/shell/glossary.py), in tour order."""
    used = dict.fromkeys(key for step in t.steps
                         for text in (step.text, *(body for _, body in step.sections))
                         for key in GLOSSARY_USE.findall(text))
    return "\n".join(f"- {line}" for key, line in zip(glossary.TERMS, glossary.entries()) if key in used)


def write(out: Path = OUT, width: int = WIDTH) -> Path:
    """Draw every step's figure and write the handout; its path."""
    t = tour.load()
    out.mkdir(parents=True, exist_ok=True)
    sections, answers = [f"# {t.words['title']}", t.words["handout_intro"]], []
    for step in t.steps:
        figure, clock, numbers = step_figure(step, width)
        image = f"{step.number:02d}-{step.slug}.png"
        (out / image).write_bytes(export.png(figure, **clock))
        text, answer = step_markdown(t, step, numbers, image)
        sections.append(text)
        answers += [answer] if answer else []
    sections += [f"## {t.words['recap']}", recap_markdown(t),
                 f"## {t.words['glossary']}", glossary_markdown(t),
                 f"## {t.words['answer_key']}", *answers]
    path = out / "handout.md"
    path.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ui.teach.handout", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder to write to (default {OUT})")
    parser.add_argument("--width", default=WIDTH, help=f"each figure's plot width in CSS pixels, "
                                                       f"300 to 2,000 (default {WIDTH})")
    args = parser.parse_args(argv)
    try:
        width = check_number("--width", args.width, low=300, low_inclusive=True, high=2000,
                             integer=True)
        path = write(args.out, width)
    except (InputError, OSError) as e:
        print(f"handout: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path} and {len(tour.load().steps)} figures beside it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
