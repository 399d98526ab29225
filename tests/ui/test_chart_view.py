"""The charts in the page (ui/shell/chart_view.py): compiled to Vega on the server and sent with the
address of the Vega bundle they are drawn with; Streamlit's own chart element where static
serving is off (no bundle to load)."""

import json
from pathlib import Path

from streamlit import config

from charts.player import vega_bundle_name
from harness.browser import CHARTS
from tests.support.apptest import charts, open_app
from ui.shell.chart_view import BOX_CLASS, COMPONENT

ROOT = Path(__file__).resolve().parents[2]
ROOFLINE = "pages/learn/roofline.py"


def test_a_chart_goes_out_compiled_to_vega_with_its_data_and_the_bundle_to_draw_it():
    at = open_app(ROOFLINE)
    sent = [e.proto for e in at.get("bidi_component") if e.proto.component_name == COMPONENT]
    assert [p.id.split("-", 2)[2] for p in sent] == ["chart_roofline", "chart_budget-curve"]
    for spec in charts(at):
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega/")   # not Vega-Lite
        named = [d for d in spec["data"] if "values" in d]
        assert named and all(d["values"] for d in named)   # the data travel with the spec
        assert spec["background"] == "transparent"
    data = json.loads(sent[0].json)
    assert data["bundle"] == f"/app/static/{vega_bundle_name()}"
    assert (ROOT / "static" / vega_bundle_name()).exists()
    assert data["box"] == BOX_CLASS and data["theme"] == "light"
    assert f".{BOX_CLASS}" in CHARTS.split(", ")   # what the browser tests and benchmarks wait on


def test_without_static_serving_the_chart_is_streamlits_own():
    before = config.get_option("server.enableStaticServing")
    config.set_option("server.enableStaticServing", False)
    try:
        at = open_app(ROOFLINE)
    finally:
        config.set_option("server.enableStaticServing", before)
    assert charts(at) == []
    assert len(at.get("vega_lite_chart")) == 2
