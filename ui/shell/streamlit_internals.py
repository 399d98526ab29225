"""Every use of a Streamlit internal in the app, in one place: what has no public API in the
Streamlit release the app is pinned to (requirements.in), why the app needs it, and what it leans
on. Checked against Streamlit 1.67.0 (`CHECKED_WITH`); tests/ui/test_streamlit_internals.py
fails when an upgrade moves, renames or changes one, so an upgrade starts there.

1. `run_context()`: `streamlit.runtime.scriptrunner.get_script_run_ctx`, the running script's
   context (None outside a run). The three below read it.
2. `page_hash()`: `ScriptRunContext.page_script_hash`, which page this run draws. A page control
   keeps its value across a page move (ui/shell/widgets.py `widget`): Streamlit 1.67 drops a page's
   bound widget when the user leaves before changing it, and `st.context` does not say the page.
3. `main_script_folder()`: `ScriptRunContext.main_script_path`. Streamlit's static serving reads
   `<main script's folder>/static/`, where the player writes its Vega bundle (ui/learn/player.py).
4. `initial_link()`: `SessionState.query_params._initial_query_params` (through the context's
   `session_state._state`), the link as the session loaded it. Streamlit seeds a bound widget
   from it, even over session state, so a link correction (ui/shell/widgets.py
   `apply_link_corrections`) must rewrite it too or the widget starts at the uncorrected value.
5. `write_link_value(key, value)`: `QueryParams.get_binding_for_param`, `has_param` and
   `set_corrected_value`: puts a value handed back to a bound widget into the address bar, as
   Streamlit does for a value it restores itself (there is no public call for it).
6. `settle_pages_mode()`: `PagesManager.uses_pages_directory`, decided once per process by the
   first session from whether a `pages/` folder sits beside the main script. Ours does, yet the
   app is a st.navigation app: unset, the first session after a start shows "Page not found"
   over a deep link (ui/shell/server.py).
7. `index_html(address, script)`: Streamlit's page, `streamlit/static/index.html`, with a script
   added to its `<head>` that sets `window.__streamlit.BACKEND_BASE_URL`, the frontend's hook for
   hosts that embed Streamlit: the page then asks that address for its server instead of trying
   the page's own path first (two 404s in the console on every deep link; ui/shell/server.py). With
   `preload`, the page also preloads the code of the frontend's lazily loaded element chunks
   (`element_chunks`: `static/js/<Element>.<hash>.js` and the files it imports), so the player's
   iframe or a page's charts are drawn as soon as they arrive (ui/shell/server.py).
8. `is_index_reply(start)`: the only HTML Streamlit's server answers with is that page, so a
   reply's content type tells ui/shell/server.py that Streamlit found no file for a path.
9. The frontend's element test ids (`data-testid="st..."`), the only handles on Streamlit's
   elements for the styles in ui/shell/front/*.css, ui/shell/widgets.py `readable_css` and ui/shell/server.py
   `NAV_ROLES` (the CSS stays where it is; the test checks each id is still in the frontend).
10. `main_column_px(window_width)`: how wide Streamlit's main column is on a fresh visit to a
   wide-layout page (the sidebar open at its 300 px, 80 px of padding each side), so that a
   page's first run can fit its figure to the window (ui/shell/presenter.py `guessed_room`) instead
   of to a fallback and then again once the browser has reported the real width.

11. `forget_upload(file_id)` and `is_forgotten(value)`: the running session's uploaded-file store
   (`ScriptRunContext.uploaded_file_mgr`, `session_id`, and the store's `remove_file`): the
   bytes of an upload the parse refused are let go at once (ui/shell/upload.py), not kept until the
   session ends; the uploader's value in session state is then a `DeletedFile`, and its change
   callback runs.
12. `release_uploads_of_ended_sessions()` and `session_uploads(session_id)`: the server's
   `Runtime.instance()`, its session manager's `get_session_info` and the uploaded-file store's
   `file_storage` (files by session, then by file id) and `remove_session_files`. A closed tab's
   session is kept for a reconnection (`server.disconnectedSessionTTL`), then dropped without
   being shut down, so its uploads stay in the store until the session object happens to be
   collected, which may be never (ui/shell/server.py sweeps them); and the upload endpoint takes any
   number of files for a session (ui/shell/server.py refuses a third).

Everything else the app calls is public API (st.navigation, `bind="query-params"`, st.App,
st.iframe, st.get_option); a test fails when app.py, serve.py, pages/ or ui/ reach inside
Streamlit anywhere else. (Tests and benchmarks reach into its caches and protocol to measure the
app; those are tools, not the app.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import streamlit
from streamlit.runtime import Runtime
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.uploaded_file_manager import DeletedFile

CHECKED_WITH = "1.67"   # the minor release each internal above was read and tested against
INDEX = Path(streamlit.__file__).parent / "static" / "index.html"


def run_context():
    """The running script's context, or None outside a script run (a unit test, the server)."""
    return get_script_run_ctx()


def page_hash() -> str | None:
    """The page this run draws, as Streamlit names it (None outside a script run)."""
    ctx = run_context()
    return ctx.page_script_hash if ctx is not None else None


