"""ui.shell.streamlit_internals: each Streamlit internal the app leans on still exists with the shape the
module reads, and still does what the app needs of it. A Streamlit upgrade that breaks one fails
here, before a room meets it (the browser tests pin the results: a deep link on a fresh server,
a link correction in the address bar)."""

import ast
import functools
import inspect
import re
from pathlib import Path

import pytest
import streamlit
from streamlit.runtime import Runtime
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext
from streamlit.runtime.state.query_params import QueryParams
from streamlit.runtime.websocket_session_manager import WebsocketSessionManager
from streamlit.testing.v1 import AppTest

from ui.shell import streamlit_internals as internals

ROOT = Path(__file__).resolve().parents[2]
# what may call Streamlit (sim, charts and cli never import it: pyproject.toml's contracts)
STREAMLIT_SIDE = [ROOT / "app.py", ROOT / "serve.py", *(ROOT / "pages").rglob("*.py"),
                  *(ROOT / "ui").rglob("*.py")]


def _reaches_inside(path: Path) -> list[str]:
    """What `path` imports from inside Streamlit (a module under `streamlit.`, or a name from
    `streamlit` that `st.` does not offer) and the private attributes it reads (`x._name`, on
    anything but self or cls)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("streamlit.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.startswith("streamlit"):
            found += [f"{node.module}.{a.name}" for a in node.names
                      if node.module != "streamlit" or not hasattr(streamlit, a.name)
                      or inspect.ismodule(getattr(streamlit, a.name))]
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_")
              and not node.attr.startswith("__")
              and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})):
            found.append(ast.unparse(node))
    return found


def test_only_the_internals_module_reaches_inside_streamlit():
    offenders = {str(p.relative_to(ROOT)): found for p in STREAMLIT_SIDE
                 if p.name != "streamlit_internals.py" and (found := _reaches_inside(p))}
    assert offenders == {}, "move these into ui/shell/streamlit_internals.py, each with its test"
    assert _reaches_inside(ROOT / "ui" / "shell" / "streamlit_internals.py")   # the check sees them


def test_the_installed_streamlit_is_the_release_the_internals_were_checked_with():
    assert streamlit.__version__.startswith(internals.CHECKED_WITH + "."), (
        f"Streamlit {streamlit.__version__}: re-check every internal in ui/shell/streamlit_internals.py "
        "against it, then update CHECKED_WITH and the pin in requirements.in")
    assert f"streamlit>={internals.CHECKED_WITH}," in (ROOT / "requirements.in").read_text()


def test_the_run_context_has_the_page_the_main_script_and_the_upload_store():
    assert internals.run_context is not None and get_script_run_ctx() is None   # outside a run
    assert isinstance(inspect.getattr_static(ScriptRunContext, "page_script_hash"), property)
    assert {"main_script_path", "session_id", "uploaded_file_mgr"} <= set(
        ScriptRunContext.__dataclass_fields__)


def test_the_query_param_store_has_the_calls_the_app_makes():
    assert "_initial_query_params" in QueryParams.__dataclass_fields__
    for name, params in (("get_binding_for_param", ["self", "param_key"]),
                         ("has_param", ["self", "param_key"]),
                         ("set_corrected_value", ["self", "param_key", "value", "value_type"])):
        assert list(inspect.signature(getattr(QueryParams, name)).parameters) == params, name


def _probe():
    """An app that binds a widget to the link and shows what the internals read."""
    import streamlit as st

    from ui.shell import streamlit_internals as internals

    st.number_input("budget", min_value=1, max_value=100, value=5, key="budget",
                    bind="query-params")
    if st.session_state.get("moved"):   # as widgets.widget does for a handed-back value
        internals.write_link_value("budget", 42)
        internals.write_link_value("nobody", 1)   # no widget bound to it: left alone
    st.text(repr(internals.initial_link()))
    st.text(f"page {internals.page_hash()!r}")
    st.text(f"folder {internals.main_script_folder()}")


def test_in_a_run_the_internals_read_the_link_the_page_and_the_folder():
    at = AppTest.from_function(_probe, default_timeout=30)
    at.query_params["budget"] = "7"
    at.run()
    initial, page, folder = (t.value for t in at.text)
    assert initial == "{'budget': ['7']}"
    assert re.fullmatch(r"page '[0-9a-f]{32}'", page)
    assert folder != "folder None"


def test_a_value_written_into_the_link_reaches_the_address_bar_only_where_none_is():
    at = AppTest.from_function(_probe, default_timeout=30)
    at.session_state["moved"] = True
    at.run()
    assert dict(at.query_params) == {"budget": "42"}   # not `nobody`: no widget is bound to it
    at = AppTest.from_function(_probe, default_timeout=30)
    at.query_params["budget"] = "7"
    at.session_state["moved"] = True
    at.run()
    assert dict(at.query_params) == {"budget": "7"}   # the link's own value is left alone


def _upload_probe():
    """An app whose uploader's file is forgotten as soon as it arrives."""
    import streamlit as st

    from ui.shell import streamlit_internals as internals

    f = st.file_uploader("trace", key="f")
    if f is not None:
        internals.forget_upload(f.file_id)
        ctx = internals.run_context()
        st.text(repr(ctx.uploaded_file_mgr.get_files(ctx.session_id, [f.file_id])))


