"""The upload limit holds on the server, not only in the page: `streamlit run serve.py` (what
`make run` starts) refuses a file over the app's limit sent by a raw client that says its size
or says nothing of it (chunked), and a third file for one session; and it lets go of a session's
uploads once the session has ended (a closed tab's is kept `server.disconnectedSessionTTL`
seconds for a reconnection, 2 here). (tests/browser/test_uploads_browser.py: the page's side.)"""

import pytest

from harness.protocol import run_apart
from harness.server import streamlit_server
from harness.upload import put_file, put_in_session, session, uploads_held_once
from sim.serving.trace_files import MAX_BYTES as LARGEST_TRACE  # what the app's parse takes
from tests.support.apptest import ROOT

LIMIT = 5 * 2**20        # server.maxUploadSize = 5 (.streamlit/config.toml), in bytes;
                         # LARGEST_TRACE, what the app's parse takes, is less


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    log = tmp_path_factory.mktemp("upload_server") / "server.log"
    with streamlit_server(ROOT / "serve.py", log, "--server.disconnectedSessionTTL=2") as served:
        yield served


@pytest.mark.parametrize("size, declared, status", [
    (LARGEST_TRACE, True, 204), (LARGEST_TRACE, False, 204), (LIMIT + 1, True, 413), (LIMIT + 1, False, 413),
    (60_000_000, True, 413), (60_000_000, False, 413)])
def test_a_file_over_the_limit_is_refused_by_the_server(url, size, declared, status):
    """Every file the app's parse takes is stored; Streamlit's default was 200 MB a file,
    checked only by the page's uploader."""
    assert run_apart(put_in_session(url, b"0" * size, declared)) == status


def test_a_session_holds_two_files_at_most_and_lets_them_go_when_it_ends(url):
    async def three_files() -> list[int]:
        async with session(url) as session_id:
            statuses = [put_file(url, session_id, b"1" * 1000) for _ in range(3)]
            assert uploads_held_once(url, 2000) == 2000          # the third never reached the store
            return statuses

    assert run_apart(three_files()) == [204, 204, 413]
    assert uploads_held_once(url, 0) == 0                        # the tab closed: its files let go
