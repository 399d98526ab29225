"""The guided tour as a printable handout: one Markdown file with each step's words (guesses with
their answers, the exercise with its answer) and its figure at doc size, drawn at the moment the
step explains. No browser and no server: the same steps (ui/tour.py) and figure builders
(charts/) as the app, drawn by vl-convert.

    .venv/bin/python -m ui.handout               # make handout: out/handout/handout.md and its PNGs
    .venv/bin/python -m ui.handout --out DIR --width 900
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from charts import export
from charts import traffic as traffic_charts
from charts.figure import Figure
from charts.theme import Look
from charts.views import timeline
from sim.errors import InputError, check_number
from sim.serving.engine import Trace, simulate
from sim.serving.policies import Limits, get_policy

from . import glossary, story, tour, words
from .scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out" / "handout"
WIDTH = 900           # CSS pixels of a figure's plot: a page's width at PNG_SCALE
MAX_ITERATIONS = 500_000
GLOSSARY_USE = re.compile(r"\{(?:term|first):(\w+)")


def _runs(s: Scenario) -> tuple[Trace, Trace]:
    return s.run(s.unchunked, MAX_ITERATIONS), s.run(s.chunked, MAX_ITERATIONS)


def _burst(s: Scenario) -> dict[str, Trace]:
    t = tour.burst_traffic(s)
    return {p: simulate(t.workload(), get_policy(p), s.cost_model(), budget=s.budget,
                        limits=Limits(max_seqs=t.max_seqs, max_iterations=MAX_ITERATIONS))
            for p in tour.BURST_POLICIES}


def step_figure(step: tour.Step, width: int) -> tuple[Figure, dict[str, float], tour.Numbers]:
    """The step's figure, the clock values to draw it at, and the numbers its words quote."""
    s = step.scenario()
    look = Look()
    if step.view == "burst":
        traces = _burst(s)
        figure = traffic_charts.traffic_timeline(traffic_charts.timeline_frame(traces), look,
                                                 width=width, overview=False)
        return figure, {}, tour.burst_numbers(s, traces)
    unchunked, chunked = _runs(s)
    tl = timeline(unchunked, chunked)
    shown = tour.moments(unchunked, chunked, tl.t_max)[step.play or step.moment]
    return tl.figure(look, width), {"t": shown}, tour.lane_numbers(s, unchunked, chunked)


def step_markdown(t: tour.Tour, step: tour.Step, numbers: tour.Numbers, image: str) -> str:
    """A step's words as the handout prints them: its text, its guess and answer, or its exercise
    and answer, and its figure."""
    w = t.words
    fields = tour.step_fields(step, numbers)
    chapter = story.CHAPTERS[step.chapter_number() - 1]
    parts = [f"## {step.number}. {step.title}",
             f"*{w['chapter'].format(number=step.chapter_number(), chapters=len(story.CHAPTERS))}: "
             f"{chapter.title.split('. ', 1)[-1]}*",
             tour.render(step.text, fields, hover=False)]
    if step.guess:
        parts += [f"**{w['guess_first']}** {tour.render(step.section('question'), fields, hover=False)} "
                  f"({' · '.join(step.guess)})",
                  f"**{w['answer']}** {tour.render(step.section('reveal'), fields, hover=False)}"]
    if step.exercise:
        s = step.scenario()

        def gap_of(budget: int) -> float:
            return tour.largest_gap(s, budget, lambda x, policy: words.lane_cards(
                x.run(policy, MAX_ITERATIONS), x.mode, x.tp))

        check = tour.check_budget(s, s.budget, step.target_s, gap_of)
        if check.answer is not None:
            check = tour.check_budget(s, check.answer, step.target_s, gap_of)
        parts += [f"**{w['exercise']}** {tour.render(step.section('question'), fields, hover=False)}",
                  f"**{w['answer']}** "
                  + tour.render(step.section("answer"), fields | check.fields, hover=False)]
    parts.append(f"![{step.number}. {step.title}]({image})")
    return "\n\n".join(parts)


def glossary_markdown(t: tour.Tour) -> str:
    """Every term the tour's words use, with its definition (ui/glossary.py), in tour order."""
    used = dict.fromkeys(key for step in t.steps
                         for text in (step.text, *(body for _, body in step.sections))
                         for key in GLOSSARY_USE.findall(text))
    return "\n".join(f"- {line}" for key, line in zip(glossary.TERMS, glossary.entries()) if key in used)


def write(out: Path = OUT, width: int = WIDTH) -> Path:
    """Draw every step's figure and write the handout; its path."""
    t = tour.load()
    out.mkdir(parents=True, exist_ok=True)
    sections = [f"# {t.words['title']}", t.words["handout_intro"]]
    for step in t.steps:
        figure, clock, numbers = step_figure(step, width)
        image = f"{step.number:02d}-{step.slug}.png"
        (out / image).write_bytes(export.png(figure, **clock))
        sections.append(step_markdown(t, step, numbers, image))
    sections += [f"## {t.words['glossary']}", glossary_markdown(t)]
    path = out / "handout.md"
    path.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ui.handout", description=__doc__.split("\n\n")[0])
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
