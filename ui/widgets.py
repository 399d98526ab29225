"""Streamlit glue shared by app.py and the pages: the controls as widgets, cached calls into `sim`
and `charts`, and a chart with its downloads. Pages call these and write the words.

Every simulation and figure is cached, keyed on plain inputs (the Scenario dataclass holds frozen
Gpu and Model dataclasses), so a rerun that changes nothing costs nothing and a changed control
recomputes only what depends on it. Traces, frames and figures are only ever read, so they are
cached as resources (shared, never copied: a trace with a million tokens would cost more to
unpickle on every rerun than to use); small results and the specs handed to the browser are
cached as data.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from charts import export
from charts.figure import Figure
from charts.theme import Look
from sim.errors import InputError
from sim.presets.hardware import GPUS
from sim.presets.models import MODELS

from . import controls
from .controls import CONTROLS, CUSTOM, Control
from .scenario import Scenario, scenario_from

CHART_WIDTH = 900
LINK_NOTES = "_link_notes"


# --- controls -------------------------------------------------------------------------------
def apply_link_corrections() -> None:
    """On a session's first run, replace out-of-range or unreadable values from the link by the
    nearest valid ones (before the widgets exist, so they start there) and keep the notes."""
    if LINK_NOTES in st.session_state:
        return
    corrections, notes = controls.from_query({key: st.query_params.get_all(key)
                                               for key in st.query_params})
    for key, value in corrections.items():
        st.session_state[key] = value
        _forget_link_value(key)
    st.session_state[LINK_NOTES] = notes


def _forget_link_value(key: str) -> None:
    """Drop a corrected value from the link, so the widget starts from the correction; the bound
    widget then writes that into the URL. Streamlit 1.67 seeds a bound widget from the link as it
    was loaded, even over session state, and its integer parser raises OverflowError on `inf` and
    truncates 12.7 to 12 (where the note says 13); that copy of the link has no public API."""
    del st.query_params[key]
    ctx = get_script_run_ctx()
    if ctx is not None:
        ctx.session_state._state.query_params._initial_query_params.pop(key, None)


def show_link_notes() -> None:
    notes = st.session_state.get(LINK_NOTES) or []
    if not notes:
        return
    st.warning("Some values in the link were out of range or unreadable:\n\n"
               + "\n".join(f"- {note}" for note in notes), icon=":material/link_off:")
    if st.button("Dismiss", key="dismiss_link_notes"):
        st.session_state[LINK_NOTES] = []
        st.rerun()


def _bound(control: Control, where=st, width: int | str = "stretch"):
    """The widget for one control, bound to its URL key."""
    common = dict(key=control.key, help=control.help or None, bind="query-params", width=width)
    if control.kind == "int":
        return where.number_input(control.label, min_value=int(control.low),
                                  max_value=int(control.high), value=int(control.default),
                                  step=int(control.step), **common)
    if control.kind == "float":
        return where.number_input(control.label, min_value=float(control.low),
                                  max_value=float(control.high), value=float(control.default),
                                  step=float(control.step), format="%g", **common)
    if control.kind == "bool":
        return where.toggle(control.label, value=bool(control.default), **common)
    if control.kind == "multi":
        return where.multiselect(control.label, control.options, default=list(control.default),
                                 **common)
    return where.selectbox(control.label, control.options,
                           index=control.options.index(control.default), **common)


KEPT = "_kept_controls"   # {key: (value, page)}: each page control's last value and its page


def widget(control: Control, where=st, width: int | str = "stretch"):
    """The widget for one control drawn on a page (the sidebar's never leave), bound to its URL
    key, that keeps its value when the user moves to another page and back, or on to a third
    page that draws it too (the traffic workload, the TPOT target). Streamlit 1.67 drops a page's
    bound widget, value and URL key, when a page move comes before any change to it, so the
    value each control last showed is kept here and handed back on the first run of a page that
    draws it again (a link opened fresh, or a Back to a link that names it, still wins)."""
    kept = st.session_state.setdefault(KEPT, {})
    ctx = get_script_run_ctx()
    page = ctx.page_script_hash if ctx else None
    moved = control.key in kept and kept[control.key][1] != page
    if moved:   # Streamlit's own copy, if it kept one, has an edit made just before the move
        st.session_state[control.key] = st.session_state.get(control.key, kept[control.key][0])
    value = _bound(control, where, width)
    if moved and ctx is not None and value != control.default:
        _write_link_value(ctx, control.key, value)
    kept[control.key] = (value, page)
    return value


def _write_link_value(ctx, key: str, value) -> None:
    """Put a handed-back value into the page's link, as Streamlit 1.67 does for a value it
    restores itself (but not for one set in session state before the widget's first run on a
    page). Its query-param store has no public API for this; a key already there is left alone."""
    params = ctx.session_state._state.query_params
    binding = params.get_binding_for_param(key)
    if binding is not None and not params.has_param(key):
        params.set_corrected_value(key, value, binding.value_type)


def _preset_or_custom(picker: Control, custom_fields, describe) -> None:
    """A preset picker: its fields when "custom" is picked, else the preset's figures and source."""
    choice = _bound(picker)
    if choice == CUSTOM:
        for control in custom_fields:
            _bound(control)
    else:
        st.caption(describe(choice))


def sidebar() -> None:
    """The shared controls. Custom GPU and model fields appear only when picked."""
    with st.sidebar:
        st.subheader("Scenario")
        for control in controls.SCENARIO:
            _bound(control)
        st.subheader("Hardware and cost")
        _preset_or_custom(CONTROLS["gpu"], controls.CUSTOM_GPU, lambda g: (
            f"{GPUS[g].name}: {GPUS[g].peak_flops / 1e12:,.4g} TFLOP/s **dense BF16, no "
            f"sparsity**, {GPUS[g].bandwidth / 1e12:,.4g} TB/s, {GPUS[g].memory_bytes / 1e9:,.4g} "
            f"GB. Source: {GPUS[g].source}."))
        _preset_or_custom(CONTROLS["model"], controls.CUSTOM_MODEL, lambda m: (
            f"{MODELS[m].name}: {MODELS[m].params / 1e9:,.3g}B params, {MODELS[m].layers} layers, "
            f"{MODELS[m].kv_heads} KV heads × {MODELS[m].head_dim}. Source: {MODELS[m].source}."))
        tp = _bound(CONTROLS["tp"])
        if tp > 1:
            st.caption(f"Each number is per GPU: 1/{tp} of the weights, FLOPs and KV cache each "
                       "(KV heads fewer than tp are copied), plus two all-reduces of the batch's "
                       "activations per layer, priced from the GPU's link preset.")
        _bound(CONTROLS["mode"])
        st.caption("**simple** (default) is seed 001's own arithmetic, so the defaults show its "
                   "numbers exactly (327.7 ms, 16 × 23.04 ms = 368.6 ms). **roofline** adds "
                   "attention, the decoders' KV reads and the LM head (at the defaults the decode step "
                   "grows from 5.333 ms to 16.3 ms: 31 GiB of KV); **calibrated** runs that work "
                   "at what real kernels achieve.")
        st.subheader("Compare")
        for control in controls.POLICY:
            _bound(control)
        st.subheader("Display")
        _bound(CONTROLS["presenter"])
        st.caption("Every control is in the page's link: copy it to share this exact view. "
                   "Light or dark: the app menu (⋮ → Settings).")


def look() -> Look:
    return Look(presenter=bool(st.session_state.get("presenter", False)),
                dark=st.context.theme.type == "dark")


def presenter_css() -> None:
    """Presenter mode scales the whole page, not just the charts."""
    if st.session_state.get("presenter"):
        st.html("<style>html { font-size: 125%; }</style>")


def scenario() -> Scenario:
    """The current scenario, or an error message and the end of this page's run."""
    try:
        return scenario_from(st.session_state)
    except InputError as e:
        st.error(f"**Can't build this scenario:** {e}")
        st.stop()








































def steps_frame(steps) -> pd.DataFrame:
    """sim Steps (worked example, memory budget) as a table: what, formula, the numbers
    substituted, the result with its unit."""
    return pd.DataFrame([{"step": x.title, "formula": x.formula, "numbers substituted": x.substituted,
                          "result": x.display} for x in steps])


# --- charts and their downloads -------------------------------------------------------------
def chart(spec: dict, figure: Callable[[], Figure], name: str) -> None:
    """Draw a spec, with PNG, SVG, CSV and JSON downloads of the figure it came from."""
    st.vega_lite_chart(spec, theme=None, width="content")
    downloads(figure, name)






def downloads(figure: Callable[[], Figure], name: str) -> None:
    """Files are made only when a button is clicked (vl-convert takes a few hundred ms)."""
    cols = st.columns(4, gap="small", width=520)
    files = (("PNG", lambda: export.png(figure()), "png", "image/png"),
             ("SVG", lambda: export.svg(figure()), "svg", "image/svg+xml"),
             ("CSV", lambda: figure().csv(), "csv", "text/csv"),
             ("JSON", lambda: figure().json(), "json", "application/json"))
    for col, (label, data, ext, mime) in zip(cols, files):
        col.download_button(label, data, file_name=f"{name}.{ext}", mime=mime, on_click="ignore",
                            icon=":material/download:", key=f"download_{name}_{ext}")
