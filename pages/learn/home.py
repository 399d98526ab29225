"""Home: the two lanes playing, then the story in six chapters (ui/story.py), each with numbers
from the current scenario and a link to the page that goes deeper."""

import streamlit as st

from ui import controls, player, runs, story, widgets, words
from ui.glossary import first

s = widgets.scenario()
unchunked, chunked = runs.lanes(s)
cards_u, cards_c = runs.lane_cards(s, s.unchunked), runs.lane_cards(s, s.chunked)
look = widgets.look()

st.title("Chunked Prefill Lab")
st.markdown(
    f"Why {first('llm')} servers split long prompts into chunks. {s.decodes:,} users are "
    f"reading replies as they stream, a token at a time, when a new {s.prompt:,}-token prompt "
    "arrives. **Press Play.** Top lane: the server reads the whole prompt in one pass and every "
    "stream freezes. Bottom lane: it reads the prompt in chunks and the streams keep ticking, "
    f"while the new prompt's {first('ttft')} grows a little.", unsafe_allow_html=True)
st.caption(f"{s.model.name} on the {s.gpu.name}"
           + (f" × {s.tp} (tensor parallel)" if s.tp > 1 else "")
           + f", {s.mode} cost model. Change any of it in the sidebar.")

player.player(s, look, controls.WINDOW.default, "home-side-by-side", window_control=False)

by_label = [{c.label: c for c in cards} for cards in (cards_u, cards_c)]
for col, (label, lane) in zip(st.columns(4), [(label, lane) for label in (words.GAP, words.TTFT)
                                              for lane in ("unchunked", "chunked")]):
    card = by_label[lane == "chunked"].get(label)
    if card:
        col.metric(f"{label.removeprefix('New request ')} ({lane})", card.value, help=card.help,
                   border=True)

fields = words.story_fields(unchunked, chunked, s.budget, cards_u, cards_c)
for chapter in story.CHAPTERS:
    with st.container(key=f"chapter-{chapter.id}"):
        st.subheader(chapter.title)
        st.markdown(chapter.text.format(**fields), unsafe_allow_html=True)
        if chapter.highlight:
            st.caption(f"In the player above: {chapter.highlight}.")
        for path in chapter.pages:
            page = story.BY_PATH[path]
            st.page_link(path, label=f"{page.title}: {page.what}", icon=page.icon)
