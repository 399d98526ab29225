"""Side by side: the unchunked and chunked lanes on one clock, then each lane's numbers, the stall
first, with the sentence that says what chunking costs beside every number it makes worse. The
lanes are fitted to the page (ui/shell/presenter.py): beside each other where it is wide enough, both on
the first screen, how to read them just above and what each lane is just below. On a projector
the four key numbers and the lanes come first, fitted to the screen, the words under them."""

import streamlit as st

from sim.cost.overhead import MEASURED_CPU_S
from sim.studies.stalls import STALL_S, STALL_SOURCE
from sim.units import fmt_seconds
from ui.learn import player, runs, words
from ui.shell import controls, presenter, scenario, widgets
from ui.shell.glossary import first, term
from ui.under_load import overhead

s = widgets.scenario()
unchunked, chunked = runs.lanes(s)
look = widgets.look()
base = runs.lane_cards(s, s.unchunked)

if look.presenter:   # the numbers and the lanes first; the words and the time axis's choice after
    title, numbers = st.columns([1, 4], vertical_alignment="center")
    title.header("Side by side")
    with numbers:
        runs.key_numbers(base, runs.lane_cards(s, s.chunked), key="key-numbers")
    stage, words_below = st.container(), st.container()
    axis_below = words_below
else:   # how to read it and the player fitted to the page (both lanes on the first screen), then
    # the words and the time axis's choice
    st.header("Side by side")
    stage, words_below, axis_below = st.container(), st.container(), st.container()

beside = presenter.lanes_beside() and not look.presenter
first_side, second_side = ("Left", "Right") if beside else ("Top", "Bottom")
first_side = f"Above, {first_side.lower()}" if not look.presenter else first_side
with words_below:
    st.markdown(
        f"{first_side}: the unchunked baseline, {s.policy_label(s.unchunked)}. {second_side}: "
        f"chunked prefill, {s.policy_label(s.chunked)}. Each bar is one {term('iteration')}; its colours split its "
        f"tokens into {term('decode')} (one per running stream) and {term('prefill')} (the prompt, "
        "or a chunk of it). Under the bars every stream is a row and every token a tick: a blank "
        f"stretch is a stream waiting, and a {term('stall')} once it lasts over "
        f"{fmt_seconds(STALL_S)}. Under each lane: the longest freeze, how many streams froze "
        f"and the new request's {first('ttft')}.", unsafe_allow_html=True)
    if chunked.starved_iterations:
        st.warning(f"**The new request starves.** Budget {s.budget:,} ≤ {s.decodes:,} running "
                   f"streams: under {s.policy_label(s.chunked)} the running streams use the whole "
                   "budget, so the prompt gets no chunk for "
                   f"{chunked.starved_iterations:,} iterations, until streams finish and leave. "
                   f"Raise the budget above {s.decodes:,} to see chunking work.",
                   icon=":material/hourglass_empty:")
    for trace, name in ((unchunked, "Unchunked"), (chunked, "Chunked")):
        for note in trace.notes:
            st.info(f"{name} lane: {note}", icon=":material/info:")
with axis_below:
    window = widgets.widget(controls.WINDOW, width=340)
with stage:
    fitted = player.player(s, look, window, "side-by-side", window_control=True, stage=True)
if not look.presenter:   # on a projector setup watches the room (ui/shell/presenter.py)
    presenter.watch_room(fitted.keeps)

other = runs.comparison(s)
if other:
    traces = runs.try_lanes(other)
    if isinstance(traces, str):
        st.warning(f"**No {other.mode} lanes to compare:** {traces}")
        other = None

notes = words.trade_notes(unchunked, chunked, base, runs.lane_cards(s, s.chunked),
                         s.cost_model())
for policy, title in ((s.unchunked, "Unchunked"), (s.chunked, "Chunked")):
    st.subheader(f"{title}: {s.policy_label(policy)}")
    cards = runs.lane_cards(s, policy)
    if other:
        st.caption(f"**{s.mode}** mode, as drawn above")
    if policy == s.chunked:
        st.caption("Under each number: the change from the unchunked lane, green where chunking "
                   "helps, red where it costs, with why.")
    for col, card, ref in zip(st.columns(len(cards)), cards, base):
        if policy == s.chunked:
            delta = words.card_delta(card, ref, ratio=False)
            col.metric(card.label, card.value, help=card.help, border=True, delta_color="inverse",
                       delta=delta)
            if card.label in notes:
                col.caption(notes[card.label])
        else:
            col.metric(card.label, card.value, help=card.help, border=True)
    if other:
        st.caption(f"**{other.mode}** mode, the same iterations (each card's **?** says how "
                   f"they are priced); under each number: {other.mode} − {s.mode}")
        for col, card, ref in zip(st.columns(len(cards)), runs.lane_cards(other, policy), cards):
            col.metric(card.label, card.value, delta=words.card_delta(card, ref),
                       delta_color="off", help=card.help, border=True)
if other:
    st.page_link("pages/advanced/fidelity.py", icon=":material/fact_check:",
                 label="Why the two modes differ, factor by factor: How close is this to a real GPU?")
strip_slot = st.container()   # filled last: it may wait for a button

with st.expander("How each number is computed"):
    st.markdown(
        f"- **Iteration time**, {s.mode} mode, from its {first('flop')} and bytes: "
        f"{s.cost_rule}. Hover a bar for its compute time (FLOPs / peak), memory time (bytes / "
        "bandwidth) and which one bounds it.\n"
        "- **CPU overhead**: the time the engine spends between iterations (scheduling, inputs, "
        f"sampling), 0 in the ideal modes and {fmt_seconds(MEASURED_CPU_S)} calibrated. vLLM V0, "
        "Sarathi-Serve and Orca "
        "add it to each iteration; vLLM V1 and SGLang prepare the next iteration while the GPU "
        "runs this one, so it adds only what outlasts the GPU step. A bar's tooltip gives what it "
        "added and its share of the duration; *other* is the rest beyond max(compute, memory).\n"
        "- **A token** is emitted at the end of the iteration that produced it. A stream's gap is "
        "the time between two of its tokens: one iteration if it is in every iteration, longer "
        "if an iteration leaves it out (a prefill-only iteration) or is long.\n"
        f"- **A freeze** is a gap longer than {fmt_seconds(STALL_S)} ({STALL_SOURCE}). "
        f"*{words.FROZEN}* counts the running streams with one; *{words.FROZEN_TIME}* sums "
        "those gaps per stream and takes the mean.\n"
        f"- **{words.STEADY}**, the steady inter-token latency: 99% of all gaps between two "
        f"tokens are this long or shorter (the {term('percentile', 'p99')}). A freeze that hits "
        "each stream once is one gap among hundreds, so the p99 leaves it out: that is why the "
        "freeze leads each lane.\n"
        "- **Bar height** is the share of the iteration's tokens; its width is its duration.\n"
        "- The running streams each have "
        f"{scenario.DECODE_OUTPUT} tokens still to emit, the new request emits "
        f"{scenario.PROMPT_OUTPUT}; max running requests = streams + 1, so only the token budget "
        "and the memory for the key-value cache limit the batch.\n"
        "- Hover a metric's **?** for its formula with this run's numbers.",
        unsafe_allow_html=True)

with strip_slot:
    overhead.side_by_side(s, unchunked, chunked)
