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

from . import controls, story
from . import glossary as glossary_terms
from .controls import CONTROLS, CUSTOM, Control
from .glossary import first
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


def widget(control: Control, where=st, width: int | str = "stretch"):
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


def _preset_or_custom(picker: Control, custom_fields, describe) -> None:
    """A preset picker: its fields when "custom" is picked, else the preset's name, figures and
    source. (The list shows the presets' ids: a bound widget matches the link by what it shows.)"""
    choice = widget(picker)
    if choice == CUSTOM:
        for control in custom_fields:
            widget(control)
    else:
        st.caption(describe(choice), unsafe_allow_html=True)


def sidebar() -> None:
    """The shared controls. Custom GPU and model fields appear only when picked."""
    with st.sidebar:
        st.subheader("Scenario")
        for control in controls.SCENARIO:
            widget(control)
        st.subheader("Hardware and cost")
        _preset_or_custom(CONTROLS["gpu"], controls.CUSTOM_GPU, lambda g: (
            f"{GPUS[g].name}: {GPUS[g].peak_flops / 1e12:,.4g} TFLOP/s **dense** (no sparsity) in "
            f"{first('bf16')}, {GPUS[g].bandwidth / 1e12:,.4g} TB/s, "
            f"{GPUS[g].memory_bytes / 1e9:,.4g} GB. Source: {GPUS[g].source}."))
        _preset_or_custom(CONTROLS["model"], controls.CUSTOM_MODEL, lambda m: (
            f"{MODELS[m].name}: {MODELS[m].params / 1e9:,.3g}B parameters, {MODELS[m].layers} "
            f"layers, {MODELS[m].kv_heads} {first('kv')} heads × {MODELS[m].head_dim}. Source: "
            f"{MODELS[m].source}."))
        tp = widget(CONTROLS["tp"])
        if tp > 1:
            st.caption(f"Each number is per GPU: 1/{tp} of the weights, the arithmetic and the KV "
                       "cache each (KV heads fewer than tp are copied), plus two all-reduces of the "
                       "batch's activations per layer, priced from the GPU's link preset.")
        widget(CONTROLS["mode"])
        st.caption(f"**simple** (default) is the source articles' own arithmetic ({first('flop')} "
                   "= 2 × parameters × tokens; each iteration reads the weights once), so the "
                   "defaults show their numbers exactly (327.7 ms, 16 × 23.04 ms = 368.6 ms). "
                   "**roofline** adds attention, the decoders' KV reads and the "
                   f"{first('lm')} head (at the defaults the decode step grows from 5.333 ms to "
                   "16.3 ms: 31 GiB of KV); **calibrated** runs that work at what real kernels "
                   "achieve.", unsafe_allow_html=True)
        st.subheader("Compare")
        for control in controls.POLICY:
            widget(control)
        st.subheader("Display")
        widget(CONTROLS["presenter"])
        st.caption("Every control is in the page's link: copy it to share this exact view. "
                   "Light or dark: the app menu (⋮ → Settings).")


def look() -> Look:
    return Look(presenter=bool(st.session_state.get("presenter", False)),
                dark=st.context.theme.type == "dark")


def presenter_css() -> None:
    """Presenter mode scales the whole page, not just the charts."""
    if st.session_state.get("presenter"):
        st.html("<style>html { font-size: 125%; }</style>")


def glossary() -> None:
    """The glossary's hover style for every page, and all its terms in a popover atop the sidebar."""
    st.html(glossary_terms.CSS)
    with st.sidebar.popover("Glossary", icon=":material/menu_book:", width="stretch"):
        st.markdown("\n".join(f"- {line}" for line in glossary_terms.entries()))


def next_link(title: str) -> None:
    """The end of every page: a link to the next page on the learner's path (ui/story.py)."""
    here = next(p for p in story.PAGES if p.title == title)
    after = story.next_page(here.path)
    st.divider()
    st.page_link(after.path, label=f"Next: {after.title}: {after.what}", icon=":material/arrow_forward:")


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
