"""Home: the stall, the fix, and the two lanes on the current scenario, in one screen."""

import streamlit as st

from ui import controls, player, runs, widgets, words

s = widgets.scenario()
unchunked, chunked = runs.lanes(s)
cards = {name: {c.label: c for c in runs.lane_cards(s, name)} for name in (s.unchunked, s.chunked)}
look = widgets.look()

st.title("Chunked Prefill Lab")
st.caption(f"{s.decodes:,} requests are streaming tokens (each with {s.context:,} tokens of context) "
           f"when a {s.prompt:,}-token prompt arrives. {s.model.name} on {s.gpu.name}"
           + (f" × {s.tp} (tensor parallel)" if s.tp > 1 else "")
           + f", {s.mode} cost model. Change any of it in the sidebar.")

ttft_u, ttft_c = (cards[p]["New request TTFT"] for p in (s.unchunked, s.chunked))
gap_u, gap_c = (cards[p]["Largest decoder gap"] for p in (s.unchunked, s.chunked))
stall, fix = st.columns(2, gap="large")
with stall:
    st.subheader("The stall")
    st.markdown(words.stall_story(unchunked, gap_u))
with fix:
    st.subheader("The fix")
    st.markdown(words.fix_story(chunked, s.budget, ttft_c, ttft_u, gap_c, gap_u))

columns = st.columns(4)
for col, card, lane in ((columns[0], ttft_u, "unchunked"), (columns[1], ttft_c, "chunked"),
                        (columns[2], gap_u, "unchunked"), (columns[3], gap_c, "chunked")):
    col.metric(f"{card.label} ({lane})", card.value, help=card.help, border=True)

player.player(s, look, controls.WINDOW.default, controls.PACE.default, "home-side-by-side")

st.markdown(
    "An LLM server runs one forward pass (an *iteration*) at a time over every request in its "
    "batch, and each iteration costs max(FLOPs / peak, bytes / bandwidth): a decode step is cheap "
    "and memory-bound, a long prompt is expensive and compute-bound. A running request gets its "
    "next token only when an iteration that includes it ends, so a prompt prefilled in one piece "
    "freezes every stream for as long as it takes. Chunked prefill (Sarathi-Serve) caps each "
    "iteration at a *token budget*: all decodes first, then as much of the prompt as fits. The "
    "stall shrinks to one bounded iteration; the prompt's first token comes a little later, "
    "because its chunks share iterations with the decodes. The budget is the dial between the two.")

links = st.columns(3)
links[0].page_link("pages/learn/side_by_side.py", label="Side by side: play both lanes, read every metric",
                   icon=":material/view_agenda:")
links[1].page_link("pages/learn/worked_example.py", label="Worked example: the seed's arithmetic, step by step",
                   icon=":material/calculate:")
links[2].page_link("pages/learn/roofline.py", label="Roofline: why decode is memory-bound, and which budget",
                   icon=":material/show_chart:")
