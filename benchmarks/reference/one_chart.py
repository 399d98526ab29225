"""The yardstick for benchmarks.first_render: a one-chart Streamlit page (a heading, a sentence and
one Altair line chart of 200 points), served by `streamlit run` as the lab is."""

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

x = np.arange(200)
data = pd.DataFrame({"x": x, "y": np.sin(x / 20)})
st.header("One chart")
st.markdown("A plain Streamlit page with one Altair chart, as a reference for the lab's pages.")
st.altair_chart(alt.Chart(data).mark_line().encode(x="x", y="y"), width="content")
