"""Uploads as the page makes them, on a server of their own (`streamlit run serve.py` with a 1 MB
upload limit, so the page's own 5 MB check lets a file through that the server refuses, and a
closed tab's session kept 2 s): a refusal by the server is said on the file, in words; the bytes
of an upload the parse refuses are let go at once, those of a good one when its tab has closed.
(tests/ui/test_upload_server.py: the server's side, with a raw client.)"""

import pytest
from playwright import sync_api

from harness.browser import wait_for_run
from harness.server import streamlit_server
from harness.upload import uploads_held_once
from tests.support.apptest import ROOT

HEADER = b"arrival_s,prompt_tokens,output_tokens\n"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    log = tmp_path_factory.mktemp("uploads") / "server.log"
    with streamlit_server(ROOT / "serve.py", log, "--server.maxUploadSize=1",
                          "--server.disconnectedSessionTTL=2") as served:
        yield served


def traffic_upload(new_tab, url: str, name: str, body: bytes):
    page = new_tab()
    page.goto(f"{url}/traffic?workload=upload")
    wait_for_run(page, "Traffic")
    page.locator('input[type="file"]').set_input_files(
        files=[{"name": name, "mimeType": "text/csv", "buffer": body}])
    return page


def test_a_file_the_server_refuses_says_so_on_its_chip(new_tab, url):
    """Streamlit's own chip shows only an icon, its words ("AxiosError: Request failed with
    status code 413") in a tooltip."""
    page = traffic_upload(new_tab, url, "big.csv", HEADER + b"0,10,2\n" * 300_000)
    chip = page.get_by_test_id("stFileChip")
    sync_api.expect(chip).to_contain_text(
        "Refused by the server: it takes one file of at most 1 MB at a time", timeout=30_000)
    assert chip.get_by_role("alert").is_visible()
    assert "413" not in chip.inner_text()


def test_an_upload_the_parse_refuses_is_let_go_at_once(new_tab, url):
    body = HEADER + b"0,10,2\n" * 90_000 + b"1,ten,2\n"       # 630 KB, its last row wrong
    page = traffic_upload(new_tab, url, "bad.csv", body)
    error = page.get_by_test_id("stAlertContentError")
    sync_api.expect(error).to_contain_text("row 90002, column prompt_tokens", timeout=60_000)
    assert uploads_held_once(url, 0) == 0                             # while its tab is still open
    page.keyboard.press("r")                                   # a rerun: the reason stays
    wait_for_run(page, "Traffic")
    sync_api.expect(error).to_contain_text("row 90002, column prompt_tokens")


def test_a_good_uploads_bytes_are_let_go_when_its_tab_closes(new_tab, url):
    body = HEADER + b"0,10,2\n" * 1000
    page = traffic_upload(new_tab, url, "good.csv", body)
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="1,000 requests")
    caption.first.wait_for(timeout=60_000)
    assert uploads_held_once(url, len(body)) == len(body)
    page.context.close()
    assert uploads_held_once(url, 0) == 0
