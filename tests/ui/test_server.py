"""ui.shell.server, what `make run` serves (serve.py): the pinned index.html for the app's own pages,
everything else passed to Streamlit. (tests/browser/test_offline_browser.py checks the result in
Chromium: no 404 in the console, no "Page not found" over a first deep link.)"""

import ipaddress
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from streamlit import config

from charts.player import vega_bundle_name
from harness.protocol import run_apart
from harness.server import STARTUP_S, free_port
from tests.support.apptest import ALL_PAGES
from ui.shell.server import FIGURE_CHUNKS, PinServerAddress, page_paths, pinned_index

ROOT = Path(__file__).resolve().parents[2]


def test_every_page_script_has_a_path_and_home_is_the_root():
    assert page_paths() == {"", *(Path(page).stem for page in ALL_PAGES)}


@pytest.mark.parametrize("base, address", [("", "'/'"), ("/lab/", "'/lab/'"), ("a/b", "'/a/b/'")])
def test_the_index_tells_the_frontend_where_the_server_is(base, address):
    page = pinned_index(base).decode()
    pin = f"window.__streamlit = {{BACKEND_BASE_URL: window.location.origin + {address}}};"
    assert pin in page
    assert page.index(pin) < page.index('<script type="module"')   # before Streamlit's own script


def _serve(method: str, path: str, base: str = "", query: bytes = b"",
           reply: bytes = b"application/json") -> tuple[int, bytes, list, dict]:
    """(status, body, requests passed on, headers) for one request through the middleware, with
    Streamlit standing in as an app that answers every request with `reply` content."""
    passed, sent = [], []

    async def streamlit_app(scope, receive, send):
        passed.append(scope["path"])
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", reply)]})
        await send({"type": "http.response.body", "body": b"streamlit's"})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    config.set_option("server.baseUrlPath", base)
    try:
        run_apart(PinServerAddress(streamlit_app)(
            {"type": "http", "method": method, "path": path, "query_string": query, "headers": []},
            receive, send))
    finally:
        config.set_option("server.baseUrlPath", "")
    return (sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]), passed,
            dict(sent[0]["headers"]))


@pytest.mark.parametrize("path, base", [("/", ""), ("/roofline", ""), ("/side_by_side", ""),
                                        ("/lab/", "lab"), ("/lab/memory", "lab")])
def test_a_page_gets_the_pinned_index(path, base):
    status, body, passed, _ = _serve("GET", path, base)
    assert (status, passed) == (200, [])
    assert b"BACKEND_BASE_URL" in body


@pytest.mark.parametrize("method, path", [("GET", "/_stcore/health"), ("GET", "/roofline/"),
                                          ("GET", "/nope"), ("GET", "/app/static/favicon.png"),
                                          ("POST", "/roofline"), ("GET", "/roofline/_stcore/health")])
def test_everything_else_goes_to_streamlit(method, path):
    """Whatever Streamlit answers with anything but its page is its answer."""
    assert _serve(method, path)[:3] == (200, b"streamlit's", [path])


@pytest.mark.parametrize("path, query, base, location", [
    ("/ROOFLINE", b"prompt=4096", "", "/roofline?prompt=4096"),       # a page in another case
    ("/Side_By_Side", b"", "", "/side_by_side"),
    ("/start", b"decodes=32", "", "/?decodes=32"),                    # Home's navigation name
    ("/Home", b"", "", "/home"),
    ("/nothing", b"budget=1024", "", "/?budget=1024&no_page=nothing"),   # no such page: Home
    ("/a/b c", b"", "", "/?no_page=a%2Fb+c"),
    ("/index.html", b"", "", "/?no_page=index.html"),
    ("/lab/ROOFLINE", b"tp=2", "lab", "/lab/roofline?tp=2"),
    ("/lab/start", b"", "lab", "/lab/"),
    ("/lab/typo", b"", "/lab/", "/lab/?no_page=typo"),
])
def test_a_path_streamlit_would_answer_with_its_own_page_is_sent_to_ours(path, query, base,
                                                                         location):
    """Streamlit answers any path it has no file for with its index.html, unpinned, and its
    frontend shows "Page not found": such a reply is replaced by a redirect to a page."""
    status, body, passed, headers = _serve("GET", path, base, query, reply=b"text/html")
    assert (status, body, passed) == (302, b"", [path])
    assert headers[b"location"].decode() == location


