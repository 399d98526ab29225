"""The web server `make run` starts (serve.py): Streamlit's own, with fixes that let a room
open the app from a shared deep link (`/roofline?budget=1024`) on a fresh server, offline, with a
clean browser console and a navigation a screen reader can read. Each leans on a Streamlit
internal (ui/shell/streamlit_internals.py, which lists them) and is pinned by a browser test
(tests/browser/test_offline_browser.py, test_accessibility_browser.py,
test_hostile_links_browser.py):

- **Where the server is.** Streamlit's page (index.html) finds its server by trying the page's
  own path first: a deep link to /roofline asks for /roofline/_stcore/health and
  /roofline/_stcore/host-config, gets two 404s (logged as console errors), waits, then tries /.
  The page's frontend reads an optional `window.__streamlit.BACKEND_BASE_URL` (meant for hosts
  that embed Streamlit) and then tries only that address; `PinServerAddress` serves index.html
  with it set to the app's root, for the app's own page paths.
- **A navigation that reads as one.** The same index.html carries NAV_ROLES (below).
- **A first run that fits the window.** The same index.html writes the window's size to a
  cookie (`WINDOW_SIZE`) before Streamlit's script connects, so a page's first run fits its
  figure to the window (ui/shell/presenter.py `guessed_room`) instead of to a fallback redrawn once
  the browser reports the real room: on Side by side, a fresh visit's second run.
- **A quick first screen.** Streamlit's frontend fetches an element's code only when the element
  first arrives, and the Vega bundle that draws the figures is asked for only once a figure
  exists: both after the page's script has run, so a fresh visit drew its charts well after its
  text. A page's index.html preloads, with Streamlit's own code, the code of what draws its
  figures (`FIGURE_CHUNKS`), and where static serving is on it fetches the Vega bundle while
  the page loads: into the browser's cache on a page with the player (its frame loads the
  bundle itself), run in the page on a page with charts (ui/shell/chart_view.py draws them with the
  Vega it finds there). The bundle's reply (its name is its content's hash) is marked as never
  changing. Only these: preloading every element a page draws made the first screen slower, not
  quicker, on two cores (`python -m benchmarks.first_render` measures it).
- **No legacy pages folder.** Streamlit decides once per process, when the first session starts,
  whether the app is a legacy `pages/` app (a folder named pages/ beside the main script). Ours
  is, by name only (its page scripts live in subfolders and app.py calls st.navigation), so the
  first session after a start ran the legacy path and showed "Page not found" over a deep link.
  serve.py sets that flag before any session starts (`settle_pages_mode`).
- **Every path a user may type.** Streamlit answers any path it has no file for with its page,
  unpinned, whose frontend then shows a bare "Page not found" over Home. Whatever Streamlit
  would answer with that page is answered here instead: a page's path in another case
  (`/ROOFLINE`) or Home's name in the navigation (`/start`) is redirected to the page's own
  path, and any other path to Home with the link's values and the path in `no_page`, which
  Home's note reads (ui/shell/widgets.py: "there is no page ..., the pages are ...").
"""

from __future__ import annotations

import asyncio
import functools
import re
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

from charts.player import BUNDLE_PREFIX, write_vega_bundle

from .controls import NO_PAGE
from .presenter import WINDOW_COOKIE
from .streamlit_internals import (
    index_html,
    is_index_reply,
    release_uploads_of_ended_sessions,
    session_uploads,
)

ROOT = Path(__file__).resolve().parents[2]


def page_paths() -> frozenset[str]:
    """The URL path of every page (st.Page names a page by its file's stem), and the home page."""
    return frozenset({"", *(script.stem for script in ROOT.glob("pages/*/*.py"))})


HOME_NAMES = frozenset({"start"})   # Home's url_path in app.py's navigation; Home lives at the root
BUNDLE_PATH = f"/app/static/{BUNDLE_PREFIX}"   # the player's bundle, named by its content's hash


# Streamlit's sidebar navigation with sections puts each section's <div> (a heading and the page
# links) straight into the <ul>, so screen readers and axe see a broken list (a <div> in a <ul>,
# <li>s outside one). As the links' container it needs no list semantics: "none" on the <ul> and
# its <li>s leaves a nav landmark with headed groups of links. React re-creates these elements
# when the navigation changes, so an observer sets the roles again.
NAV_ROLES = """new MutationObserver(function () {
      document.querySelectorAll('[data-testid="stSidebarNavItems"]:not([role]),'
        + ' [data-testid="stSidebarNavItems"] li:not([role])').forEach(function (el) {
        el.setAttribute("role", "none");
      });
    }).observe(document.documentElement, {childList: true, subtree: true});"""