def main_script_folder() -> Path | None:
    """The folder of the script `streamlit run` started (None outside a script run)."""
    ctx = run_context()
    return Path(ctx.main_script_path).parent if ctx is not None else None


def initial_link() -> dict[str, list[str]]:
    """The link as the session loaded it, {key: [values]}, which Streamlit seeds bound widgets
    from; edits to it change what they start at ({} outside a script run)."""
    ctx = run_context()
    return ctx.session_state._state.query_params._initial_query_params if ctx is not None else {}


def write_link_value(key: str, value: Any) -> None:
    """Put `value` of the widget bound to `key` into the page's link, spelled as the widget
    spells it; a key already in the link, or one no widget is bound to, is left alone."""
    ctx = run_context()
    if ctx is None:
        return
    params = ctx.session_state._state.query_params
    binding = params.get_binding_for_param(key)
    if binding is not None and not params.has_param(key):
        params.set_corrected_value(key, value, binding.value_type)


def forget_upload(file_id: str) -> None:
    """Let go of one of the running session's uploaded files (nothing outside a script run)."""
    ctx = run_context()
    if ctx is not None:
        ctx.uploaded_file_mgr.remove_file(ctx.session_id, file_id)


def is_forgotten(value: Any) -> bool:
    """An uploader's value in session state that is a file let go of (`forget_upload`)."""
    return isinstance(value, DeletedFile)


def release_uploads_of_ended_sessions() -> None:
    """Drop the uploaded files of every session the server no longer holds, neither connected
    nor kept for a reconnection. On the server's event loop (its session manager is not
    thread-safe)."""
    runtime = Runtime.instance()
    store = runtime.uploaded_file_mgr
    for session_id in list(store.file_storage):
        if runtime._session_mgr.get_session_info(session_id) is None:
            store.remove_session_files(session_id)


def session_uploads(session_id: str) -> int:
    """How many uploaded files the server holds for a session (0 before the server runs)."""
    if not Runtime.exists():
        return 0
    return len(Runtime.instance().uploaded_file_mgr.file_storage.get(session_id, {}))


def settle_pages_mode() -> None:
    """Tell Streamlit, before the first session starts, that the app is not a legacy `pages/`
    app (its page scripts live in subfolders and app.py calls st.navigation)."""
    PagesManager.uses_pages_directory = False


def index_html(address: str, script: str = "", preload: tuple[str, ...] = ()) -> bytes:
    """Streamlit's page with its frontend told that the server is at `address` (a JavaScript
    expression), `script` run before Streamlit's own, and the frontend's code for the elements
    named in `preload` (`element_chunks`) fetched with Streamlit's own, before it is asked for."""
    page = INDEX.read_text(encoding="utf-8")
    if "<head>" not in page or "</head>" not in page:
        raise RuntimeError(f"{INDEX} has no <head>: Streamlit's index.html changed; see "
                           "ui/shell/streamlit_internals.py")
    pin = f"window.__streamlit = {{BACKEND_BASE_URL: {address}}};"
    page = page.replace("<head>", f"<head>\n    <script>{pin}\n    {script}</script>", 1)
    links = "".join(f'    <link rel="modulepreload" crossorigin href="./static/js/{name}">\n'
                    for element in preload for name in element_chunks(element, page))
    return page.replace("</head>", f"{links}  </head>", 1).encode()


CHUNKS = INDEX.parent / "static" / "js"
IMPORTED = re.compile(r'(?:from|import)\s*"\./([\w.-]+\.js)"')


def element_chunks(element: str, page: str) -> list[str]:
    """The script files of one of the frontend's lazily loaded elements (`IFrame`: the chunk
    st.iframe draws with) and the files they import, less those `page` already preloads. The
    frontend asks for an element's chunk only when the element first arrives, from a server
    busy running the page's script."""
    found = sorted(CHUNKS.glob(f"{element}.*.js"))
    if len(found) != 1:
        raise RuntimeError(f"Streamlit's frontend has {len(found)} chunks named {element}.*.js, "
                           "not one: its build changed; see ui/shell/streamlit_internals.py")
    names, todo = [], [found[0].name]
    while todo:
        name = todo.pop()
        if name in names or f"./static/js/{name}" in page:
            continue
        names.append(name)
        todo.extend(IMPORTED.findall((CHUNKS / name).read_text(encoding="utf-8")))
    return names


SIDEBAR_PX = 300        # the sidebar's width, open, until a user drags it
WIDE_PADDING_PX = 80    # the main column's padding each side, in a window this wide or wider:
WIDE_FROM_PX = 1024     # narrower, the padding and (under 768 px) the open sidebar change


def main_column_px(window_width: int) -> int | None:
    """The main column's inner width (CSS px) in a window `window_width` wide, with the sidebar
    open as a fresh visit has it; None where the layout is not the wide one measured."""
    if window_width < WIDE_FROM_PX:
        return None
    return window_width - SIDEBAR_PX - 2 * WIDE_PADDING_PX


def is_index_reply(start: dict) -> bool:
    """An ASGI response start with Streamlit's page: the only HTML its server sends."""
    headers = dict(start.get("headers", []))
    return start["status"] == 200 and headers.get(b"content-type", b"").startswith(b"text/html")
