"""Streamlit glue shared by app.py and the pages: the controls as widgets (with the corrections a
link's values get and the notes that say so), the sidebar, the look, the glossary, the link to the
next page, and a chart with its downloads and numbers table. Pages call these and write the words.

Nothing here is cached: the cached calls into `sim` and `charts` are in ui/learn/runs.py (the lanes,
roofline, worked example, fidelity) and ui/under_load/traffic.py (the traffic pages).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from charts import export, film
from charts.figure import Figure
from charts.theme import Look
from charts.traffic import policy_title
from sim.cost.iteration import MODE_NAMES
from sim.errors import InputError
from sim.presets.hardware import GPUS
from sim.presets.models import MODELS
from sim.studies.lanes import streams_step
from sim.units import fmt_bytes, fmt_seconds

from . import controls, story
from . import glossary as glossary_terms
from .assets import front
from .chart_view import show_chart, shown_tables
from .controls import CONTROLS, CUSTOM, NO_PAGE, Control
from .glossary import first
from .literal import literal
from .scenario import Scenario, exported, fit_in_memory, scenario_from
from .streamlit_internals import initial_link, page_hash, write_link_value

CHART_WIDTH = 900
LINK_NOTES = "_link_notes"
MISSING_PAGE = "_missing_page"   # the path a link named that is no page (ui/shell/server.py), or None


# --- controls -------------------------------------------------------------------------------
def apply_link_corrections() -> bool:
    """On a session's first run, replace out-of-range, unreadable or oddly spelled values from
    the link by the values to use (before the widgets exist, so they start there), write those
    back into the link under each key's own spelling, take out the keys the app does not read,
    and keep the notes. A scenario count clamped to its maximum is lowered
    further to what fits in the GPU's memory, so a clamp never makes a page that cannot run.
    A path that is no page (`no_page`, from ui/shell/server.py's redirect) is kept for its note and
    taken out of the link. True on the session's first run."""
    if LINK_NOTES in st.session_state:
        return False
    missing = st.query_params.get_all(NO_PAGE)
    st.session_state[MISSING_PAGE] = missing[-1] if missing else None
    if missing:
        del st.query_params[NO_PAGE]
        initial_link().pop(NO_PAGE, None)
    link = controls.read_link({key: st.query_params.get_all(key) for key in st.query_params})
    for spelled, key in link.renamed.items():   # the link says it as the app does, then reads on
        st.query_params[key] = initial_link()[key] = st.query_params.get_all(spelled)
    for spelled in (*link.renamed, *link.dropped):
        del st.query_params[spelled]
        initial_link().pop(spelled, None)
    corrections, notes = dict(link.corrections), dict(link.notes)
    for key, value in link.values.items():   # a picker shown by name starts here (`_named`),
        if CONTROLS[key].kind in NAMED:       # on this page or on the first that draws it
            st.session_state[key] = value
    for key, fitted in fit_in_memory(link.values, link.above_max).items():
        corrections[key] = fitted
        high = CONTROLS[key].show(CONTROLS[key].high)
        notes[key] = (f"{controls.in_link(key, link.given[key])} in the link is "
                      f"above the maximum {high}, and more than fits in the GPU's memory with the "
                      f"link's other values; using {fitted:,}, the most that fits")
    for key, value in corrections.items():
        st.session_state[key] = value
        _rewrite_link_value(CONTROLS[key], value)
    st.session_state[LINK_NOTES] = list(notes.values())
    return True


def _rewrite_link_value(control: Control, value) -> None:
    """Put the value the widget will hold into the link (or drop it when it is the default, as
    the widget itself does), so the address bar reproduces the view. Streamlit 1.67 seeds a
    bound widget from the link as it was loaded, even over session state (its integer parser
    raises OverflowError on `inf` and truncates 12.7 to 12, where the note says 13), and it writes
    a value set in session state into the link only from a session's second run: so both the
    link and that first copy of it (a Streamlit internal, `initial_link`) get the value's plain
    spelling."""
    initial = initial_link()
    if value == control.default:
        del st.query_params[control.key]
        initial.pop(control.key, None)
        return
    text = control.url_text(value)
    st.query_params[control.key] = text
    initial[control.key] = text if isinstance(text, list) else [text]


def show_link_notes() -> None:
    """What the link asked for that the page could not give: a page that does not exist, values
    out of range or unreadable, keys the app does not read. Every value and key is quoted as the
    link spells it, as text."""
    notes = st.session_state.get(LINK_NOTES) or []
    missing = st.session_state.get(MISSING_PAGE)
    if missing is not None:
        st.warning(no_such_page(missing), icon=":material/link_off:")
    if notes:
        st.warning("Some of the link could not be used as written:\n\n"
                   + "\n".join(f"- {note}" for note in notes), icon=":material/link_off:")
    if (notes or missing is not None) and st.button("Dismiss", key="dismiss_link_notes"):
        st.session_state[LINK_NOTES] = []
        st.session_state[MISSING_PAGE] = None
        st.rerun()


def no_such_page(name: str) -> str:
    """The note for a link to a path that is no page (ui/shell/server.py sent it to Home)."""
    pages = ", ".join(f"{page.title} (`/{'' if page is story.PAGES[0] else Path(page.path).stem}`)"
                      for page in story.PAGES)
    return f"There is no page “{literal(name)}” in this lab. The pages: {pages}."


def _bound(control: Control, where=st, width: int | str = "stretch"):
    """The widget for one control, bound to its URL key."""
    if control.kind in NAMED:
        return _named(control, where, width)
    common = dict(key=control.key, help=control.help or None, bind="query-params", width=width)
    if control.kind == "int":
        return where.number_input(control.label, min_value=int(control.low),
                                  max_value=int(control.high), value=int(control.default),
                                  step=int(control.step), **common)
    if control.kind == "float":
        return where.number_input(control.label, min_value=float(control.low),
                                  max_value=float(control.high), value=float(control.default),
                                  step=float(control.step), format="%g", **common)
    return where.toggle(control.label, value=bool(control.default), **common)


# A choice shows its options by name ("H100 SXM") while the link keeps their keys (`h100-sxm`).
# Streamlit 1.67 writes a bound picker's option into the link as the picker shows it, so these
# pickers are not bound: the page keeps the link in step itself. A page move drops their keys
# from the link (the value stays in the session and is written back); a value in the link that
# this session did not write (a first visit, Back or Forward to another value) sets the picker.
# Back to a link without the key (the default) keeps the picker's value and writes it back.
NAMED = ("choice", "multi")
NAMES_IN_LINK = "_names_in_link"   # {key: the link's values for it as this session last wrote them}


def _named(control: Control, where, width):
    """The picker for a choice (or several), its options by name, its key in the link."""
    written = st.session_state.setdefault(NAMES_IN_LINK, {})
    in_link = st.query_params.get_all(control.key)
    if in_link and in_link != written.get(control.key):
        st.session_state[control.key] = control.parse(in_link)[0]
    default = list(control.default) if control.kind == "multi" else control.default
    st.session_state.setdefault(control.key, default)
    common = dict(key=control.key, help=control.help or None, width=width,
                  format_func=control.name)
    if control.kind == "multi":
        value = where.multiselect(control.label, control.options, **common)
    else:
        value = where.selectbox(control.label, control.options, **common)
    shown = [] if value == default else control.url_text(value)
    shown = shown if isinstance(shown, list) else [shown]
    if shown != in_link:
        if shown:
            st.query_params[control.key] = shown
        else:
            del st.query_params[control.key]
    written[control.key] = shown
    return value


KEPT = "_kept_controls"   # {key: (value, page)}: each page control's last value and its page


def widget(control: Control, where=st, width: int | str = "stretch"):
    """The widget for one control drawn on a page (the sidebar's never leave), bound to its URL
    key, that keeps its value when the user moves to another page and back, or on to a third
    page that draws it too (the traffic workload, the TPOT target). Streamlit 1.67 drops a page's
    bound widget, value and URL key, when a page move comes before any change to it, so the
    value each control last showed is kept here and handed back on the first run of a page that
    draws it again (a link opened fresh, or a Back to a link that names it, still wins)."""
    kept = st.session_state.setdefault(KEPT, {})
    page = page_hash()
    moved = control.key in kept and kept[control.key][1] != page
    if moved:   # Streamlit's own copy, if it kept one, has an edit made just before the move
        st.session_state[control.key] = st.session_state.get(control.key, kept[control.key][0])
    value = _bound(control, where, width)
    if moved and value != control.default:   # as Streamlit does for a value it restores itself
        write_link_value(control.key, value)
    kept[control.key] = (value, page)
    return value


def set_controls(**values) -> Callable[[], None]:
    """A button callback that sets controls, before they are drawn on the rerun. Only for
    controls drawn on the run with the button: Streamlit 1.67 keeps a value set for a widget that
    did not exist yet out of the page's link, so it would be lost on the next page."""
    def apply() -> None:
        for key, value in values.items():
            st.session_state[key] = value
    return apply


def _preset_or_custom(picker: Control, custom_fields, describe) -> None:
    """A preset picker: its fields when "custom" is picked, else the preset's name, figures and
    source."""
    choice = _bound(picker)
    if choice == CUSTOM:
        for control in custom_fields:
            _bound(control)
    else:
        st.caption(describe(choice), unsafe_allow_html=True)


def sidebar() -> None:
    """The shared controls. Custom GPU and model fields appear only when picked."""
    with st.sidebar:
        st.subheader("Scenario")
        for control in controls.SCENARIO:
            _bound(control)
        st.subheader("Hardware and cost")
        _preset_or_custom(CONTROLS["gpu"], controls.CUSTOM_GPU, lambda g: (
            f"{GPUS[g].name}: {GPUS[g].peak_flops / 1e12:,.4g} TFLOP/s **dense** (no sparsity) in "
            f"{first('bf16')}, {GPUS[g].bandwidth / 1e12:,.4g} TB/s, "
            f"{GPUS[g].memory_bytes / 1e9:,.4g} GB. Source: {GPUS[g].source}."))
        _preset_or_custom(CONTROLS["model"], controls.CUSTOM_MODEL, lambda m: (
            f"{MODELS[m].name}: {MODELS[m].params / 1e9:,.3g}B parameters, {MODELS[m].layers} "
            f"layers, {MODELS[m].kv_heads} {first('kv')} heads × {MODELS[m].head_dim}. Source: "
            f"{MODELS[m].source}."))
        tp = _bound(CONTROLS["tp"])
        if tp > 1:
            st.caption(f"Each number is per GPU: 1/{tp} of the weights, the arithmetic and the KV "
                       "cache each (KV heads fewer than tp are copied), plus two all-reduces of the "
                       "batch's activations per layer, priced from the GPU's link preset.")
        _bound(CONTROLS["mode"])
        st.caption(_modes_help(), unsafe_allow_html=True)
        st.subheader("Compare")
        for control in controls.POLICY:
            _bound(control)
        st.subheader("Display")
        for control in controls.DISPLAY:
            _bound(control)
        st.caption("Every control is in the page's link: copy it to share this exact view. "
                   "Light or dark: the app menu (⋮ → Settings).")


def _modes_help() -> str:
    """The cost modes side by side, with the defaults' decode step in each, priced as every page
    prices it (`streams_step`)."""
    s = scenario_from({})
    step = {mode: fmt_seconds(streams_step(s.in_mode(mode).cost_model(), s.unchunked,
                                           (s.context,) * s.decodes).time_s)
            for mode in ("simple", "roofline")}
    kv = s.decodes * s.context * s.cost_model().kv_bytes_per_token
    return (f"**{MODE_NAMES['simple']}** (default) is the source articles' own arithmetic "
            f"({first('flop')} = 2 × parameters × tokens; each iteration reads the weights once), "
            "so the defaults show their numbers exactly (327.7 ms, 16 × 23.04 ms = 368.6 ms). "
            f"**{MODE_NAMES['roofline']}** adds attention, the streams' KV reads and the "
            f"{first('lm')} head (at the defaults the decode step of the {s.decodes:,} streams "
            f"grows from {step['simple']} to {step['roofline']}: they read {fmt_bytes(kv)} of KV); "
            f"**{MODE_NAMES['calibrated']}** runs that work at what real kernels achieve.")


def look() -> Look:
    return Look(presenter=bool(st.session_state.get("presenter", False)),
                dark=st.context.theme.type == "dark",
                contrast=bool(st.session_state.get("contrast", False)))


def glossary() -> None:
    """The glossary's hover style for every page, and all its terms in a popover atop the sidebar."""
    st.html(glossary_terms.CSS)
    with st.sidebar.popover("Glossary", icon=":material/menu_book:", width="stretch"):
        st.markdown("\n".join(f"- {line}" for line in glossary_terms.entries()))


def next_link(title: str) -> None:
    """The end of every page: a link to the next page on the learner's path (ui/shell/story.py)."""
    here = next(p for p in story.PAGES if p.title == title)
    after = story.next_page(here.path)
    st.divider()
    st.page_link(after.path, label=f"Next: {after.title}: {after.what}", icon=":material/arrow_forward:")


def readable_css() -> None:
    """Text that meets WCAG AA contrast (4.5:1, axe's "serious" line) where Streamlit's does
    not: captions in the charts' muted ink (Streamlit's caption grey, its text at 60% opacity, is
    3.9:1 on white); in the dark theme, dark text on the multiselect's chips (white on the sky
    blue accent is 2.3:1). And the tables' style (front/tables.css)."""
    ink = look()
    chips = ('[data-testid="stMultiSelectTagsContainer"] [data-tag], '
             '[data-testid="stMultiSelectTagsContainer"] [data-tag] * '
             f'{{ color: {ink.background}; }}') if ink.dark else ""
    st.html(f'<style>[data-testid="stCaptionContainer"] {{ color: {ink.muted}; opacity: 1; }}'
            f'{chips}\n{front("tables.css")}</style>')


def scenario() -> Scenario:
    """The current scenario, or an error message and the end of this page's run."""
    try:
        return scenario_from(st.session_state)
    except InputError as e:
        st.error(f"**Can't build this scenario:** {e}")
        st.stop()


def table(frame: pd.DataFrame) -> None:
    """A table of text (the index as its first column) drawn as one Markdown element. Streamlit's
    st.table renders each cell as a Markdown element of its own and loads a megabyte of table
    code on first use: on a fresh visit the Worked example's five tables cost more than its
    chart (benchmarks/first_render.py)."""
    st.markdown(markdown_table(frame))


def markdown_table(frame: pd.DataFrame) -> str:
    """`frame` as a GitHub Markdown table: the index's name and the columns as its head, each
    cell's text with the characters that would end the cell or the row escaped."""
    def row(cells) -> str:
        return "| " + " | ".join(_cell(cell) for cell in cells) + " |"
    lines = [row([frame.index.name or "", *frame.columns]), "|" + " --- |" * (frame.shape[1] + 1)]
    lines += [row([label, *values]) for label, values in zip(frame.index, frame.itertuples(index=False))]
    return "\n".join(lines)


def _cell(value) -> str:
    return " ".join(str(value).split()).replace("|", "\\|")


def steps_frame(steps) -> pd.DataFrame:
    """sim Steps (worked example, memory budget) as a table: what, formula, the numbers
    substituted, the result with its unit."""
    return pd.DataFrame([{"step": x.title, "formula": x.formula, "numbers substituted": x.substituted,
                          "result": x.display} for x in steps])


# --- charts, their downloads and their numbers ---------------------------------------------
# In the page a chart is drawn on a canvas (as the player's is) with the page showing through:
# no box of another background in the dark theme, and no SVG marks for screen readers to trip
# over (Vega's interval brush and an empty layer are unlabelled images to axe). Its text
# alternative is its numbers as tables (`numbers_table`).
IN_PAGE = {"background": "transparent", "usermeta": {"embedOptions": {"renderer": "canvas"}}}


def chart(spec: dict, figure: Callable[[], Figure], name: str, *, tools: bool = True) -> None:
    """Draw a spec, with downloads of the figure it came from and its numbers as tables (not
    with `tools=False`: a projector's page that ends with its figure)."""
    show_chart({**spec, **IN_PAGE}, look(), name)
    if tools:
        figure_tools(figure, name)


def figure_tools(figure: Callable[[], Figure], name: str, t_max: float | None = None) -> None:
    """Under a chart: its downloads and its numbers as tables (`t_max`: an animated figure's
    clock end, for a GIF)."""
    downloads(figure, name, t_max)
    numbers_table(figure, name)


def export_scenario() -> export.Scenario | None:
    """The scenario an exported figure states (None where the controls do not make one)."""
    try:
        return exported(st.session_state)
    except InputError:
        return None


def file_stem(view: str, look: Look) -> str:
    """Saved figures' names say the view, the scenario and the theme (charts.export)."""
    return export.file_stem(export_scenario(), view, look)


def downloads(figure: Callable[[], Figure], name: str, t_max: float | None = None) -> None:
    """PNG, SVG, CSV (a zip of one CSV per table when there are several), JSON and, for an
    animated figure, a GIF of it, in one Download list; the pictures with their scenario above
    them. Files are made only when a button is clicked (vl-convert takes a few hundred ms, a GIF
    seconds)."""
    scenario = export_scenario()

    def drawn() -> Figure:
        return figure().captioned(*scenario.caption) if scenario else figure()

    several = len(figure().data) > 1
    files = [("PNG", "png", lambda: export.png(drawn()), "png", "image/png"),
             ("SVG", "svg", lambda: export.svg(drawn()), "svg", "image/svg+xml")]
    if t_max is not None:
        files.append(("GIF", "gif", lambda: film.gif(drawn(), t_max), "gif", "image/gif"))
    files += [("CSV (zip)" if several else "CSV", "csv", lambda: export.csv_file(figure())[0],
               "zip" if several else "csv", "application/zip" if several else "text/csv"),
              ("JSON", "json", lambda: figure().json(), "json", "application/json")]
    # one button that opens the list: a fresh visit draws one element per chart, not five
    with st.popover("Download", icon=":material/download:", key=f"downloads_{name}",
                    help=", ".join(label for label, *_ in files)):
        for label, kind, data, ext, mime in files:
            saved_as = export.file_name(scenario, name, figure().look, ext)
            st.download_button(label, data, file_name=saved_as, mime=mime, on_click="ignore",
                               icon=":material/download:", key=f"download_{name}_{kind}",
                               help=saved_as, width="stretch")


def numbers_table(figure: Callable[[], Figure], name: str) -> None:
    """The chart's text alternative: every number it draws, as tables, on request (a timeline's
    tables run to thousands of rows, so they are sent only when asked for)."""
    if st.toggle("Show this chart's numbers as tables", key=f"numbers_{name}"):
        tidy = {table: export.tidy(frame) for table, frame in figure().data.items()}
        for title, frame in shown_tables(tidy, policy_title).items():
            st.caption(f"**{title}**")
            st.dataframe(frame, hide_index=True)