# Why an upload was refused, shown on its file's chip: Streamlit's frontend writes it only into a
# hidden alert (a screen reader's) and a tooltip, and words a refusal by the server as "AxiosError:
# Request failed with status code 413", which these words replace (`UploadsPerSession`).
def upload_refusals(limit_mb: int) -> str:
    """A script that shows the reason on every refused upload's chip, in words for the server's
    refusal: its file limit is `limit_mb` (server.maxUploadSize)."""
    words = f"Refused by the server: it takes one file of at most {limit_mb} MB at a time"
    return (f"""var refused = {words!r};
    document.head.appendChild(document.createElement('style')).textContent =
      '[data-testid="stFileChip"] [role="alert"] {{ position: static; width: auto; height: auto;'
      + ' margin: 0 0 0 0.5rem; clip: auto; clip-path: none; overflow: visible;'
      + ' white-space: normal; font-size: 0.875rem; }}';
    new MutationObserver(function () {{
      document.querySelectorAll('[data-testid="stFileChip"] [role="alert"]').forEach(function (el) {{
        if (el.textContent.indexOf('status code 413') >= 0) {{ el.textContent = refused; }}
      }});
    }}).observe(document.documentElement, {{childList: true, subtree: true, characterData: true}});""")


# The window's size, for a page's first run to fit its figure to (ui/shell/presenter.py
# `guessed_room`): written before Streamlit's script opens its connection, which carries it.
WINDOW_SIZE = (f"document.cookie = {WINDOW_COOKIE + '='!r} + window.innerWidth + 'x' + "
               "window.innerHeight + '; path=/; SameSite=Strict';")


def fetch_early(url: str) -> str:
    """A script that fetches `url` into the browser's cache while the page loads: the player's
    Vega bundle, which its frame would otherwise ask for only once it exists, from a server busy
    running the page's script."""
    return f"fetch({url}).then(function (r) {{ return r.arrayBuffer(); }}, function () {{}});"


def run_early(url: str) -> str:
    """A script that runs the script at `url` in the page as soon as it arrives, without holding
    up the page: the Vega bundle on a page with charts (ui/shell/front/chart.js uses the Vega it set,
    or waits for this script to load)."""
    return (f"var early = document.createElement('script'); early.src = {url}; early.async = true;"
            " document.head.appendChild(early);")


# The frontend's chunk (ui/shell/streamlit_internals.py `element_chunks`) that draws each page's
# figures at its defaults, by URL path: the player's iframe, or the component that draws a chart
# in the page (ui/shell/chart_view.py); none on a page without a figure.
# tests/browser/test_first_screen_browser.py checks each against what the page draws. Not the
# component on Side by side and the tour, where it reports the room a figure is fitted to
# (ui/shell/presenter.py): preloaded, its report came sooner and cut the tour's first run short before
# that run had set the step's controls.
PLAYER, COMPONENT = "IFrame", "BidiComponent"
CHART_PAGES = ("worked_example", "roofline", "exactness", "fidelity", "traffic", "long_short",
               "prefix_caching", "budget_tradeoff", "memory")
# Disaggregation plays its lanes in the player (its goodput chart waits for a click), Pipeline
# its stages
FIGURE_CHUNKS = {"": PLAYER, "side_by_side": PLAYER, "tour": PLAYER, "disaggregation": PLAYER,
                 "pipeline": PLAYER,
                 **{page: COMPONENT for page in CHART_PAGES}}


@functools.cache
def pinned_index(base_url_path: str, page: str = "") -> bytes:
    """Streamlit's index.html for one of the app's pages (its URL path; "" is Home) telling
    the frontend that the server is at the app's root, with the navigation's list roles mended,
    the window's size written for the first run, an upload's refusal shown on its chip
    (`upload_refusals`), and the code that draws the page's figures
    preloaded (`FIGURE_CHUNKS`); where static serving is on, the Vega bundle fetched early on a
    page with the player (its frame loads it: ui/learn/player.py) and run early on a page with charts
    (ui/shell/chart_view.py)."""
    root = "/".join(part for part in base_url_path.split("/") if part)
    address = f"window.location.origin + {('/' + root + '/' if root else '/')!r}"
    script = "\n    ".join((NAV_ROLES, WINDOW_SIZE,
                              upload_refusals(st.get_option("server.maxUploadSize"))))
    figure = FIGURE_CHUNKS.get(page)
    if figure and st.get_option("server.enableStaticServing"):
        bundle = f"{address} + 'app/static/{write_vega_bundle(ROOT / 'static').name}'"
        script += "\n    " + (fetch_early if figure == PLAYER else run_early)(bundle)
    return index_html(address, script, preload=(figure,) if figure else ())


