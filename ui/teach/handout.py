"""The guided tour as a printable handout: each step's words and its figure at doc size, a recap,
and an answer key at the end (each guess's answer and its figure, the exercise's answer), so that
a reader predicts before they see. Each figure shows the lanes the step points at, at the moment
it explains: no two are alike. No server (no Streamlit): the same steps (ui/teach/tour.py) and
figure builders (charts/) as the app, drawn by vl-convert.

Written three ways: handout.md with its PNGs beside it; handout.html, one self-contained page
(the figures inside it, a print style sheet, nothing fetched) that any browser prints, and that
the tour offers as a download; and handout.pdf, that page printed by Chromium where it is
installed (else skipped, saying so).

    .venv/bin/python -m ui.teach.handout               # make handout: out/handout/
    .venv/bin/python -m ui.teach.handout --out DIR --width 900
"""

from __future__ import annotations

import argparse
import base64
import html
import re
import shutil
import subprocess
import sys
import tempfile
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
WIDTH = 720           # CSS pixels of a figure: the printed column's, so its labels print at their size
MAX_ITERATIONS = 500_000
RECAP = "recap.md"    # beside the steps: the tour in a few lines, for the handout
HTML_TAG = re.compile(r"<[^>]+>")
GLOSSARY_USE = re.compile(r"\{(?:term|first):(\w+)")
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")   # what prints the PDF, first found
PDF_TIMEOUT_S = 120


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
        frame = traffic_charts.timeline_frame(traces)
        figure = export.fitted(lambda plot: traffic_charts.traffic_timeline(
            frame, look, width=plot, overview=False), width)
        return figure, {}, tour.burst_numbers(s, traces)
    unchunked, chunked = _runs(s)
    tl = timeline(unchunked, chunked)
    named = {part.split(".")[0] for part in step.highlight} & set(tour.LANES)
    lanes = [lane for lane in tl.lanes if lane.key in named] or tl.lanes
    shown = tour.moments(unchunked, chunked, tl.t_max)[step.play or step.moment]
    figure = export.fitted(lambda plot: replace(tl, lanes=lanes).figure(look, plot), width)
    return figure, {"t": shown}, tour.lane_numbers(s, unchunked, chunked)


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


def markdown_and_figures(width: int = WIDTH) -> tuple[str, dict[str, bytes]]:
    """The handout as Markdown, and its figures (PNG) by the file names it gives them."""
    t = tour.load()
    sections, answers, figures = [f"# {t.words['title']}", t.words["handout_intro"]], [], {}
    for step in t.steps:
        figure, clock, numbers = step_figure(step, width)
        image = f"{step.number:02d}-{step.slug}.png"
        figures[image] = export.png(figure, **clock)
        text, answer = step_markdown(t, step, numbers, image)
        sections.append(text)
        answers += [answer] if answer else []
    sections += [f"## {t.words['recap']}", recap_markdown(t),
                 f"## {t.words['glossary']}", glossary_markdown(t),
                 f"## {t.words['answer_key']}", *answers]
    return "\n\n".join(sections) + "\n", figures


