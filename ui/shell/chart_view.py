"""A chart in the page, drawn by Vega alone: the Vega-Lite spec compiled to Vega on the server
(charts.player.vega_spec, cached per spec), Vega loaded once per page from the app's static files
(the player's bundle; ui/shell/server.py starts it while the page loads), a Vega view built by
ui/shell/front/chart.js with the player's tooltips. Streamlit's own chart element compiles Vega-Lite
in the browser with 1 MB more code (Vega-Lite, Vega-Embed, Arrow), then runs each view again as
its data arrive: on two cores a fresh visit drew its charts well after its text (`python -m
benchmarks.first_render` measures both).

Where no static file can be served (static serving off, or no script folder) the chart falls
back to Streamlit's element, which needs nothing more."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pandas as pd
import streamlit as st

from charts.player import asset, script_json, vega_spec, write_vega_bundle
from charts.theme import Look

from .assets import front
from .streamlit_internals import main_script_folder

COMPONENT = "chunked_prefill_lab.chart"
BOX_CLASS = "lab-chart"   # the box each chart is drawn in; it holds the canvas once drawn
STATIC_PREFIX = "app/static"   # where Streamlit serves <folder of the main script>/static/


def vega_bundle_url() -> str | None:
    """The Vega bundle as a static file of the app (written on first use), as a root-relative
    URL; None where static serving is off or no script runs."""
    folder = main_script_folder()
    if folder is None or not st.get_option("server.enableStaticServing"):
        return None
    name = write_vega_bundle(folder / "static").name
    prefix = "/".join(p for p in st.get_option("server.baseUrlPath").split("/") if p)
    return f"{'/' + prefix if prefix else ''}/{STATIC_PREFIX}/{name}"


@functools.cache
def _component():
    return st.components.v2.component(
        COMPONENT, js=asset("tooltip.js") + "\n" + front("chart.js"),
        css=asset("tooltip.css") + front("chart.css"), isolate_styles=False)


def show_chart(spec: dict, look: Look, key: str) -> None:
    """Draw a Vega-Lite spec (with its data inline) in the page, keyed by `key`."""
    bundle = vega_bundle_url()
    if bundle is None:
        st.vega_lite_chart(spec, theme=None, width="content")
        return
    compiled = vega_spec(script_json(spec), look.dark)
    _component()(key=f"chart_{key}", width="content", data={
        "spec": compiled, "bundle": bundle, "theme": "dark" if look.dark else "light",
        "box": BOX_CLASS})


# --- a chart's numbers as a reader reads them ---------------------------------------------------
# The charts name their tables and columns as code does (`unchunked_iterations`, `prev_ms`); the
# numbers tables under them say the same in words, with the unit in the header. The layout a
# chart needs and a reader does not (block rows, label offsets, headings it draws as text) is left
# out of those tables; the CSV and JSON downloads keep everything as the chart has it.
COLUMN_WORDS = {
    "iteration": "iteration", "iterations": "iterations", "start_ms": "start (ms)",
    "end_ms": "end (ms)", "duration_ms": "duration (ms)", "longest_ms": "longest iteration (ms)",
    "decode_tokens": "stream tokens", "prefill_tokens": "prompt tokens",
    "decode_share": "stream tokens' share of the iteration", "compute_ms": "compute time (ms)",
    "memory_ms": "memory time (ms)", "overhead_ms": "CPU overhead (ms)", "bound": "bound by",
    "decoders": "streams", "time_ms": "time (ms)", "prev_ms": "previous token (ms)",
    "gap_ms": "gap since the previous token (ms)", "tokens": "tokens",
    "finish_ms": "streams finish (ms)", "stream": "stream", "token": "token",
    "arrival_ms": "arrival (ms)", "first_ms": "first token (ms)", "policy": "policy",
    "start_s": "start (s)", "end_s": "end (s)", "kind": "kind", "fraction": "fraction at or below",
    "share": "share", "count": "count", "request": "request", "arrival_s": "arrival (s)",
    "queue_s": "queue wait (s)", "prefill_s": "prefill (s)", "decode_s": "decode (s)",
    "budget": "token budget", "ttft_p50_s": "p50 TTFT (s)", "ttft_p99_s": "p99 TTFT (s)",
    "tbt_p50_ms": "p50 TBT (ms)", "tbt_p99_ms": "p99 TBT (ms)", "throughput": "throughput (tokens/s)",
    "median_delay_s": "median scheduling delay (s)", "fixed_share": "fixed cost's share",
    "split_prompts": "prompts split", "intensity": "intensity (FLOP/B)",
    "attainable_tflops": "attainable (TFLOP/s)", "achieved_tflops": "achieved (TFLOP/s)",
    "label": "iteration", "flops": "FLOPs", "bytes": "bytes (B)", "chunk": "chunk (tokens)",
    "time_s": "time (s)", "kv_tokens": "KV held (tokens)", "kv_gib": "KV held (GB)",
    "capacity_tokens": "KV capacity (tokens)", "preemptions": "preemptions",
    "tp": "tensor-parallel GPUs", "ms": "time (ms)", "point": "point", "series": "series",
    "measured_ms": "measured (ms)", "predicted_ms": "predicted (ms)", "mode": "cost mode",
    "error": "error (predicted / measured − 1)", "added_ms": "added (ms)", "step": "step",
    "why": "why", "row": "row", "part": "part", "total": "total",
    "rows": "GEMM rows computed", "empty_rows": "empty rows",
    "exact_ms": "time on exactly its tokens (ms)", "empty_ms": "the empty rows' time (ms)",
    "formula": "formula",
}
# per table, where one column name means another thing
TABLE_COLUMN_WORDS = {("tiles", "tokens"): "batch tokens", ("tile_marks", "tokens"): "batch tokens",
                      ("ttft", "value"): "TTFT (s)", ("gaps", "value"): "gap between tokens (ms)",
                      ("ttft", "count"): "requests", ("gaps", "count"): "gaps",
                      ("gaps", "share"): "share of gaps this long or longer",
                      ("kv", "share"): "share of KV capacity", ("markers", "kind"): "marker",
                      ("frontier", "regime"): "regime", ("frontier", "recommended"): "recommended"}
LAYOUT_COLUMNS = {"band", "row0", "row1", "label_dy", "key", "text"}
LAYOUT_TABLES = ("heading",)   # a lane's title and subtitle, drawn as text above it
LAYOUT_IN = {"frontier": {"label"}}   # a column that only places a label
TABLE_WORDS = {"iterations": "iterations", "ticks": "the streams' tokens",
               "new": "the new request's tokens", "callouts": "the new request's arrival and first token",
               "timeline": "iterations over time", "ttft": "time to first token, as a CDF",
               "gaps": "gaps between tokens, as a CCDF", "split": "each request's queue wait, prefill and decode",
               "frontier": "one row per budget", "roof": "the roofline", "points": "the points drawn",
               "curve": "iteration time by budget", "markers": "the marked budgets",
               "kv": "KV cache held over time", "times": "predicted and measured times",
               "factors": "what the calibrated mode adds, step by step", "pieces": "the pieces drawn",
               "tiles": "iteration time at every batch token", "tile_marks": "the marked budgets"}
LANES = {"unchunked": "Unchunked lane", "chunked": "Chunked lane"}
GIB_IN_GB = 2**30 / 1e9


def table_words(table: str) -> str:
    """A chart's table as its numbers table's title: "Chunked lane: iterations"."""
    lane, _, rest = table.partition("_")
    if lane in LANES and rest:
        return f"{LANES[lane]}: {TABLE_WORDS.get(rest, rest.replace('_', ' '))}"
    words = TABLE_WORDS.get(table, table.replace("_", " "))
    return words[0].upper() + words[1:]


def column_words(table: str, column: str) -> str:
    """A column's header in words, its unit in brackets."""
    name = table.partition("_")[2] if table.partition("_")[0] in LANES else table
    return TABLE_COLUMN_WORDS.get((name, column), COLUMN_WORDS.get(column, column.replace("_", " ")))


def shown_tables(data: dict[str, pd.DataFrame], names: Callable[[str], str]) -> dict[str, pd.DataFrame]:
    """A figure's tables as its numbers tables show them, by title: the layout left out, headers in
    words, sizes in GB, a policy by its name (`names`), and an empty cell where the chart has no
    value (a stream's first token has no previous one), never "None"."""
    shown = {}
    for table, frame in data.items():
        lane, _, rest = table.partition("_")
        if (rest if lane in LANES else table) in LAYOUT_TABLES:
            continue
        drop = LAYOUT_COLUMNS | LAYOUT_IN.get(table, set())
        frame = frame.drop(columns=[c for c in frame.columns if c in drop])
        if "kv_gib" in frame:
            frame = frame.assign(kv_gib=frame["kv_gib"] * GIB_IN_GB)
        if "policy" in frame:
            frame = frame.assign(policy=frame["policy"].map(names))
        for column in frame.columns[frame.isna().any().to_numpy()]:
            frame[column] = [("" if pd.isna(v) else f"{v:.6g}" if isinstance(v, float) else str(v))
                             for v in frame[column]]
        shown[table_words(table)] = frame.rename(
            columns={c: column_words(table, c) for c in frame.columns})
    return shown
