"""The player page as text: offline, well-formed, carrying the spec and the clock settings."""

import json
import os
import re

import pytest
import vl_convert
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from charts.player import (
    SPEEDS,
    player_html,
    static_bundle_page,
    vega_bundle,
    vega_bundle_name,
    write_vega_bundle,
)
from sim.errors import InputError
from tests.support.charts import seed_chart, tiny_spec

SMALL = dict(decodes=4, decode_output=16, prompt=1024, prompt_output=4)


@pytest.fixture(scope="module")
def chart():
    return seed_chart(**SMALL)


def json_script(html, element_id):
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    assert match, f"no {element_id} script"
    return json.loads(match.group(1))


def test_page_loads_nothing_from_the_network(chart):
    spec, t_max, bounds = chart
    page = player_html(spec, t_max=t_max, boundaries=bounds)
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page)
    assert vega_bundle() in page
    assert "jsdelivr" not in vega_bundle()      # the snippet's module address stays out of it


def test_bundle_can_be_inlined_verbatim():
    # _inline_bundle_tag relies on this: a "</script" inside would end the tag early.
    assert "</script" not in vega_bundle().lower()


def test_config_carries_clock_range_boundaries_rate_and_key(chart):
    spec, t_max, bounds = chart
    page = player_html(spec, t_max=t_max, boundaries=[bounds[2], bounds[0], bounds[2], bounds[1]],
                       ms_per_second=250, clock="t", key="side-by-side")
    cfg = json_script(page, "player-config")
    assert cfg["clock"] == "t"
    assert cfg["tMax"] == t_max
    assert cfg["boundaries"] == bounds[:3]          # sorted, duplicates dropped
    assert cfg["msPerSecond"] == 250
    assert cfg["dark"] is False
    assert cfg["key"] == "side-by-side"
    assert f'max="{t_max!r}"' in page                # the scrub slider spans [0, t_max]
    assert re.search(r'<option value="250" selected>1/4× \(250 ms/s\)</option>', page)


def test_one_speed_list_with_the_starting_rate_selected_even_off_the_presets(chart):
    spec, t_max, _ = chart
    page = player_html(spec, t_max=t_max, ms_per_second=123)
    speeds = [float(v) for v in re.findall(r'<option value="([0-9.]+)"', page)]
    assert speeds == sorted([*SPEEDS, 123.0])
    assert re.findall(r"<option [^>]*selected>([^<]*)<", page) == ["123 ms/s"]
    assert page.count("<select") == 1 and 'type="number"' not in page


def test_the_cue_is_escaped_text(chart):
    spec, t_max, _ = chart
    page = player_html(spec, t_max=t_max, cue="Watch <b>the rows</b> & press Play")
    assert ('<p id="cue" class="cue" data-testid="player-cue">Watch &lt;b&gt;the rows&lt;/b&gt; '
            "&amp; press Play</p>") in page


def test_spec_round_trips_even_with_script_like_text():
    title = "</script><script>alert(1)</script> <!-- x"
    page = player_html(tiny_spec(title=title), t_max=0.3)
    assert json_script(page, "player-spec")["title"]["text"] == title
    assert page.count("</script>") == page.count("<script")
    assert "<!-- x" not in page


def test_the_page_carries_the_chart_compiled_to_vega_with_the_theme(chart):
    """The browser compiles nothing: the page holds a Vega spec (what the Vega-only bundle can
    draw), with Vega's dark theme on a dark page, on the page's own background unless the chart
    sets one."""
    spec, t_max, _ = chart
    vega = json_script(player_html(spec, t_max=t_max), "player-spec")
    assert re.fullmatch(r"https://vega\.github\.io/schema/vega/v\d+\.json", vega["$schema"])
    assert vega["marks"] and "t" in {s["name"] for s in vega["signals"]}
    assert not {"mark", "layer", "vconcat", "hconcat", "encoding", "params"} & vega.keys()
    assert vega["background"] == spec["background"]
    light, dark = (json_script(player_html(tiny_spec(), t_max=0.3, dark=d), "player-spec")
                   for d in (False, True))
    assert light["background"] == dark["background"] == "transparent"
    assert "config" not in light
    assert dark["config"]["axis"]["domainColor"] == "#fff"


def test_a_spec_vega_lite_cannot_compile_is_refused_with_a_message():
    spec = tiny_spec()
    spec["mark"] = "no-such-mark"
    with pytest.raises(InputError, match="Vega-Lite could not compile the chart"):
        player_html(spec, t_max=0.3)


def test_clock_param_compiles_to_a_top_level_vega_signal(chart):
    spec, _, _ = chart
    vega = vl_convert.vegalite_to_vega(spec)
    assert "t" in {s["name"] for s in vega["signals"]}


def test_every_control_has_a_test_id_and_an_accessible_name(chart):
    spec, t_max, bounds = chart
    page = player_html(spec, t_max=t_max, boundaries=bounds)
    for test_id in ("player-play", "player-step-back", "player-step-forward", "player-scrub",
                    "player-clock", "player-speed", "player-cue", "player-chart"):
        tag = re.search(rf'<[a-z]+ [^>]*data-testid="{test_id}"[^>]*>', page)
        assert tag, test_id
    for button in re.findall(r"<button [^>]*>", page):
        assert re.search(r'aria-label="[^"]+"', button), button
    assert re.search(r'<option value="100" selected>', page)      # 100 ms/s by default


