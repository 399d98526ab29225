"""Chunking is exact: a tiny decoder's prompt in one pass and in chunks, which attention scores each
computes, and how far their outputs differ."""

import pandas as pd
import streamlit as st

from ui.learn import exactness, exactness_words
from ui.shell import controls, presenter, widgets

SEARCH_S = 5.0   # the near-tie search's deadline on the page (the command line's --search-s)

st.header("Chunking is exact")
st.markdown(exactness_words.intro(), unsafe_allow_html=True)
left, middle, right = st.columns(3)
prompt = int(widgets.widget(controls.CONTROLS["exprompt"], left))
chunk = int(widgets.widget(controls.CONTROLS["exchunk"], middle))
seed = int(widgets.widget(controls.CONTROLS["exseed"], right))
result = exactness.compared(prompt, chunk, seed)

with presenter.figure():
    exactness.draw(prompt, chunk, seed, widgets.look())
st.markdown(exactness_words.model_words(result), unsafe_allow_html=True)
st.markdown(exactness_words.finding(result), unsafe_allow_html=True)
widgets.table(pd.DataFrame(exactness_words.table_rows(result)).set_index("precision"))
st.caption(exactness_words.UNITS)
st.markdown(exactness_words.differs_words(result), unsafe_allow_html=True)

st.subheader("Looking for a near tie")
st.markdown(exactness_words.SEARCH_INTRO)
if st.button(f"Search the next random seeds for {SEARCH_S:g} s at most", key="exactness_search",
             icon=":material/search:"):
    st.session_state["exactness_searched"] = (prompt, chunk, seed)
if st.session_state.get("exactness_searched") == (prompt, chunk, seed):
    search = exactness.searched(prompt, chunk, seed, SEARCH_S)
    st.markdown(exactness_words.search_words(search, seed), unsafe_allow_html=True)
