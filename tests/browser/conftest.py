"""The browser tests' shared fixtures: Debian's Chromium (never a downloaded browser) and one
`streamlit run serve.py` (what `make run` starts) per session on a free loopback port. Every
test here is skipped with the reason when /usr/bin/chromium is missing (`apt-get install
chromium`; .ci/run installs it)."""

from pathlib import Path

import pytest

from harness.browser import CHROMIUM, CHROMIUM_ARGS
from harness.server import streamlit_server
from harness.visit import Visit, visit

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    if not Path(CHROMIUM).exists():
        skip = pytest.mark.skip(reason=f"{CHROMIUM} is missing (Debian package chromium)")
        for item in items:
            if "tests/browser/" in str(item.fspath):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """The app, served once for every browser test of the session, as `make run` serves it."""
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with streamlit_server(ROOT / "serve.py", log) as url:
        yield url


@pytest.fixture
def new_tab(browser):
    """new_tab(width, height) -> a page in a fresh browser context (no cookies, no session) of
    that window size; every context it opened is closed after the test."""
    contexts = []

    def open_tab(width: int = 1400, height: int = 1000):
        contexts.append(browser.new_context(viewport={"width": width, "height": height}))
        return contexts[-1].new_page()
    yield open_tab
    for context in contexts:
        context.close()


@pytest.fixture(scope="session")
def visited(browser, app_url):
    """visited(path, scheme="light") -> the Visit of that page in a fresh context, made once per
    session: the offline, console and accessibility tests read the same visit."""
    visits: dict[tuple[str, str], Visit] = {}

    def get(path: str, scheme: str = "light") -> Visit:
        if (path, scheme) not in visits:
            visits[path, scheme] = visit(browser, app_url, path, scheme)
        return visits[path, scheme]
    return get
