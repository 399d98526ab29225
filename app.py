"""Chunked Prefill Lab: `streamlit run app.py`.

The entrypoint draws what every page shares (the controls in the sidebar, each bound to its URL
key) and routes to the page scripts in app_pages/. Not `pages/`: while no session has called
st.navigation yet, Streamlit treats a `pages/` folder the legacy way and runs a deep-linked page
(e.g. a slide's link to /roofline, the first request after `make run`) alone, without this frame.
"""

import streamlit as st

import app_ui

st.set_page_config(page_title="Chunked Prefill Lab", page_icon=":material/view_timeline:",
                   layout="wide")
app_ui.apply_link_corrections()
app_ui.sidebar()
app_ui.presenter_css()   # after the sidebar: the toggle's value comes from the link on a first run
page = st.navigation({"Chunked prefill": [
    st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("app_pages/side_by_side.py", title="Side by side", icon=":material/view_agenda:"),
    st.Page("app_pages/worked_example.py", title="Worked example", icon=":material/calculate:"),
    st.Page("app_pages/roofline.py", title="Roofline", icon=":material/show_chart:"),
    st.Page("app_pages/fidelity.py", title="How close is this to a real GPU?",
            icon=":material/fact_check:"),
], "Under load": [
    st.Page("app_pages/traffic.py", title="Traffic", icon=":material/traffic:"),
    st.Page("app_pages/budget_tradeoff.py", title="Budget trade-off", icon=":material/tune:"),
    st.Page("app_pages/capacity.py", title="Capacity", icon=":material/speed:"),
    st.Page("app_pages/memory.py", title="Memory", icon=":material/memory:"),
]})
app_ui.show_link_notes()
page.run()
