"""ui.shell.presenter's room before the browser reports it (the window the page wrote to a cookie as it
loaded), the range of rooms a fit stays the same in, and each page's main figure (what presenter
mode shows first). The browser test
(tests/browser/test_presenter_browser.py) checks a fresh Side by side runs once on the guess."""

from unittest import mock

import pytest

from tests.support.apptest import open_app, shown
from ui.shell import presenter
from ui.shell.chart_view import COMPONENT as CHART
from ui.shell.streamlit_internals import main_column_px


@pytest.mark.parametrize("cookie, expected", [
    ("1440x900", presenter.Room(1440, 900, None, main_column_px(1440))),
    (None, presenter.FALLBACK_ROOM),                  # no cookie: AppTest, an old page
    ("900x700", presenter.FALLBACK_ROOM),             # too narrow to guess the column
    ("1440", presenter.FALLBACK_ROOM), ("wide x tall", presenter.FALLBACK_ROOM),
    ("99999999x900", presenter.FALLBACK_ROOM), ("1440x0", presenter.FALLBACK_ROOM),
])
def test_the_guessed_room_is_the_cookies_window_or_the_fallback(cookie, expected):
    cookies = {} if cookie is None else {presenter.WINDOW_COOKIE: cookie}
    with mock.patch.object(presenter.st, "context", mock.Mock(cookies=cookies)):
        assert presenter.guessed_room() == expected


@pytest.mark.parametrize("window, plot", [(1280, 900), (1024, 900), (1440, 1060), (1920, 1540),
                                          (3840, 1800)])
def test_on_a_projector_a_page_wide_chart_fills_the_window(window, plot):
    """The window less presenter.css's padding and the plot's titles: CHART_WIDTH at 1280 px
    (and in any narrower window), twice it at most."""
    with mock.patch.object(presenter, "room", return_value=presenter.Room(window, 1080)):
        assert presenter.chart_width(presenter.Look(presenter=True)) == plot
        assert presenter.chart_width(presenter.Look()) == 900     # a desktop keeps CHART_WIDTH


def test_a_fit_keeps_over_the_whole_interval_where_it_is_the_same():
    assert presenter._same_within(lambda v: 590 <= v <= 640, 623) == (590, 640)
    assert presenter._same_within(lambda v: v == 623, 623) == (623, 623)
    assert presenter._same_within(lambda v: v >= 500, 623) == (500, 623 + presenter.KEEPS_SCAN_PX)


def main_figures(at) -> list:
    """The page's main-figure containers (`presenter.figure`): blocks whose id ends in its key."""
    found, todo = [], [at._tree]
    while todo:
        node = todo.pop()
        if getattr(getattr(node, "proto", None), "id", "").endswith(f"-{presenter.FIGURE}"):
            found.append(node)
        todo += list(getattr(node, "children", {}).values())
    return found


def charts_in(node) -> list[str]:
    """The keys of the charts (ui/shell/chart_view.py) drawn inside `node`."""
    found, todo = [], [node]
    while todo:
        node = todo.pop()
        proto = getattr(node, "proto", None)
        if getattr(proto, "component_name", None) == CHART:
            found.append(proto.id)
        todo += list(getattr(node, "children", {}).values())
    return found


# a page's main figure, by its chart's key; Home and Side by side draw theirs in the stage
FIGURES = {"pages/learn/worked_example.py": "worked_weights", "pages/learn/roofline.py": "roofline",
           "pages/learn/exactness.py": "exactness",
           "pages/under_load/budget_tradeoff.py": "budget-frontier",
           "pages/under_load/traffic.py": "traffic-timeline", "pages/advanced/memory.py": "kv-memory",
           "pages/under_load/prefix_caching.py": "prefix-caching",
           "pages/advanced/fidelity.py": "fidelity-times"}


@pytest.mark.parametrize("path", list(FIGURES))
def test_a_page_draws_one_main_figure_its_chart(path):
    at = open_app(path, presenter="1")
    figures = main_figures(at)
    assert len(figures) == 1
    assert [key.rsplit("-chart_", 1)[-1] for key in charts_in(figures[0])] == [FIGURES[path]]


@pytest.mark.parametrize("on", [True, False], ids=["presenter", "page"])
def test_a_projectors_worked_example_shows_the_last_step_alone(on):
    at = open_app("pages/learn/worked_example.py", presenter=str(on).lower())
    for _ in range(2):
        at.button(key="worked_next").click().run()
    steps = [h.value for h in at.subheader if h.value[0].isdigit()]
    assert steps[-1].startswith("3. ") and len(steps) == (1 if on else 3)
    assert "Step 3 of 7." in shown(at) and not at.button(key="worked_back").disabled
    at.toggle(key="worked_all").set_value(True).run()   # every step, asked for, on a projector too
    assert len([h for h in at.subheader if h.value[0].isdigit()]) == 7
