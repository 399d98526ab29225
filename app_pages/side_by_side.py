"""Side by side: the unchunked and chunked lanes on one clock, with every headline metric."""

import streamlit as st

import app_state
import app_ui

s = app_ui.scenario()
unchunked, chunked = app_ui.lanes(s)
look = app_ui.look()

st.header("Side by side")
st.markdown("Top: the unchunked baseline. Bottom: chunked prefill. Each bar is one iteration, "
            "from its start to its end; its colours split its tokens into **decode** (one per "
            "running request) and **prefill** (the prompt, or a chunk of it). Under each lane, "
            "one tick per token a stream emits: a blank stretch is a stream frozen.")

if s.starves:
    st.warning(f"**The new request starves.** Budget {s.budget:,} ≤ {s.decodes:,} running decodes: "
               f"chunk = budget − decodes = {s.chunk:,}, so {s.policy_label(s.chunked)} has no "
               "room for the prompt until decoders finish and leave. Raise the budget above "
               f"{s.decodes:,} to see chunking work.", icon=":material/hourglass_empty:")
for trace, name in ((unchunked, "Unchunked"), (chunked, "Chunked")):
    for note in trace.notes:
        st.info(f"{name} lane: {note}", icon=":material/info:")

other = app_ui.comparison(s)
if other:
    traces = app_ui.try_lanes(other)
    if isinstance(traces, str):
        st.warning(f"**No {other.mode} lanes to compare:** {traces}")
        other = None
    else:
        st.caption(f"Each lane's cards twice: the {s.mode} mode's (as drawn below), then the "
                   f"{other.mode} mode's with the difference. Same iterations, priced "
                   f"{app_state.cost_rule(other.mode, other.tp)}. Why they differ, factor by "
                   "factor: the page *How close is this to a real GPU?*")

base = app_ui.lane_cards(s, s.unchunked)
for policy, title in ((s.unchunked, "Unchunked"), (s.chunked, "Chunked")):
    st.subheader(f"{title}: {s.policy_label(policy)}")
    cards = app_ui.lane_cards(s, policy)
    mode = f" ({s.mode})" if other else ""
    for col, card, ref in zip(st.columns(len(cards)), cards, base):
        if policy == s.chunked and card.label != "Iterations":
            col.metric(card.label + mode, card.value, help=card.help, border=True,
                       delta=app_state.card_delta(card, ref, "unchunked"), delta_color="inverse")
        else:
            col.metric(card.label + mode, card.value, help=card.help, border=True)
    if other:
        for col, card, ref in zip(st.columns(len(cards)), app_ui.lane_cards(other, policy), cards):
            col.metric(f"{card.label} ({other.mode})", card.value, delta_color="off",
                       delta=app_state.card_delta(card, ref, s.mode), help=card.help, border=True)

pace = app_ui.widget(app_state.PACE, width=340)
app_ui.player(s, look, pace, "side-by-side")

with st.expander("How to read it, and how each number is computed"):
    st.markdown(
        f"- **Iteration time**, {s.mode} mode: {s.cost_rule}. Hover a bar for its "
        "compute time (FLOPs / peak), memory time (bytes / bandwidth) and which one bounds it.\n"
        "- **A token** is emitted at the end of the iteration that produced it. A decoder's gap is "
        "the time between two of its tokens: one iteration if it is in every iteration, longer "
        "if an iteration leaves it out (a prefill-only iteration) or is long.\n"
        "- **Bar height** is the share of the iteration's tokens; its width is its duration.\n"
        "- The running decoders each have "
        f"{app_state.DECODE_OUTPUT} tokens still to emit, the new request emits "
        f"{app_state.PROMPT_OUTPUT}; max running requests = decodes + 1, so only the token budget "
        "and KV memory limit the batch.\n"
        "- Hover a metric's **?** for its formula with this run's numbers.")