class PinServerAddress:
    """ASGI middleware: GET of one of the app's pages answers the pinned index.html (never
    cached, as Streamlit serves its own); a GET that Streamlit would answer with its own,
    unpinned index.html (any other path) is redirected to a page (`where`); every other
    request goes to Streamlit unchanged."""

    def __init__(self, app) -> None:
        self.app = app
        self.pages = page_paths()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        base = st.get_option("server.baseUrlPath") or ""
        prefix = "/" + "/".join(part for part in base.split("/") if part)
        path = scope["path"]
        if prefix != "/" and path.startswith(prefix):
            path = path[len(prefix):]
        if path.startswith("/") and path[1:] in self.pages:
            await _answer(send, 200, pinned_index(base, path[1:]), b"text/html; charset=utf-8")
            return
        if path.startswith(BUNDLE_PATH):
            await self.app(scope, receive, kept_for_good(send))
            return
        index = []   # Streamlit's reply is its index.html: not sent on, replaced

        async def unless_index(message) -> None:
            if message["type"] == "http.response.start" and is_index_reply(message):
                index.append(message)
            if not index:
                await send(message)
        await self.app(scope, receive, unless_index)
        if index:
            query = scope.get("query_string", b"").decode("latin-1")
            location = prefix.rstrip("/") + self.where(path, query)
            await _answer(send, 302, b"", b"text/plain; charset=utf-8",
                          [(b"location", location.encode("latin-1"))])

    def where(self, path: str, query: str) -> str:
        """The address (from the app's root) for a typed `path` that is not a page's own: the
        page it names in another case, Home for Home's names, else Home with the link's
        values and the path in `no_page`."""
        name = path.strip("/")
        if name.lower() in self.pages:
            target, extra = "/" + name.lower(), ""
        elif name.lower() in HOME_NAMES:
            target, extra = "/", ""
        else:
            target, extra = "/", urlencode({NO_PAGE: name})
        query = "&".join(part for part in (query, extra) if part)
        return target + ("?" + query if query else "")


def kept_for_good(send):
    """`send` with a reply marked as never changing: a file named by its content's hash (the
    player's bundle) is fetched once, early (`fetch_early`), and then taken from the browser's
    cache by every frame, without asking the server again."""
    async def with_header(message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 200:
            message = {**message, "headers": [
                *[(k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"],
                (b"cache-control", b"public, max-age=31536000, immutable")]}
        await send(message)
    return with_header


async def _answer(send, status: int, body: bytes, content_type: bytes, headers=()) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", content_type), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-cache"), *headers]})
    await send({"type": "http.response.body", "body": body})



# --- uploads ------------------------------------------------------------------------------------
UPLOAD_PUT = re.compile(r"/_stcore/upload_file/(?P<session>[^/]+)/[^/]+$")
FILES_PER_SESSION = 2   # the app's one uploader holds one file; a replaced one may overlap its next


class UploadsPerSession:
    """ASGI middleware: an upload to a session that already holds FILES_PER_SESSION files is
    refused (413) before its body is read. Streamlit's upload endpoint takes any number of files
    (each its own file id) for a session, each up to server.maxUploadSize, whatever the page's
    uploader allows; a client that skips the page could fill the server's memory."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        put = (scope["type"] == "http" and scope["method"] == "PUT"
               and UPLOAD_PUT.search(scope["path"]))
        if put and session_uploads(put["session"]) >= FILES_PER_SESSION:
            await _answer(send, 413, b"one file a session", b"text/plain; charset=utf-8")
            return
        await self.app(scope, receive, send)


def sweep_period_s() -> float:
    """How often the uploads of ended sessions are let go: twice in the time a closed tab's
    session is kept for a reconnection (server.disconnectedSessionTTL), and at least every 30 s."""
    return min(30.0, max(1.0, st.get_option("server.disconnectedSessionTTL") / 2))


@asynccontextmanager
async def release_ended_uploads(app):
    """The server's lifespan (serve.py): while it runs, every `sweep_period_s`, the uploads of
    sessions it no longer holds are let go (ui/shell/streamlit_internals.py says why Streamlit keeps
    them), on the server's event loop."""
    async def sweep() -> None:
        while True:
            await asyncio.sleep(sweep_period_s())
            release_uploads_of_ended_sessions()
    task = asyncio.create_task(sweep())
    try:
        yield None
    finally:
        task.cancel()
