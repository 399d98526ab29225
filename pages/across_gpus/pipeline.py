"""Pipeline: the model's layers split over stages, the sidebar's scenario run through them
unchunked, with fixed chunks and with dynamic chunks on one time axis, each stage's bubbles
shaded and summed; and the same GPUs as one tensor-parallel group against tensor × pipeline
parallelism."""

import pandas as pd
import streamlit as st

from sim.units import fmt_counted
from ui.across_gpus import pipeline as page
from ui.across_gpus import pipeline_words as words
from ui.shell import presenter, widgets
from ui.shell.controls import CONTROLS
from ui.shell.glossary import first, term

s = widgets.scenario()
look = widgets.look()

st.header("Pipeline")
st.markdown(
    f"A model too large for one GPU can be split two ways: every matrix across GPUs "
    f"({first('tp')}, the sidebar's tp), or its layers in order over GPUs: "
    f"**{term('pipeline_parallelism')}**. Each GPU group then holds a {term('stage')} of the "
    f"layers, and each iteration's batch flows from stage to stage as a "
    f"{term('micro_batch')}, while the next micro-batch starts behind it, up to one per stage, "
    f"each planned by its own {term('virtual_engine')}. A stage that waits for its next "
    f"micro-batch idles: a {term('bubble')}. Micro-batches of uneven times make bubbles, and a "
    f"long prompt in one pass makes the most uneven ones. Here the sidebar's scenario, "
    f"{s.decodes:,} streams and one {s.prompt:,}-token prompt, runs through the stages three "
    f"ways: unchunked (**{s.policy_label(s.unchunked)}**), with fixed chunks "
    f"(**{s.policy_label(s.chunked)}**, budget {s.budget:,}), and with "
    f"{term('dynamic_chunking', 'dynamic chunks')}, each sized so its time stays level as the "
    f"prompt's prefix grows. The {first('kv')} cache is split with the layers.",
    unsafe_allow_html=True)
with st.container(border=True):
    cols = st.columns(2)
    pp, link = (widgets.widget(CONTROLS[k], c) for k, c in zip(("pp", "pplink"), cols))
setup = page.Setup(s, pp, link, CONTROLS["chunking"].default)
runs = page.schedules(setup)
schedule = runs[words.FIXED].schedule
stages_words = (f"{pp} stages of {'/'.join(map(str, schedule.layers))} layers"
                if pp > 1 else "one stage")
st.caption(f"{s.model.name} on {s.gpu.name}, {s.mode} cost model: {stages_words}, each on "
           f"{fmt_counted(s.tp, 'GPU')} ({s.tp * pp} in all)"
           + (f", activations sent over {schedule.link.name}" if schedule.link else "")
           + f". The streams are dealt to the {fmt_counted(pp, 'virtual engine')} in turn.")

st.subheader("Every stage on one time axis")
with presenter.figure():
    page.draw_stages(setup, runs, look)
st.caption(
    "Each row is one stage of one schedule: a bar per micro-batch from its start to its end on "
    "that stage, the send to the next stage included (blue decode only, grey decode + prefill, "
    "orange prefill only); the shaded gaps between them are the stage idle, its bubbles (hover "
    "one for the schedule's bubble worked out). Play replays the run, the teal line its clock: "
    "what has not begun by then is faint. Drag sideways to pan, scroll to zoom; every row "
    "follows. Micro-batches of one kind closer than a pixel are drawn as one bar, as opaque as "
    "they keep the stage busy over it (a pale bar: the stage idles between them, gaps too short "
    "to draw; hover for its idle time); the sums count every gap.")
stage_schedules = {name: r.schedule for name, r in runs.items()}
bubbles = {name: one.figures for name, one in stage_schedules.items()}
said = [words.verdict(bubbles, words.same_micro_batches(stage_schedules))]
if pp > 1:
    said += [words.arithmetic_line(name, b) for name, b in bubbles.items()]
    said += [words.unevenness(name, r.schedule) for name, r in runs.items()]
    said.append(words.pace_words(schedule, setup.first_stage().overhead_s > 0))
said.append(words.dynamic_words(s.policy_label(s.chunked), s.chunked, pp,
                                setup.dynamic_fitted()))
st.markdown("\n".join(f"- {x}" for x in said if x), unsafe_allow_html=True)

gpus = s.tp * pp
st.subheader(f"The same {gpus} GPUs: TP{gpus} against TP{s.tp} × PP{pp}")
chunking = widgets.widget(CONTROLS["chunking"], width=360)
setup = page.Setup(s, pp, link, chunking)
compared = page.side_by_side(setup)
if isinstance(compared, str):
    st.info(f"**No tensor-parallel run to compare:** {compared}.", icon=":material/info:")
else:
    st.markdown(f"The sidebar's chunked policy ({s.policy_label(s.chunked)}, "
                f"{chunking} chunks) with every layer split "
                f"over all {gpus} GPUs (TP{gpus}), and with {pp} stages of "
                f"{fmt_counted(s.tp, 'GPU')} each (TP{s.tp} × PP{pp}), and what each gives the new "
                f"prompt's {first('ttft')} and the streams' {first('tbt')}.",
                unsafe_allow_html=True)
    widgets.table(pd.DataFrame(words.setup_rows(compared)).set_index("setup"))
    st.markdown(words.setups_verdict(*compared))
st.markdown(words.links_words(s.gpu, schedule.link, s.tp, pp,
                              tensor_ran=not isinstance(compared, str)))