def test_a_forgotten_upload_is_gone_from_the_sessions_store():
    at = AppTest.from_function(_upload_probe, default_timeout=30)
    at.run()
    at.file_uploader(key="f").set_value(("t.csv", b"0,1,2", "text/csv")).run()
    assert [t.value for t in at.text] == ["[]"]


def test_a_file_let_go_of_is_told_from_a_file_and_from_none():
    """What the uploader's value in session state becomes once its file is forgotten."""
    from streamlit.runtime.uploaded_file_manager import DeletedFile
    assert internals.is_forgotten(DeletedFile("id")) and not internals.is_forgotten(None)


def test_the_server_has_the_upload_store_and_session_lookups_the_sweep_reads():
    """ui/shell/server.py's sweep and upload cap read these on the server (tests/ui/test_upload_server.py
    checks what they do there)."""
    store = MemoryUploadedFileManager("/upload")
    assert isinstance(store.file_storage, dict)
    assert {"remove_file", "remove_session_files"} <= set(dir(store))
    assert isinstance(inspect.getattr_static(Runtime, "uploaded_file_mgr"), property)
    assert "self._session_mgr" in inspect.getsource(Runtime.__init__)
    assert list(inspect.signature(WebsocketSessionManager.get_session_info).parameters) == [
        "self", "session_id"]
    assert internals.session_uploads("no such session") == 0   # no server in this process


def test_the_pages_mode_flag_is_what_streamlit_reads_and_settling_it_holds(tmp_path, monkeypatch):
    (tmp_path / "pages").mkdir()
    main = tmp_path / "app.py"
    main.write_text("")
    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)
    PagesManager(str(main))
    assert PagesManager.uses_pages_directory is True   # unset: a pages/ folder makes a legacy app
    internals.settle_pages_mode()
    PagesManager(str(main))
    assert PagesManager.uses_pages_directory is False


def test_the_index_page_takes_a_script_in_its_head_before_streamlits_own():
    page = internals.index_html("'/lab/'", "window.probe = 1;").decode()
    head = page[page.index("<head>"):page.index("</head>")]
    assert "window.__streamlit = {BACKEND_BASE_URL: '/lab/'};" in head
    assert head.index("window.probe = 1;") < head.index('<script type="module"')


def test_the_iframe_elements_code_is_preloaded_in_the_index_page():
    """st.iframe's element is a chunk of its own that the frontend loads on first use; the
    index page preloads it and what it imports (less what Streamlit preloads already)."""
    stock = internals.INDEX.read_text(encoding="utf-8")
    names = internals.element_chunks("IFrame", stock)
    assert re.fullmatch(r"IFrame\.[\w-]+\.js", names[0])
    assert "`stIFrame`" in (internals.CHUNKS / names[0]).read_text(encoding="utf-8")
    assert all((internals.CHUNKS / name).exists() and name not in stock for name in names)
    page = internals.index_html("'/'", preload=("IFrame",)).decode()
    head = page[:page.index("</head>")]
    for name in names:
        assert f'<link rel="modulepreload" crossorigin href="./static/js/{name}">' in head


def test_an_element_the_frontend_has_no_chunk_for_is_named_in_the_error():
    with pytest.raises(RuntimeError, match="0 chunks named NoSuchElement"):
        internals.element_chunks("NoSuchElement", "")


@functools.cache
def _frontend() -> str:
    """Streamlit's frontend bundle, all its scripts in one string."""
    folder = Path(streamlit.__file__).parent / "static" / "static" / "js"
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in folder.glob("*.js"))


def test_the_frontend_still_reads_the_server_address_hook():
    assert "BACKEND_BASE_URL" in _frontend() and "__streamlit" in _frontend()


def test_the_index_reply_is_told_by_its_content_type():
    html = {"status": 200, "headers": [(b"content-type", b"text/html; charset=utf-8")]}
    assert internals.is_index_reply(html)
    assert not internals.is_index_reply({**html, "status": 304})
    assert not internals.is_index_reply({"status": 200, "headers": [(b"content-type", b"text/css")]})


def _styled_test_ids() -> set[str]:
    """Every element test id the app's styles and scripts select."""
    sources = [*(ROOT / "ui" / "shell" / "front").glob("*"), *(ROOT / "ui").rglob("*.py"),
               ROOT / "app.py"]
    return {m for p in sources if p.is_file()
            for m in re.findall(r'data-testid=\\?"(st\w+)', p.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("test_id", sorted(_styled_test_ids()))
def test_every_test_id_the_app_styles_is_still_in_the_frontend(test_id):
    assert re.search(f"[`\"']{test_id}[`\"']", _frontend()), f"{test_id} is gone from the frontend"
