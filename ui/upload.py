"""An uploaded trace CSV, kept across the traffic pages."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from sim.serving.trace_files import COLUMNS, MAX_BYTES, MAX_ROWS

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
        help=f"At most {MAX_BYTES / 1e6:g} MB and {MAX_ROWS:,} rows. Arrival times in seconds "
             "(>= 0, any order), whole token counts >= 1. Checked before anything runs.")
    kept = st.session_state.get(STORED)
    if f is not None and (kept is None or kept.file_id != f.file_id):
        kept = st.session_state[STORED] = _keep(f)
    return kept


