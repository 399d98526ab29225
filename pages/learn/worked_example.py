"""Worked example: the source articles' arithmetic as a story, one step at a time (ui/learn/worked.py),
each step a sentence, a picture to scale and its formulas; the side topics below."""

import json

import streamlit as st

from sim.errors import InputError
from sim.serving.workloads import TEXTBOOK
from sim.studies.worked_example import SARATHI_SERVE, SARATHI_SERVE_URL, SOURCE_ARTICLE
from ui.learn import runs, worked
from ui.shell import controls, presenter, widgets
from ui.shell.glossary import first

s = widgets.scenario()
look = widgets.look()
REVEALED = "worked_revealed"   # how many steps of the core chain are shown

st.header("Worked example")
st.markdown(
    f"The arithmetic of the lab's source article on {first('llm')} serving, *{SOURCE_ARTICLE}*, "
    "one step at a time, on the "
    "sidebar's numbers (the article works the scheduler of "
    f"[{SARATHI_SERVE}]({SARATHI_SERVE_URL})): from the "
    f"weights to the new prompt's {first('ttft')} and the streams' longest wait. It uses their "
    f"simple rule: {first('flop')} = 2 × parameters × tokens, and an iteration costs "
    "max(FLOPs / peak, weight bytes / bandwidth) on one GPU, whatever the sidebar's cost mode "
    "and tensor parallelism.", unsafe_allow_html=True)

second = st.session_state.get("budget2", controls.BUDGET2.default)
try:
    example = runs.worked(s, int(second))
except InputError as e:
    st.error(f"**Can't work this example:** {e}")
    st.stop()
chain = worked.core_chain(example, s.gpu.memory_bytes)

show_all = st.toggle("Show every step at once", key="worked_all")
revealed = len(chain) if show_all else min(st.session_state.get(REVEALED, 1), len(chain))
# the steps so far, a projector's slide the last of them alone, with Back and Next
shown = chain[:revealed] if show_all or not presenter.on() else chain[revealed - 1:revealed]
with presenter.figure():
    for step in shown:
        with st.container(border=True, key=f"worked-{step.id}"):
            st.subheader(step.title)
            st.markdown(step.sentence, unsafe_allow_html=True)
            if len(step.picture):
                runs.worked_figure.draw(f"worked_{step.id}", step.picture, step.unit, look)
            widgets.table(widgets.steps_frame(step.steps).set_index("step"))
    if not show_all:
        back, forward, where = st.columns([1, 2, 3], vertical_alignment="center")
        if back.button("Back", key="worked_back", icon=":material/arrow_back:",
                       disabled=revealed <= 1):
            st.session_state[REVEALED] = revealed - 1
            st.rerun()
        if revealed < len(chain):
            if forward.button(f"Next step: {chain[revealed].title}", key="worked_next",
                              type="primary", icon=":material/arrow_downward:"):
                st.session_state[REVEALED] = revealed + 1
                st.rerun()
        where.caption(f"Step {revealed} of {len(chain)}.")

st.divider()
st.markdown("**Beyond the core chain.** The same arithmetic answers four side questions, about "
            f"the {first('kv')} cache and heavier loads. Each row's formula is written out, like "
            "the steps above.", unsafe_allow_html=True)
for section in worked.sections(example, chain):
    st.subheader(section.title)
    if section.id == "second-budget":
        widgets.widget(controls.BUDGET2, width=340)
    if section.intro:
        st.markdown(section.intro)
    widgets.table(widgets.steps_frame(section.steps).set_index("step"))

last = runs.last_chunk(s)
if last is not None:
    step = worked.last_chunk_step(last)
    st.subheader(step.title)
    st.caption("Priced as the lab's runs price it, in the sidebar's cost mode (the steps above "
               "use the source article's simple rule).")
    st.markdown(step.sentence, unsafe_allow_html=True)
    runs.worked_figure.draw(f"worked_{step.id}", step.picture, step.unit, look)
    widgets.table(widgets.steps_frame(step.steps).set_index("step"))

st.subheader("Where the source article rounds or slips")
notes = worked.slips(example)
if notes:
    st.markdown("\n".join(f"- **{title}**: {note}" for title, note in notes))
else:
    st.caption("The source article's own roundings and slips are pointed out at its inputs (the "
               f"defaults: the 8B model, the textbook GPU, {TEXTBOOK.decodes} decodes, a "
               f"{TEXTBOOK.prompt:,}-token prompt, budget {TEXTBOOK.budget:,}).")

rows = widgets.steps_frame(example.steps)
rows.index = range(1, len(rows) + 1)
cols = st.columns(2, width=260)
cols[0].download_button("CSV", rows.to_csv(index_label="#"), file_name="worked-example.csv",
                        mime="text/csv", on_click="ignore", icon=":material/download:")
cols[1].download_button("JSON", json.dumps(example.to_json(), indent=1),
                        file_name="worked-example.json", mime="application/json",
                        on_click="ignore", icon=":material/download:")
