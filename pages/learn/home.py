"""Home: the two lanes playing, then the story in seven chapters (ui/shell/story.py), each with numbers
from the current scenario and a link to the page that goes deeper. On a projector the four key
numbers and the lanes come first, fitted to the screen, and the words under them."""

import streamlit as st

from ui.learn import player, runs, words
from ui.shell import story, widgets
from ui.shell.controls import WINDOW

s = widgets.scenario()
unchunked, chunked = runs.lanes(s)
cards_u, cards_c = runs.lane_cards(s, s.unchunked), runs.lane_cards(s, s.chunked)
look = widgets.look()


def intro() -> None:
    st.markdown(words.home_intro(unchunked, chunked, s.cost_model()), unsafe_allow_html=True)
    st.caption(f"{s.model.name} on the {s.gpu.name}"
               + (f" × {s.tp} (tensor parallel)" if s.tp > 1 else "")
               + f", {s.mode} cost model. Change any of it in the sidebar.")


if look.presenter:
    title, numbers = st.columns([1, 4], vertical_alignment="center")
    title.title("Chunked Prefill Lab")
    with numbers:
        runs.key_numbers(cards_u, cards_c, key="key-numbers")
    player.player(s, look, WINDOW.default, "home-side-by-side", window_control=False)
    intro()
else:
    st.title("Chunked Prefill Lab")
    intro()
    player.player(s, look, WINDOW.default, "home-side-by-side", window_control=False)
    runs.key_numbers(cards_u, cards_c, key="key-numbers")

fields = words.story_fields(unchunked, chunked, s.cost_model())
for chapter in story.CHAPTERS:
    with st.container(key=f"chapter-{chapter.id}"):
        st.subheader(chapter.heading_for(fields))
        st.markdown(chapter.text.format(**fields), unsafe_allow_html=True)
        if chapter.highlight:
            st.caption(f"In the player above: {chapter.highlight}.")
        for path in chapter.pages:
            page = story.BY_PATH[path]
            st.page_link(path, label=f"{page.title}: {page.what}", icon=page.icon)
