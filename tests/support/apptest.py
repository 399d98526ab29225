"""Opening the app in Streamlit's AppTest and reading what a page shows."""

import html
import json
import re
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from ui.shell.chart_view import COMPONENT as CHART

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = ["pages/learn/home.py", "pages/learn/side_by_side.py", "pages/learn/worked_example.py",
         "pages/learn/roofline.py", "pages/advanced/fidelity.py"]
# every page script, the traffic pages too (tests/ui/test_traffic_app.py covers their details)
ALL_PAGES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*/*.py"))
FIDELITY = "pages/advanced/fidelity.py"
TIMEOUT = 60   # the first run imports Streamlit, Altair and vl-convert


def open_app(page=None, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({k: v if isinstance(v, list) else str(v) for k, v in query.items()})
    at.run()
    if page:
        at.switch_page(page).run()
    return at


def charts(at: AppTest) -> list[dict]:
    """The charts a page draws (ui/shell/chart_view.py), each as the Vega spec it sends the browser."""
    return [json.loads(json.loads(e.proto.json)["spec"]) for e in at.get("bidi_component")
            if e.proto.component_name == CHART]


def shown(at: AppTest) -> str:
    """All the text a page shows, in one string."""
    parts = [h.value for h in (*at.title, *at.header, *at.subheader)]
    parts += [m.value for m in at.markdown if not is_table(m.value)] + [c.value for c in at.caption]
    parts += [f"{m.label}: {m.value}" for m in at.metric]
    parts += [w.value for w in at.warning] + [e.value for e in at.error]
    parts += [s.value for s in at.success] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


# a code span (its fence: a run of backticks, closed by a run as long), or an escaped character
SPAN_OR_ESCAPE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)|\\([!-/:-@\[-`{-~])")


def as_read(markdown: str) -> str:
    """Markdown (ui.shell.literal's values among it) as a reader sees it: each code span as its text
    (one space each side dropped where both ends have one), backslash escapes gone."""
    def read(match: re.Match) -> str:
        if match.group(3) is not None:
            return match.group(3)
        text = match.group(2)
        return text[1:-1] if text[0] == text[-1] == " " and text.strip() else text
    return SPAN_OR_ESCAPE.sub(read, markdown)


def assert_clean(at: AppTest):
    assert not at.exception, [e.value for e in at.exception]


def metrics(at: AppTest) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric]


def seconds(shown_time: str) -> float:
    """A time as sim.units.fmt_seconds shows it ("824 µs", "14.21 ms"), in seconds."""
    number, unit = shown_time.split()
    return float(number.replace(",", "")) * {"s": 1, "ms": 1e-3, "µs": 1e-6}[unit]


def page_links(at: AppTest) -> list[str]:
    return [link.proto.label for link in at.get("page_link")]


def nodes(block):
    """Every element of a block of the page, in page order."""
    yield block
    for child in (getattr(block, "children", None) or {}).values():
        yield from nodes(child)


def strings(node, *attrs: str) -> list[str]:
    """The node's string attributes among `attrs` (an element without one raises rather than
    returning None)."""
    found = []
    for attr in attrs:
        try:
            text = getattr(node, attr)
        except Exception:
            continue
        if isinstance(text, str):
            found.append(text)
    return found


def text_in_order(block) -> str:
    """The text a block of the page shows, in page order: headings, Markdown and captions (HTML
    tags, bold marks and backticks stripped, as a reader sees them), alerts, metric labels and
    values, widget, expander and link labels, and tables' headers and cells. Hover texts (help,
    glossary titles) are in `hover_texts`."""
    parts: list[str] = []
    for node in nodes(block):
        frame = getattr(node, "value", None)
        frame = getattr(frame, "data", frame)          # a pandas Styler holds its frame in .data
        if isinstance(frame, pd.DataFrame):
            parts.append(" ".join(str(x) for x in (frame.index.name or "", *frame.columns,
                                                   *frame.index,
                                                   *frame.astype(str).to_numpy().ravel())))
        parts += [html.unescape(re.sub(r"<[^>]+>|\*\*|`", "", text))
                  for text in strings(node, "label", "value")]
    return "\n".join(parts)


def hover_texts(block) -> str:
    """The texts a block shows on hover, in page order: every widget's and metric's help (the
    "?" tooltip) and the title attributes of its HTML (the glossary's definitions)."""
    parts: list[str] = []
    for node in nodes(block):
        parts += strings(node, "help")
        parts += [html.unescape(title) for text in strings(node, "value")
                  for title in re.findall(r'title="([^"]*)"', text)]
    return "\n".join(parts)


TABLE_RULE = re.compile(r"\|( --- \|)+")
CELL_EDGE = re.compile(r"(?<!\\)\|")


def is_table(markdown: str) -> bool:
    """Whether a Markdown element is one of the lab's tables (ui.shell.widgets.table)."""
    lines = markdown.split("\n")
    return len(lines) > 1 and lines[0].startswith("| ") and bool(TABLE_RULE.fullmatch(lines[1]))


def tables(at: AppTest) -> list[pd.DataFrame]:
    """The page's tables (ui.shell.widgets.table: Markdown tables), each as a frame of text indexed by
    its first column, as they were drawn."""
    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\|", "|") for c in CELL_EDGE.split(line.strip()[1:-1])]
    frames = []
    for m in at.markdown:
        if is_table(m.value):
            head, _, *rows = m.value.split("\n")
            name, *columns = cells(head)
            rows = [cells(row) for row in rows]
            frames.append(pd.DataFrame([r[1:] for r in rows], columns=columns,
                                       index=pd.Index([r[0] for r in rows], name=name or None)))
    return frames
