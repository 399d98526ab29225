"""Worked example: seed 001's arithmetic, step by step, live from the controls."""

import json

import streamlit as st

from sim.errors import InputError
from ui import controls, runs, widgets

s = widgets.scenario()

st.header("Worked example")
st.markdown(
    "Seed 001's arithmetic, in its order: every step's formula, the numbers put in, and the "
    "result with its unit. Its inputs come from the sidebar: the model's parameters and KV "
    "layout, the GPU's peak and bandwidth, the decodes, the prompt, and two budgets (yours and "
    "the one below). It always uses the seed's *simple* arithmetic: FLOPs = 2 × params × tokens, "
    "and an iteration costs max(FLOPs / peak, weight bytes / bandwidth) on one GPU, whatever the "
    "cost mode and the tensor-parallel GPUs in the sidebar.")
second = widgets.widget(controls.BUDGET2, width=340)

try:
    example = runs.worked(s, int(second))
except InputError as e:
    st.error(f"**Can't work this example:** {e}")
    st.stop()

rows = widgets.steps_frame(example.steps)
rows.index = range(1, len(rows) + 1)
st.table(rows)

notes = [(step.title, step.seed_note) for step in example.steps if step.seed_note]
if notes:
    st.subheader("Where seed 001 rounds or slips")
    st.markdown("\n".join(f"- **{title}**: {note}" for title, note in notes))
else:
    st.caption("Seed 001's own roundings and slips are pointed out at its inputs (the defaults: "
               "dense 8B, the illustrative GPU, 64 decodes, an 8,192-token prompt).")

cols = st.columns(2, width=260)
cols[0].download_button("CSV", rows.to_csv(index_label="#"), file_name="worked-example.csv",
                        mime="text/csv", on_click="ignore", icon=":material/download:")
cols[1].download_button("JSON", json.dumps(example.to_json(), indent=1),
                        file_name="worked-example.json", mime="application/json",
                        on_click="ignore", icon=":material/download:")