def test_dark_and_title(chart):
    spec, t_max, _ = chart
    page = player_html(spec, t_max=t_max, dark=True, title="Stall <vs> chunks")
    assert '<html lang="en" class="dark">' in page
    assert json_script(page, "player-config")["dark"] is True
    assert "<title>Stall &lt;vs&gt; chunks</title>" in page
    assert "Stall <vs>" not in page


def test_a_tour_opens_at_a_moment_plays_on_points_and_leaves_the_keys_to_the_page(chart):
    spec, t_max, _ = chart
    page = player_html(spec, t_max=t_max, start=t_max / 4, play_to=t_max / 2,
                       highlight=("unchunked_rows_view",), keys="page")
    cfg = json_script(page, "player-config")
    assert (cfg["start"], cfg["playTo"]) == (t_max / 4, t_max / 2)
    assert cfg["highlight"] == ["unchunked_rows_view"] and cfg["keys"] == "page"
    plain = json_script(player_html(spec, t_max=t_max), "player-config")
    assert (plain["start"], plain["playTo"], plain["highlight"], plain["keys"]) == (0, None, [], "player")


def test_presenter_and_contrast(chart):
    """On a projector: its classes (larger type, controls on one line), the speeds by their
    share of real time alone, no cue above the chart (the page around says what to watch)."""
    spec, t_max, _ = chart
    page = player_html(spec, t_max=t_max, presenter=True, contrast=True, dark=True, cue="Watch")
    assert '<html lang="en" class="dark presenter contrast">' in page
    assert re.search(r'<option value="100" selected>1/10×</option>', page)
    assert 'data-testid="player-cue"></p>' in page
    normal = player_html(spec, t_max=t_max, cue="Watch")
    assert re.search(r'<option value="100" selected>1/10× \(100 ms/s\)</option>', normal)
    assert 'data-testid="player-cue">Watch</p>' in normal


@pytest.mark.parametrize("kwargs, message", [
    (dict(start=0.4), "start (s)"),
    (dict(start=0.2, play_to=0.1), "play_to (s)"),
    (dict(play_to=0.5), "play_to (s)"),
    (dict(keys="both"), "keys must be one of player, page"),
    (dict(clock="clock"), "no top-level param named 'clock'"),
    (dict(t_max=0), "t_max"),
    (dict(t_max=float("nan")), "t_max"),
    (dict(boundaries=[0.1, 0.5]), "boundaries must lie in [0, t_max = 0.3]"),
    (dict(boundaries=[-0.1]), "boundary"),
    (dict(ms_per_second=0), "ms per second"),
    (dict(height=50), "player height"),
])
def test_bad_arguments_say_what_is_wrong(kwargs, message):
    args = dict(t_max=0.3) | kwargs
    with pytest.raises(InputError, match=re.escape(message)):
        player_html(tiny_spec(), **args)


def test_nan_in_the_spec_is_refused_rather_than_breaking_the_page():
    spec = tiny_spec()
    spec["datasets"] = {"extra": [{"x": float("nan")}]}
    with pytest.raises(InputError, match="NaN"):
        player_html(spec, t_max=0.3)


def test_static_bundle_page_swaps_the_inline_bundle_for_a_script_src():
    page = player_html(tiny_spec(), t_max=0.3)
    static = static_bundle_page(page, "/app/static/vega.js")
    assert '<script src="/app/static/vega.js"></script>' in static
    assert vega_bundle() not in static
    assert len(page) - len(static) > 500_000
    with pytest.raises(InputError, match="player_html"):
        static_bundle_page("<html></html>", "/x.js")


def test_bundle_file_is_written_once_and_replaces_stale_versions(tmp_path):
    stale = tmp_path / "vega-bundle-0000.js"
    stale.write_text("old")
    path = write_vega_bundle(tmp_path)
    assert path.name == vega_bundle_name()
    assert path.read_text(encoding="utf-8") == vega_bundle()
    assert not stale.exists()
    os.utime(path, (1, 1))
    assert write_vega_bundle(tmp_path) == path
    assert path.stat().st_mtime == 1   # not rewritten
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


APP = """
from charts.player import player_html
from tests.support.charts import tiny_spec
from ui.learn.player import show_player
show_player(player_html(tiny_spec(), t_max=0.3), height=300)
"""


@pytest.mark.parametrize("static_serving", [False, True])
def test_show_player_uses_the_static_file_only_when_static_serving_is_on(tmp_path, static_serving):
    script = tmp_path / "app.py"
    script.write_text(APP)
    before = st_config.get_option("server.enableStaticServing")
    st_config.set_option("server.enableStaticServing", static_serving)
    try:
        app = AppTest.from_file(str(script)).run()
    finally:
        st_config.set_option("server.enableStaticServing", before)
    assert not app.exception
    [frame] = app.get("iframe")
    srcdoc = frame.proto.srcdoc
    bundle = tmp_path / "static" / vega_bundle_name()
    if static_serving:
        assert f'<script src="/app/static/{vega_bundle_name()}"></script>' in srcdoc
        assert bundle.read_text(encoding="utf-8") == vega_bundle()
        assert len(srcdoc) < 100_000
    else:
        assert vega_bundle() in srcdoc
        assert not bundle.exists()
