"""Side by side: the unchunked and chunked lanes on one clock, with every headline metric."""

import streamlit as st

from ui import controls, player, runs, scenario, widgets, words

s = widgets.scenario()
unchunked, chunked = runs.lanes(s)
look = widgets.look()

st.header("Side by side")
st.markdown("Top: the unchunked baseline. Bottom: chunked prefill. Each bar is one iteration, "
            "from its start to its end; its colours split its tokens into **decode** (one per "
            "running request) and **prefill** (the prompt, or a chunk of it). Under each lane, "
            "one tick per token a stream emits: a blank stretch is a stream frozen.")

if chunked.starved_iterations:
    st.warning(f"**The new request starves.** Budget {s.budget:,} ≤ {s.decodes:,} running decodes: "
               f"under {s.policy_label(s.chunked)} the running decodes use the whole budget, so the "
               "prompt gets no chunk "
               f"for {chunked.starved_iterations:,} iterations, until decoders finish and leave. "
               f"Raise the budget above {s.decodes:,} to see chunking work.",
               icon=":material/hourglass_empty:")
for trace, name in ((unchunked, "Unchunked"), (chunked, "Chunked")):
    for note in trace.notes:
        st.info(f"{name} lane: {note}", icon=":material/info:")

other = runs.comparison(s)
if other:
    traces = runs.try_lanes(other)
    if isinstance(traces, str):
        st.warning(f"**No {other.mode} lanes to compare:** {traces}")
        other = None

base = runs.lane_cards(s, s.unchunked)
for policy, title in ((s.unchunked, "Unchunked"), (s.chunked, "Chunked")):
    st.subheader(f"{title}: {s.policy_label(policy)}")
    cards = runs.lane_cards(s, policy)
    if other:
        st.caption(f"**{s.mode}** mode, as drawn below")
    for col, card, ref in zip(st.columns(len(cards)), cards, base):
        if policy == s.chunked and card.label != "Iterations":
            delta = words.card_delta(card, ref, ratio=False)
            col.metric(card.label, card.value, help=card.help, border=True, delta_color="inverse",
                       delta=delta and f"{delta} vs unchunked")
        else:
            col.metric(card.label, card.value, help=card.help, border=True)
    if other:
        st.caption(f"**{other.mode}** mode, the same iterations (each card's **?** says how "
                   f"they are priced); under each number: {other.mode} − {s.mode}")
        for col, card, ref in zip(st.columns(len(cards)), runs.lane_cards(other, policy), cards):
            col.metric(card.label, card.value, delta=words.card_delta(card, ref),
                       delta_color="off", help=card.help, border=True)
if other:
    st.page_link("pages/check/fidelity.py", icon=":material/fact_check:",
                 label="Why the two modes differ, factor by factor: How close is this to a real GPU?")

left, right = st.columns(2, width=700)
window = widgets.widget(controls.WINDOW, left)
pace = widgets.widget(controls.PACE, right)
player.player(s, look, window, pace, "side-by-side")

with st.expander("How to read it, and how each number is computed"):
    st.markdown(
        f"- **Iteration time**, {s.mode} mode: {s.cost_rule}. Hover a bar for its "
        "compute time (FLOPs / peak), memory time (bytes / bandwidth) and which one bounds it.\n"
        "- **A token** is emitted at the end of the iteration that produced it. A decoder's gap is "
        "the time between two of its tokens: one iteration if it is in every iteration, longer "
        "if an iteration leaves it out (a prefill-only iteration) or is long.\n"
        "- **Bar height** is the share of the iteration's tokens; its width is its duration.\n"
        "- The running decoders each have "
        f"{scenario.DECODE_OUTPUT} tokens still to emit, the new request emits "
        f"{scenario.PROMPT_OUTPUT}; max running requests = decodes + 1, so only the token budget "
        "and KV memory limit the batch.\n"
        "- Hover a metric's **?** for its formula with this run's numbers.")
