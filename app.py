"""Chunked Prefill Lab: `streamlit run app.py`.

The entrypoint draws what every page shares (the controls in the sidebar, each bound to its URL
key) and routes to the page scripts in pages/<section>/. Only subfolders, never a `.py` directly
in `pages/`: on Streamlit 1.67, while no session has called st.navigation yet, a script directly in
`pages/` is a legacy page, and a deep link to it (e.g. a slide's link to /roofline, the first
request after `make run`) runs it alone, without this frame and its sidebar. The legacy scan does
not look into subfolders, so every deep link runs through here (pinned by a browser test).
"""

from pathlib import Path

import streamlit as st

from ui import widgets

# The favicon ships with the app: a ":material/..." page icon is fetched from Google's font CDN.
st.set_page_config(page_title="Chunked Prefill Lab", layout="wide",
                   page_icon=str(Path(__file__).parent / "static" / "favicon.png"))
widgets.apply_link_corrections()
widgets.sidebar()
widgets.presenter_css()   # after the sidebar: the toggle's value comes from the link on a first run
widgets.readable_css()
page = st.navigation({"Chunked prefill": [
    st.Page("pages/learn/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("pages/learn/side_by_side.py", title="Side by side", icon=":material/view_agenda:"),
    st.Page("pages/learn/worked_example.py", title="Worked example", icon=":material/calculate:"),
    st.Page("pages/learn/roofline.py", title="Roofline", icon=":material/show_chart:"),
], "Under load": [
    st.Page("pages/load/traffic.py", title="Traffic", icon=":material/traffic:"),
    st.Page("pages/load/budget_tradeoff.py", title="Budget trade-off", icon=":material/tune:"),
    st.Page("pages/load/capacity.py", title="Capacity", icon=":material/speed:"),
    st.Page("pages/load/memory.py", title="Memory", icon=":material/memory:"),
], "Check the model": [
    st.Page("pages/check/fidelity.py", title="How close is this to a real GPU?",
            icon=":material/fact_check:"),
]})
widgets.show_link_notes()
page.run()
