"""Random links to the app's pages: each query key a control's URL key, each value valid, out of
range, unreadable or repeated (hypothesis strategies); hostile values, each key with each payload
of tests/support/hostile.py; and what one page run with such a link did, classified."""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass, replace

from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from harness.memory import reset_peak, resident_mib
from sim.presets.hardware import GPUS
from sim.presets.models import MODELS
from tests.support.apptest import APP, as_read, shown
from tests.support.hostile import markup
from ui.shell import controls, story
from ui.shell.controls import CONTROLS, Control
from ui.shell.literal import LIMIT, visible

SIDEBAR = [c.key for c in (*controls.SCENARIO, *controls.HARDWARE, *controls.POLICY,
                           *controls.CUSTOM_GPU, *controls.CUSTOM_MODEL, *controls.DISPLAY)]
# the controls each page draws besides the sidebar's (a link may name any key: the others too)
PAGE_KEYS = {page.path: list(page.controls) for page in story.PAGES}
UNREADABLE = st.sampled_from(["", "abc", "nan", "NaN", "inf", "-inf", "1e999", "-1e999", "0x10",
                              "1,000", " 5 ", "１２", "5e", "--3", "<b>1</b>", "%20", "true"])


def _numbers(c: Control):
    """Valid numbers, spread over the whole range on a log scale, ends included."""
    high = min(c.high, 1e9)
    low = max(c.low, 0.0)
    if c.kind == "int":
        return st.one_of(st.sampled_from([int(c.low), int(c.high), int(c.default)]),
                         st.integers(int(low), int(high)),
                         st.integers(0, 40).map(lambda e: min(int(high), int(low) + 2 ** e)))
    smallest = max(low, 1e-3)
    return st.one_of(st.sampled_from([c.low, c.high, c.default]),
                     st.floats(math.log10(smallest), math.log10(high)).map(lambda e: 10 ** e))


def _valid(c: Control):
    if c.kind in ("int", "float"):
        return _numbers(c).map(lambda v: f"{v:g}" if isinstance(v, float) else str(v))
    if c.kind == "bool":
        return st.sampled_from(["true", "false", "True", "FALSE"])
    return st.sampled_from(c.options)


def _out_of_range(c: Control):
    if c.kind in ("int", "float"):
        below = [] if math.isinf(c.low) else [c.low - 1, c.low - 1e-9, -1e12]
        above = [] if math.isinf(c.high) else [c.high + 1, c.high * 10, 1e300]
        return st.sampled_from([*below, *above, -0.5]).map(lambda v: f"{v:g}")
    if c.kind == "bool":
        return st.sampled_from(["yes", "1", "on"])
    return st.sampled_from(["nope", c.options[0].upper(), c.options[0] + " ", "custom2"])


def value(c: Control):
    """One link value for `c`: mostly valid; out of range, unreadable, or repeated (a list)."""
    one = st.one_of(_valid(c), _valid(c), _out_of_range(c), UNREADABLE)
    if c.kind == "multi":
        return st.lists(st.one_of(st.sampled_from(c.options), UNREADABLE), max_size=7)
    return st.one_of(one, st.lists(one, min_size=2, max_size=3))


@st.composite
def links(draw, page: str) -> dict[str, str | list[str]]:
    """A query string for `page`: mostly its own controls and the sidebar's, sometimes others."""
    keys = draw(st.lists(st.one_of(st.sampled_from(PAGE_KEYS[page] or SIDEBAR),
                                   st.sampled_from(SIDEBAR), st.sampled_from(list(CONTROLS))),
                         max_size=8, unique=True))
    return {key: draw(value(CONTROLS[key])) for key in keys}


# --- one run of a page --------------------------------------------------------------------------
# Python's and JSON's words for no number; "None of the budgets ..." is English (ui/learn/words.py)
NONSENSE = re.compile(r"\b(nan|NaN|inf|-inf|Infinity)\b|\bNone\b(?! of\b)|\bnull\b")
QUOTED = re.compile(r"“[^”]*”")   # a link's own values, quoted back in its notes (ui.shell.controls.in_link)
# what the sidebar quotes of a preset's source, which may say `null` of a config.json field
SOURCES = [preset.source for preset in (*GPUS.values(), *MODELS.values())]
HANG_S = 120   # a run longer than this is a hang (the pages' own limit is far below it)


@dataclass(frozen=True)
class Case:
    page: str
    query: dict
    outcome: str          # run, note, refusal (clean); traceback, hang, nonsense, markup,
                          # unquoted (failures)
    seconds: float
    peak_mib: float       # server memory the run added at its peak (resident set)
    resident_mib: float = 0.0   # the process's resident set at that peak
    detail: str = ""

    @property
    def clean(self) -> bool:
        return self.outcome in ("run", "note", "refusal")


def run_case(page: str, query: dict) -> Case:
    return run_page(page, query)[1]


def run_page(page: str, query: dict) -> tuple[AppTest, Case]:
    """One run of `page` with the link `query`: the AppTest after it, and the case."""
    at = AppTest.from_file(APP, default_timeout=HANG_S)
    at.query_params.update(query)
    at.switch_page(page)
    before = resident_mib()
    reset_peak()
    start = time.perf_counter()
    try:
        at.run()
    except RuntimeError as e:              # AppTest's timeout
        return at, Case(page, query, "hang", time.perf_counter() - start, 0.0, detail=str(e))
    seconds = time.perf_counter() - start
    resident = resident_mib("VmHWM")
    measured = (seconds, resident - before, resident)
    if at.exception:
        return at, Case(page, query, "traceback", *measured, at.exception[0].value)
    text = QUOTED.sub("", shown(at))
    for source in SOURCES:
        text = text.replace(source, "")
    if (odd := NONSENSE.search(text)) is not None:
        return at, Case(page, query, "nonsense", *measured,
                        text[max(0, odd.start() - 80):odd.end() + 80])
    if at.error or any(b.label.startswith("Run (") for b in at.button):
        return at, Case(page, query, "refusal", *measured, (at.error or at.info)[0].value[:160])
    return at, Case(page, query, "note" if at.warning else "run", *measured)


# --- hostile values -----------------------------------------------------------------------------
HARMLESS = "zz"   # a value no key reads: the same notes as a payload's, quoting plain letters


def page_of(key: str) -> str:
    """The page that draws `key`'s control (Home for the sidebar's, and for the missing page)."""
    return next((page for page, keys in PAGE_KEYS.items() if key in keys), "pages/learn/home.py")


def page_markup(at: AppTest) -> Counter:
    """What every Markdown element of the page draws besides text (tests/support/hostile.py)."""
    parts = [*at.title, *at.header, *at.subheader, *at.markdown, *at.caption, *at.warning,
             *at.error, *at.success, *at.info]
    return Counter(drawn for part in parts for drawn in markup(str(part.value)))


def hostile_case(page: str, query: dict, quoted: str, expected: Counter) -> tuple[AppTest, Case]:
    """`page` opened with the link `query`: a clean run whose Markdown draws nothing the same
    link with a harmless value (`expected`) does not, and whose note quotes `quoted` (a value or
    a key of the link) as the link spells it; else outcome "markup" or "unquoted", with what was
    wrong. The AppTest after it, and the case."""
    at, case = run_page(page, query)
    if not case.clean:
        return at, case
    extra = page_markup(at) - expected
    if extra:
        return at, replace(case, outcome="markup", detail=str(dict(extra))[:300])
    shown = f"“{visible(quoted[:LIMIT])}"
    if not any(shown in as_read(str(w.value)) for w in at.warning):
        return at, replace(case, outcome="unquoted", detail=shown[:160])
    return at, case