def test_the_static_folder_is_in_every_clone():
    """Streamlit warns "no static folder found" at start when static/ is missing; it holds the
    favicon, so git keeps it."""
    tracked = subprocess.run(["git", "ls-files", "static"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    assert "static/favicon.png" in tracked


@pytest.mark.parametrize("static_serving", [True, False])
def test_the_index_fetches_the_players_bundle_early_where_it_is_served(static_serving):
    """Fetched while the page loads, from a server not yet running the page's script; only
    where static serving is on (else the player carries it inline and the fetch would 404)."""
    before = config.get_option("server.enableStaticServing")
    config.set_option("server.enableStaticServing", static_serving)
    pinned_index.cache_clear()
    try:
        page = pinned_index("lab").decode()
    finally:
        config.set_option("server.enableStaticServing", before)
        pinned_index.cache_clear()
    fetch = f"fetch(window.location.origin + '/lab/' + 'app/static/{vega_bundle_name()}')"
    assert (fetch in page) is static_serving
    if static_serving:
        assert page.index(fetch) < page.index('<script type="module"')   # before Streamlit's own
        assert (ROOT / "static" / vega_bundle_name()).exists()
    assert '<link rel="modulepreload" crossorigin href="./static/js/IFrame.' in page


def test_each_page_preloads_the_code_of_its_own_figures_only():
    """The player's pages its iframe element and fetch the bundle into the cache for its frame;
    the chart pages the component that draws their charts (ui/shell/chart_view.py) and run the bundle
    in the page; a page without a figure neither (what each page draws: the browser test)."""
    assert set(FIGURE_CHUNKS) <= page_paths()
    bundle = f"'app/static/{vega_bundle_name()}'"
    marks = {"player": '<link rel="modulepreload" crossorigin href="./static/js/IFrame.',
             "component": '<link rel="modulepreload" crossorigin href="./static/js/BidiComponent.',
             "fetched": f"fetch(window.location.origin + '/' + {bundle})",
             "run": f"early.src = window.location.origin + '/' + {bundle}"}
    for path, expected in [("", {"player", "fetched"}),
                           ("side_by_side", {"player", "fetched"}),
                           ("roofline", {"component", "run"}), ("capacity", set())]:
        page = pinned_index("", path).decode()
        assert {name for name, mark in marks.items() if mark in page} == expected, path


def test_the_bundle_is_kept_by_the_browser_and_nothing_else_is():
    """Its name changes with its content, so the browser never asks for it again."""
    bundle = _serve("GET", f"/app/static/{vega_bundle_name()}")
    assert bundle[:3] == (200, b"streamlit's", [f"/app/static/{vega_bundle_name()}"])
    assert bundle[3][b"cache-control"] == b"public, max-age=31536000, immutable"
    for path in ("/app/static/favicon.png", "/static/js/index.js", "/roofline"):
        assert b"immutable" not in _serve("GET", path)[3].get(b"cache-control", b"")


def listening_on(port: int) -> str | None:
    """The address a socket listens on at `port` (from the kernel's IPv4 and IPv6 tables), or
    None."""
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            address, local_port = fields[1].split(":")
            if fields[3] == "0A" and int(local_port, 16) == port:   # 0A: listening
                raw = bytes.fromhex(address)                          # host order, 4 bytes a word
                return str(ipaddress.ip_address(b"".join(raw[i:i + 4][::-1]
                                                         for i in range(0, len(raw), 4))))
    return None


def served_address(args: str) -> str:
    """Where `make run ARGS="..."` listens: its command line (`make -n`) started on a free port."""
    port = free_port()
    # under `make test` this make is a sub-make, which would add its "Entering directory" lines
    printed = subprocess.run(["make", "--no-print-directory", "-n", "run",
                              f"ARGS={args} --server.port {port}"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    line = next(line for line in printed.splitlines() if " run serve.py" in line)
    server = subprocess.Popen(shlex.split(line), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + STARTUP_S
        while (address := listening_on(port)) is None and time.monotonic() < deadline:
            time.sleep(0.3)
        return address
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("args, address", [("", "127.0.0.1"),
                                           ("--server.address 0.0.0.0", "0.0.0.0")])
def test_make_run_serves_this_machine_only_unless_told_otherwise(args, address):
    """Anyone who can reach the server can upload to it and read /_stcore/metrics: a
    workshop's network is a choice made in ARGS (README: "Serving a workshop")."""
    assert served_address(args) == address
