"""An uploaded trace CSV, kept across the traffic pages, and its parse.

An upload meets the command line's limits (sim/serving/trace_files.py: 5 MB, 100 columns, 100,000
rows), checked in that order before the rows are parsed; the parse is linear in the file and
shows its progress. Each progress update is a call into Streamlit, which is where Streamlit stops
a script whose tab closed or whose user clicked elsewhere: a parse never outlives its tab. The
server refuses a larger file itself (.streamlit/config.toml), and an upload the parse refuses is
let go at once, the session's copy and the server's, its name and the reason kept for the page
to say until the next upload."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from sim.errors import InputError
from sim.serving.trace_files import (
    COLUMNS,
    MAX_BYTES,
    MAX_COLUMNS,
    MAX_ROWS,
    TRACE_COLUMNS_WORDS,
    check_size,
    load_trace,
)
from sim.serving.workloads import Workload

from .store import TRACES
from .streamlit_internals import forget_upload, is_forgotten

UPLOAD = "trace_file"      # the uploader's widget key


STORED = "_trace_upload"   # the last upload (an Upload), kept across pages
REFUSED = "_trace_refused"   # (name, reason) of the upload last refused, its bytes let go


# --- the workload -------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Upload:
    name: str          # as the browser gave it: shown only through ui.shell.literal
    data: bytes
    digest: str        # of the bytes: the cache key
    file_id: str


def _keep(f) -> Upload | None:
    if f is None:
        return None
    data = f.getvalue()
    return Upload(f.name, data, hashlib.sha256(data).hexdigest()[:20], f.file_id)


def _store(upload: Upload | None) -> Upload | None:
    """Keep `upload` for the other traffic pages; a new file, or none, ends the last refusal."""
    st.session_state[STORED] = upload
    st.session_state.pop(REFUSED, None)
    return upload


def _keep_upload() -> None:
    """The uploader's value lives only on its page; keep the file for the other traffic pages
    until the user removes it. A file the app let go of itself (a refused upload) is no change
    of the user's: its refusal stays."""
    f = st.session_state.get(UPLOAD)
    if not is_forgotten(f):
        _store(_keep(f))


def upload_box() -> Upload | None:
    f = st.file_uploader(
        f"Trace CSV: columns {', '.join(COLUMNS)}, one request per row", type=["csv"],
        key=UPLOAD, max_upload_size=max(1, MAX_BYTES // 1_000_000), on_change=_keep_upload,
        help=f"A CSV trace: {TRACE_COLUMNS_WORDS}. At most {MAX_BYTES / 1e6:g} MB, "
             f"{MAX_COLUMNS:,} columns and {MAX_ROWS:,} rows. Arrival times in seconds (>= 0, "
             "any order), whole token counts >= 1. Checked before anything runs. The traffic "
             "pages serve every request alike whatever its class; `python -m sim simulate "
             "--trace-in` gives each class's percentiles.")
    kept = st.session_state.get(STORED)
    if f is not None and (kept is None or kept.file_id != f.file_id):
        kept = _store(_keep(f))
    return kept


def refusal() -> tuple[str, str] | None:
    """The name of the upload last refused and why, until another file is uploaded or that one
    removed (the uploader still shows it, while its bytes are gone)."""
    return st.session_state.get(REFUSED)


def trace_workload(upload: Upload) -> Workload:
    """The upload's requests, parsed once per file for every session (the shared TRACES store),
    with a progress bar while it parses; an InputError names what is wrong with the file."""
    key = ("upload", upload.digest)
    kept = TRACES.get(key)
    if kept is not None:
        return kept
    try:
        check_size(upload.data)               # before the bytes are decoded or parsed
        bar = st.progress(0.0, text="Reading the trace")
        try:
            workload = load_trace(upload.data, report=lambda share: bar.progress(
                share, text=f"Reading the trace: {share:.0%}"))
        finally:
            bar.empty()
    except InputError as e:
        _refuse(upload, e)
        raise
    return TRACES.put(key, workload)


def _refuse(upload: Upload, error: InputError) -> None:
    """Let go of a refused upload's bytes, the session's copy and the server's, which would
    otherwise stay in memory as long as the session; keep its name and why."""
    st.session_state[STORED] = None
    st.session_state[REFUSED] = (upload.name, str(error))
    forget_upload(upload.file_id)

