"""Every choice a reader is offered and every table header a reader sees is a name in words, not
an identifier: the pickers show "H100 SXM" and "Poisson arrivals" while the link keeps `h100-sxm`
and `poisson`; the tables, the charts' numbers tables too, have headers in words."""

import re

import pytest

from sim.cost.iteration import MODES
from sim.presets.hardware import GPUS
from sim.presets.models import MODELS
from sim.serving.policies import POLICIES
from sim.serving.workloads import LENGTHS
from sim.studies.capacity import SLO_PRESETS
from sim.studies.reproduce import SCENARIOS
from tests.support.apptest import ALL_PAGES, assert_clean, open_app, tables
from ui.shell.controls import CONTROLS

# the keys links spell, which a reader must never be shown as a name
KEYS = {*GPUS, *MODELS, *POLICIES, *MODES, *LENGTHS, *SLO_PRESETS, *SCENARIOS,
        *(option for c in CONTROLS.values() for option in c.options)}
# kebab-case or snake_case, a placeholder, or a row number: how code names things
IDENTIFIER = re.compile(r"[a-z0-9]+([-_][a-z0-9]+)+|\w*_\w*|None|nan|NaN|<NA>|row\d+")


def identifiers(names) -> list[str]:
    """The names among `names` that are identifiers, not words."""
    return [n for n in map(str, names) if n in KEYS or IDENTIFIER.fullmatch(n.strip())]


def test_the_check_tells_identifiers_from_names():
    assert identifiers(["h100-sxm", "sharegpt-trace", "prev_ms", "None", "row0", "simple",
                        "unchunked_iterations"]) == ["h100-sxm", "sharegpt-trace", "prev_ms",
                                                     "None", "row0", "simple",
                                                     "unchunked_iterations"]
    assert identifiers(["H100 SXM", "Poisson arrivals", "gap before (ms)", "Llama-3.1-8B",
                        "P99 TBT (s)", "Sarathi-Serve OSDI'24 (stall-free)", "vLLM V1 0.33"]) == []


def offered(at) -> list[str]:
    """Every option of every picker on the page, as the page shows it."""
    return [option for kind in ("selectbox", "multiselect", "radio")
            for widget in at.get(kind) for option in widget.options]


def headers(at) -> list[str]:
    """Every header of every table on the page: the lab's tables (their first column's head too)
    and the sortable grids, the charts' numbers tables among them."""
    heads = [h for frame in tables(at) for h in (frame.index.name or "", *frame.columns) if h]
    for grid in at.dataframe:
        heads += [str(c) for c in grid.value.columns]
    return heads


def with_every_table_shown(at):
    """The page with every table-on-request toggle on (the charts' numbers, the measured points)."""
    for toggle in at.toggle:
        if toggle.key and (toggle.key.startswith("numbers_") or toggle.key == "fidelity_points"):
            toggle.set_value(True)
    return at.run()


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_choice_and_table_header_is_a_name(page):
    at = with_every_table_shown(open_app(page))
    assert_clean(at)
    assert identifiers(offered(at)) == []
    assert identifiers(headers(at)) == []
    assert not [c.value for c in at.caption if IDENTIFIER.fullmatch(c.value.strip("`* "))]


@pytest.mark.parametrize("page", ["pages/under_load/traffic.py", "pages/advanced/capacity.py",
                                  "pages/advanced/memory.py"])
def test_the_traffic_pickers_name_every_option(page):
    """The workload's kinds and lengths, the SLO presets and the policies, each offered by name."""
    at = with_every_table_shown(open_app(page, workload="poisson", lengths="sharegpt-trace"))
    assert_clean(at)
    assert identifiers(offered(at)) == []
    assert identifiers(headers(at)) == []


def test_the_fidelity_tables_name_their_rows():
    """The paper's scenarios and the cost modes, row by row, in words."""
    at = open_app("pages/advanced/fidelity.py")
    rows = [label for frame in tables(at) for label in frame.index]
    assert "Yi-34B, P99 TBT ≤ 0.2 s, vs Orca" in rows and "Calibrated to kernels" in rows
    assert identifiers(rows) == []


def test_a_chart_table_in_words_leaves_the_layout_out_and_shows_no_none():
    at = with_every_table_shown(open_app("pages/learn/side_by_side.py"))
    titles = [c.value for c in at.caption if c.value.startswith("**")]
    assert "**Unchunked lane: the streams' tokens**" in titles
    assert not [t for t in titles if "heading" in t]
    for grid in at.dataframe:
        frame = grid.value
        assert not frame.isna().any().any() and "None" not in frame.astype(str).to_numpy()
        assert not {"row0", "row1", "band"} & set(frame.columns)


def test_a_choice_shown_by_name_keeps_its_key_in_the_link():
    at = open_app("pages/learn/side_by_side.py", gpu="h100-sxm", chunked="vllm-v1")
    gpu = at.selectbox(key="gpu")
    assert gpu.value == "h100-sxm" and "H100 SXM" in gpu.options
    at.selectbox(key="model").set_value("llama-3.1-8b").run()
    assert_clean(at)
    assert at.query_params["gpu"] == ["h100-sxm"] or at.query_params["gpu"] == "h100-sxm"
    assert at.query_params["model"] in ("llama-3.1-8b", ["llama-3.1-8b"])
    at.selectbox(key="gpu").set_value("illustrative").run()     # the default leaves the link
    assert "gpu" not in at.query_params


def test_the_capacity_numbers_name_their_engines():
    """Capacity's metrics, once found, are labelled by engine ("Sarathi-Serve capacity"), never by
    a policy's key. (Settings no other test uses: a found capacity is kept for its settings, and
    another test opens the page expecting none yet.)"""
    at = open_app("pages/advanced/capacity.py", requests=36, lengths="fixed", plen=1024, olen=32,
                  gpu="a100-80gb", model="mistral-7b")
    at.button(key="find_capacity").click().run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert labels and not [label for label in labels if set(label.split()) & KEYS]


def test_the_fidelity_error_table_names_its_sets_of_points():
    at = open_app("pages/advanced/fidelity.py")
    sets = tables(at)[0]["points of"]
    assert identifiers(sets) == [] and "held out, TP = 2" in set(sets)
