"""ui.shell.presenter's room before the browser reports it (the window the page wrote to a cookie as it
loaded), and the range of rooms a fit stays the same in. The browser test
(tests/browser/test_presenter_browser.py) checks a fresh Side by side runs once on the guess."""

from unittest import mock

import pytest

from ui.shell import presenter
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


def test_a_fit_keeps_over_the_whole_interval_where_it_is_the_same():
    assert presenter._same_within(lambda v: 590 <= v <= 640, 623) == (590, 640)
    assert presenter._same_within(lambda v: v == 623, 623) == (623, 623)
    assert presenter._same_within(lambda v: v >= 500, 623) == (500, 623 + presenter.KEEPS_SCAN_PX)
