"""An upload meets the command line's limits, checked before its rows are parsed, and its parse
stops with its tab: a 2 MB upload used to show no message in 200 s and keep a server core busy
after its tab closed."""

from __future__ import annotations

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from sim.errors import InputError
from sim.serving import trace_files
from sim.serving.trace_files import CLASS_COLUMN, MAX_COLUMNS, REPORT_ROWS, TRACE_COLUMNS_WORDS
from tests.support.apptest import as_read, assert_clean, open_app
from ui.shell import upload as uploads
from ui.shell.store import TRACES

TRAFFIC = "pages/under_load/traffic.py"
HEADER = "arrival_s,prompt_tokens,output_tokens"


def test_a_wide_header_upload_is_refused_with_the_column_limit():
    """100,000 repeated columns (a 200 KB file) took 84 s to be refused; its rows are never
    read now."""
    at = open_app(TRAFFIC, workload="upload")
    body = (",".join([HEADER, *["x"] * 100_000]) + "\n0,10,2\n").encode()
    at.file_uploader(key="trace_file").set_value(("wide.csv", body, "text/csv")).run()
    assert_clean(at)
    message = as_read(at.error[0].value)
    assert f"100,003 columns; a trace may have at most {MAX_COLUMNS:,}" in message


def test_the_upload_help_says_a_trace_may_name_each_requests_class_as_trace_in_does():
    """In the command line's --trace-in words (tests/cli/test_mix_cli.py checks that side)."""
    at = open_app(TRAFFIC, workload="upload")
    said = at.file_uploader(key="trace_file").help
    assert f"A CSV trace: {TRACE_COLUMNS_WORDS}." in said
    assert f"optionally {CLASS_COLUMN}, each request's class name" in said
    # and the workload picker's help, which names the upload choice, in the same words
    picker = at.selectbox(key="workload").help
    assert f"Uploaded trace: a CSV file with {TRACE_COLUMNS_WORDS}." in picker


def kept(body: bytes) -> uploads.Upload:
    return uploads.Upload("t.csv", body, f"test-{hash(body)}", "id")


class Bar:
    """A stand-in for st.progress: raises what Streamlit raises in a script whose tab closed,
    at the `closes_at`-th update."""

    def __init__(self, closes_at: int | None = None):
        self.updates, self.closes_at, self.emptied = 0, closes_at, False

    def progress(self, share, text=""):
        self.updates += 1
        if self.updates == self.closes_at:
            raise StopException()

    def empty(self):
        self.emptied = True


def test_a_parse_stops_at_its_next_progress_update_when_its_tab_closes(monkeypatch):
    bar = Bar(closes_at=2)
    monkeypatch.setattr(uploads.st, "progress", lambda *a, **k: bar)
    rows = []
    real = trace_files._value
    monkeypatch.setattr(trace_files, "_value", lambda row, *a, **k: rows.append(1) or real(
        row, *a, **k))
    upload = kept((HEADER + "\n" + "0,10,2\n" * (10 * REPORT_ROWS)).encode())
    with pytest.raises(StopException):
        uploads.trace_workload(upload)
    assert bar.emptied and len(rows) // 3 < 2 * REPORT_ROWS     # stopped near row 4,000 of 20,000
    assert ("upload", upload.digest) not in TRACES


def test_a_parsed_upload_is_kept_for_every_session(monkeypatch):
    bar = Bar()
    monkeypatch.setattr(uploads.st, "progress", lambda *a, **k: bar)
    upload = kept((HEADER + "\n" + "0,10,2\n" * (3 * REPORT_ROWS)).encode())
    first = uploads.trace_workload(upload)
    assert len(first) == 3 * REPORT_ROWS and bar.updates == 3
    monkeypatch.setattr(uploads, "load_trace", lambda *a, **k: pytest.fail("parsed again"))
    assert uploads.trace_workload(upload) is first


def test_an_oversize_upload_is_refused_before_it_is_decoded(monkeypatch):
    monkeypatch.setattr(uploads, "load_trace", lambda *a, **k: pytest.fail("parsed"))
    with pytest.raises(InputError, match="the limit is 5,000,000"):
        uploads.trace_workload(kept(b"0" * 5_000_001))


def test_a_refused_upload_is_let_go_and_the_page_says_why_until_the_next(monkeypatch):
    """Its bytes would otherwise sit in the session and in the server's upload store as long as
    the tab is open (tests/browser/test_uploads_browser.py measures the store on a server)."""
    forgotten = []
    monkeypatch.setattr(uploads, "forget_upload", forgotten.append)
    at = open_app(TRAFFIC, workload="upload")
    at.file_uploader(key="trace_file").set_value(("big.csv", b"0" * 5_000_001, "text/csv")).run()
    assert_clean(at)
    said = as_read(at.error[0].value)
    assert said == "**Can't use the trace big.csv:** trace is 5,000,001 bytes; the limit is 5,000,000"
    assert at.session_state[uploads.STORED] is None
    assert forgotten == [at.file_uploader(key="trace_file").value.file_id]
    at.file_uploader(key="trace_file").set_value(None).run()      # the server's copy gone
    at.session_state[uploads.REFUSED] = ("big.csv", "why")        # as the refusal left it
    at.run()
    assert as_read(at.error[0].value) == "**Can't use the trace big.csv:** why"
