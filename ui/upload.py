"""An uploaded trace CSV, kept across the traffic pages, and its parse.

An upload meets the command line's limits (sim/serving/trace_files.py: 5 MB, 100 columns, 100,000
rows), checked in that order before the rows are parsed; the parse is linear in the file and
shows its progress. Each progress update is a call into Streamlit, which is where Streamlit stops
a script whose tab closed or whose user clicked elsewhere: a parse never outlives its tab."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from sim.serving.trace_files import (
    COLUMNS,
    MAX_BYTES,
    MAX_COLUMNS,
    MAX_ROWS,
    check_size,
    load_trace,
)
from sim.serving.workloads import Workload

from .store import TRACES

UPLOAD = "trace_file"      # the uploader's widget key


STORED = "_trace_upload"   # the last upload (an Upload), kept across pages


# --- the workload -------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Upload:
    name: str          # as the browser gave it: shown only through ui.literal
    data: bytes
    digest: str        # of the bytes: the cache key
    file_id: str


def _keep(f) -> Upload | None:
    if f is None:
        return None
    data = f.getvalue()
    return Upload(f.name, data, hashlib.sha256(data).hexdigest()[:20], f.file_id)


def _keep_upload() -> None:
    """The uploader's value lives only on its page; keep the file for the other traffic pages
    until the user removes it."""
    st.session_state[STORED] = _keep(st.session_state.get(UPLOAD))


def upload_box() -> Upload | None:
    f = st.file_uploader(
        f"Trace CSV: columns {', '.join(COLUMNS)}, one request per row", type=["csv"],
        key=UPLOAD, max_upload_size=max(1, MAX_BYTES // 1_000_000), on_change=_keep_upload,
        help=f"At most {MAX_BYTES / 1e6:g} MB, {MAX_COLUMNS:,} columns and {MAX_ROWS:,} rows. "
             "Arrival times in seconds (>= 0, any order), whole token counts >= 1. Checked "
             "before anything runs.")
    kept = st.session_state.get(STORED)
    if f is not None and (kept is None or kept.file_id != f.file_id):
        kept = st.session_state[STORED] = _keep(f)
    return kept


def trace_workload(upload: Upload) -> Workload:
    """The upload's requests, parsed once per file for every session (the shared TRACES store),
    with a progress bar while it parses; an InputError names what is wrong with the file."""
    key = ("upload", upload.digest)
    kept = TRACES.get(key)
    if kept is not None:
        return kept
    check_size(upload.data)                   # before the bytes are decoded or parsed
    bar = st.progress(0.0, text="Reading the trace")
    try:
        workload = load_trace(upload.data, report=lambda share: bar.progress(
            share, text=f"Reading the trace: {share:.0%}"))
    finally:
        bar.empty()
    return TRACES.put(key, workload)

