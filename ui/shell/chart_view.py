"""A chart in the page, drawn by Vega alone: the Vega-Lite spec compiled to Vega on the server
(charts.player.vega_spec, cached per spec), Vega loaded once per page from the app's static files
(the player's bundle; ui/shell/server.py starts it while the page loads), a Vega view built by
ui/shell/front/chart.js with the player's tooltips. Streamlit's own chart element compiles Vega-Lite
in the browser with 1 MB more code (Vega-Lite, Vega-Embed, Arrow), then runs each view again as
its data arrive: on two cores a fresh visit drew its charts well after its text (`python -m
benchmarks.first_render` measures both).

Where no static file can be served (static serving off, or no script folder) the chart falls
back to Streamlit's element, which needs nothing more."""

from __future__ import annotations

import functools

import streamlit as st

from charts.player import asset, script_json, vega_spec, write_vega_bundle
from charts.theme import Look

from .assets import front
from .streamlit_internals import main_script_folder

COMPONENT = "chunked_prefill_lab.chart"
BOX_CLASS = "lab-chart"   # the box each chart is drawn in; it holds the canvas once drawn
STATIC_PREFIX = "app/static"   # where Streamlit serves <folder of the main script>/static/


def vega_bundle_url() -> str | None:
    """The Vega bundle as a static file of the app (written on first use), as a root-relative
    URL; None where static serving is off or no script runs."""
    folder = main_script_folder()
    if folder is None or not st.get_option("server.enableStaticServing"):
        return None
    name = write_vega_bundle(folder / "static").name
    prefix = "/".join(p for p in st.get_option("server.baseUrlPath").split("/") if p)
    return f"{'/' + prefix if prefix else ''}/{STATIC_PREFIX}/{name}"


@functools.cache
def _component():
    return st.components.v2.component(
        COMPONENT, js=asset("tooltip.js") + "\n" + front("chart.js"),
        css=asset("tooltip.css") + front("chart.css"), isolate_styles=False)


def show_chart(spec: dict, look: Look, key: str) -> None:
    """Draw a Vega-Lite spec (with its data inline) in the page, keyed by `key`."""
    bundle = vega_bundle_url()
    if bundle is None:
        st.vega_lite_chart(spec, theme=None, width="content")
        return
    compiled = vega_spec(script_json(spec), look.dark)
    _component()(key=f"chart_{key}", width="content", data={
        "spec": compiled, "bundle": bundle, "theme": "dark" if look.dark else "light",
        "box": BOX_CLASS})