# --- the printable page -----------------------------------------------------------------------
PRINT_CSS = """
body { font: 11pt/1.45 "Source Sans Pro", "Helvetica Neue", Arial, sans-serif; color: #1F2430;
       max-width: 720px; margin: 2rem auto; padding: 0 1.5rem; }
h1 { font-size: 20pt; margin: 0 0 0.5rem; }
h2 { font-size: 14pt; margin: 1.6rem 0 0.4rem; break-after: avoid; }
img { display: block; max-width: 100%; height: auto; margin: 0.6rem 0; break-inside: avoid; }
section.key { break-before: page; }
code { font-size: 0.95em; }
p, li { orphans: 3; widows: 3; }
@page { size: A4; margin: 14mm 14mm 16mm; }
@media print { body { margin: 0; max-width: none; padding: 0; } a { color: inherit; } }
"""
INLINE = ((re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
          (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"<em>\1</em>"),
          (re.compile(r"`([^`]+)`"), r"<code>\1</code>"))
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _inline(text: str) -> str:
    """One block's text as HTML: escaped, then the handout's bold, italics and code."""
    out = html.escape(text, quote=False)
    for pattern, replacement in INLINE:
        out = pattern.sub(replacement, out)
    return out


def _paragraph_and_list(block: str) -> str:
    """A block of text, then any list it ends with: a line that starts with "- " opens an item,
    the lines after it continue the item (the words wrap in the source)."""
    text, items = [], []
    for line in block.splitlines():
        if line.startswith("- "):
            items.append([line[2:]])
        elif items:
            items[-1].append(line.strip())
        else:
            text.append(line)
    paragraph = f"<p>{_inline(chr(10).join(text))}</p>" if text else ""
    listed = "".join(f"<li>{_inline(' '.join(item))}</li>" for item in items)
    return paragraph + (f"<ul>{listed}</ul>" if items else "")


def page_html(markdown: str, figures: dict[str, bytes], title: str) -> str:
    """The handout's Markdown (only what `markdown_and_figures` writes: headings, paragraphs,
    bold, italics, code, lists, a figure alone in its block) as one self-contained HTML page,
    each figure inside it as a data URL."""
    body, open_section = [], False
    for block in markdown.strip().split("\n\n"):
        if block.startswith("## "):
            if open_section:
                body.append("</section>")
            heading = block[3:]
            key = heading == tour.load().words["answer_key"]
            body.append(f'<section{" class=key" if key else ""}><h2>{_inline(heading)}</h2>')
            open_section = True
        elif block.startswith("# "):
            body.append(f"<h1>{_inline(block[2:])}</h1>")
        elif IMAGE.fullmatch(block):
            alt, name = IMAGE.fullmatch(block).groups()
            data = base64.b64encode(figures[name]).decode()
            body.append(f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">')
        else:
            body.append(_paragraph_and_list(block))
    if open_section:
        body.append("</section>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{PRINT_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def handout_html(width: int = WIDTH) -> str:
    """The printable page, built in memory (what the tour's download serves)."""
    markdown, figures = markdown_and_figures(width)
    return page_html(markdown, figures, tour.load().words["title"])


def chromium() -> str | None:
    """The Chromium that prints the PDF: the first of CHROMIUM on the PATH, else None."""
    return next((found for name in CHROMIUM if (found := shutil.which(name))), None)


def print_pdf(page: Path, pdf: Path, browser: str) -> None:
    """`page` printed to `pdf` by headless Chromium (no header or footer lines)."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                               f"--user-data-dir={profile}", "--no-pdf-header-footer",
                               f"--print-to-pdf={pdf}", page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=PDF_TIMEOUT_S)
    if done.returncode != 0 or not pdf.exists():
        raise OSError(f"{browser} could not print {page}: {done.stderr.strip()[-300:]}")


def write(out: Path = OUT, width: int = WIDTH, pdf: bool = True) -> Path:
    """Draw every step's figure and write the handout (Markdown, its PNGs and the HTML page;
    with `pdf`, the PDF where Chromium is installed); the Markdown's path."""
    out.mkdir(parents=True, exist_ok=True)
    markdown, figures = markdown_and_figures(width)
    for name, data in figures.items():
        (out / name).write_bytes(data)
    path = out / "handout.md"
    path.write_text(markdown, encoding="utf-8")
    page = out / "handout.html"
    page.write_text(page_html(markdown, figures, tour.load().words["title"]), encoding="utf-8")
    browser = chromium() if pdf else None
    if browser:
        print_pdf(page, out / "handout.pdf", browser)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ui.teach.handout", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder to write to (default {OUT})")
    parser.add_argument("--width", default=WIDTH, help=f"each figure's width in CSS pixels, "
                                                       f"600 to 2,000 (default {WIDTH})")
    args = parser.parse_args(argv)
    try:
        width = check_number("--width", args.width, low=600, low_inclusive=True, high=2000,
                             integer=True)
        path = write(args.out, width)
    except (InputError, OSError, subprocess.SubprocessError) as e:
        print(f"handout: {e}", file=sys.stderr)
        return 2
    made = "handout.html, handout.pdf" if (args.out / "handout.pdf").exists() and chromium() \
        else "handout.html"
    print(f"wrote {path}, {len(tour.load().steps)} figures and {made} beside it")
    if not chromium():
        print(f"no PDF: none of {', '.join(CHROMIUM)} is installed; print handout.html from a "
              "browser instead")
    return 0


if __name__ == "__main__":
    sys.exit(main())
