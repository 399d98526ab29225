"""A page's runs within its limits (ui/shell/jobs.py), with stand-in jobs whose cost is known: small work
runs at once, large work waits for a button, too much is refused, and a run that takes longer
than estimated is stopped by its tier's deadline and remembered. (Cancel needs a click during a
run: tests/browser/test_limits_browser.py.)"""

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.apptest import assert_clean
from tests.support.stand_in_jobs import CALLS, ITERATION_S, JOBS, STORE, page, stand_in
from ui.shell import jobs
from ui.shell.store import RESULTS
from ui.shell.work import NOW_DEADLINE_S, NOW_SECONDS, RUN_ITERATIONS


@pytest.fixture
def app():
    CALLS.clear()
    STORE.clear()

    def run(*stand_ins):
        JOBS[:] = stand_ins
        at = AppTest.from_function(page, default_timeout=30)
        at.run()
        assert_clean(at)
        return at
    return run


def said(at) -> str:
    return "\n".join(str(e.value) for e in (*at.markdown, *at.info, *at.error, *at.caption))


def test_small_work_runs_at_once_and_is_kept(app):
    at = app(stand_in("a", 0.5), stand_in("b", 0.5))
    assert "results: a done, b done" in said(at) and not at.button
    assert [name for name, _ in CALLS] == ["a", "b"]
    at.run()                                       # a rerun finds both kept
    assert len(CALLS) == 2 and "results: a done, b done" in said(at)


def test_large_work_waits_for_the_button_with_its_estimate(app):
    at = app(stand_in("a", 2.0), stand_in("b", 2.0))
    assert not CALLS and "results" not in said(at)
    assert "To do the test work:" in at.info[0].value and "4 s" in at.info[0].value
    assert at.button(key="go").label == "Run (4 s estimated)"
    at.button(key="go").click().run()
    assert "results: a done, b done" in said(at)
    assert not at.info and [cap for _, cap in CALLS] == [RUN_ITERATIONS] * 2


def test_too_much_work_is_refused_with_the_estimate_and_what_to_change(app):
    at = app(*(stand_in(str(i), 20.0) for i in range(4)))
    assert not CALLS and not at.button
    error = at.error[0].value
    assert "Can't do the test work" in error and "80 s" in error and "less work." in error


def test_a_run_longer_than_estimated_stops_at_the_deadline_and_waits_for_the_button(app):
    allowed = int(NOW_DEADLINE_S / ITERATION_S)              # what fits in the tier's deadline
    at = app(stand_in("slow", 0.1, needs=allowed + 1000))
    assert CALLS[0][1] <= allowed                            # stopped by the cap, not left to run
    assert "longer than estimated" in said(at) and at.button(key="go")
    # what it reached is remembered: the estimate is now above the cap it hit
    assert JOBS[0].estimate.iterations >= CALLS[0][1] and JOBS[0].estimate.seen
    assert JOBS[0].estimate.seconds > NOW_SECONDS
    at.button(key="go").click().run()
    assert "results: slow done" in said(at) and CALLS[-1] == ("slow", RUN_ITERATIONS)


def test_a_run_past_the_run_cap_is_an_error_or_kept_as_nothing(app):
    at = app(stand_in("huge", 0.1, needs=RUN_ITERATIONS + 1))
    at.button(key="go").click().run()                        # past the deadline: the button
    assert "capped: huge needed more than 500,000" in said(at)
    assert RESULTS.get(("capped", JOBS[0].key)) == RUN_ITERATIONS
    at = app(stand_in("huge", 0.1, needs=RUN_ITERATIONS + 1, keep_capped=True))
    at.button(key="go").click().run()
    assert "results: None" in said(at)


def test_a_run_refused_on_its_way_leaves_its_message_and_no_progress_line(app):
    """A refusal (a KV cache too small for a request) ends the runs: its message stays, not the
    progress line that said which run was going ("budget 128 (1 of 9)")."""
    at = app(stand_in("fits", 0.1), stand_in("kv", 0.1, refuses="the KV cache is too small"))
    assert "refused: the KV cache is too small" in said(at)
    assert not at.get("progress") and not at.button


def test_a_click_runs_no_longer_than_its_deadline(app, monkeypatch):
    monkeypatch.setattr(jobs, "BUTTON_DEADLINE_S", 0.25)
    at = app(*(stand_in(str(i), 2.0, seconds=0.1) for i in range(6)))
    at.button(key="go").click().run()
    ran = len(CALLS)
    assert 2 <= ran < 6 and "results" not in said(at)
    assert "Stopped after 0.25 s" in said(at) and f"the {ran} runs that finished are kept" in said(at)
    at.button(key="go").click().run()                        # the next click goes on from there
    assert [name for name, _ in CALLS[ran:]][0] == str(ran)
