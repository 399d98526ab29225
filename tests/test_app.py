"""The app through Streamlit's AppTest: every page at the defaults, at extreme settings and from a
link; no exceptions, and the right numbers on screen."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ["app_pages/home.py", "app_pages/side_by_side.py", "app_pages/worked_example.py",
         "app_pages/roofline.py"]
TIMEOUT = 60   # the first run imports Streamlit, Altair and vl-convert


def open_app(page=None, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({k: v if isinstance(v, list) else str(v) for k, v in query.items()})
    at.run()
    if page:
        at.switch_page(page).run()
    return at


def shown(at: AppTest) -> str:
    """All the text a page shows, in one string."""
    parts = [h.value for h in (*at.title, *at.header, *at.subheader)]
    parts += [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [f"{m.label}: {m.value}" for m in at.metric]
    parts += [w.value for w in at.warning] + [e.value for e in at.error]
    parts += [s.value for s in at.success] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def assert_clean(at: AppTest):
    assert not at.exception, [e.value for e in at.exception]


def metrics(at: AppTest) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric]


# --- every page at the defaults ------------------------------------------------------------
@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_clean_at_the_defaults(page):
    at = open_app(page)
    assert_clean(at)
    assert not at.error


def test_home_shows_the_seeds_headline_numbers():
    at = open_app()
    assert metrics(at) == [("New request TTFT (unchunked)", "327.7 ms"),
                           ("New request TTFT (chunked)", "368.6 ms"),
                           ("Largest decoder gap (unchunked)", "333 ms"),
                           ("Largest decoder gap (chunked)", "23.04 ms")]
    assert "576 − 64 = **512 prompt tokens**" in shown(at)
    assert len(at.get("iframe")) == 1          # the player


def test_side_by_side_cards_at_the_defaults():
    at = open_app("app_pages/side_by_side.py")
    assert metrics(at) == [
        ("New request TTFT", "327.7 ms"), ("Largest decoder gap", "333 ms"),
        ("p99 inter-token latency", "5.333 ms"), ("Iterations", "257"),
        ("New request TTFT", "368.6 ms"), ("Largest decoder gap", "23.04 ms"),
        ("p99 inter-token latency", "23.04 ms"), ("Iterations", "256")]
    assert not at.warning                       # no starvation, no link notes
    assert at.number_input(key="pace").value == 100.0


def test_worked_example_at_the_defaults_shows_the_seed_and_its_slips():
    at = open_app("app_pages/worked_example.py")
    table = at.table[0].value
    results = dict(zip(table["step"], table["result"]))
    assert results["Whole prompt in one iteration"] == "327.7 ms"
    assert results["budget 576: TTFT"] == "368.6 ms"
    assert results["budget 576: TTFT increase"] == "12.5%"
    assert results["budget 2,048: one iteration"] == "81.92 ms"
    text = shown(at)
    assert "Where seed 001 rounds or slips" in text
    assert "2,112" in text and "2.68 ms" in text and "12.5%" in text


def test_roofline_at_the_defaults_finds_the_budget_and_the_engines_defaults():
    at = open_app("app_pages/roofline.py")
    text = shown(at)
    assert "**625 tokens**" in text                     # 625 x 16 GFLOP / 400 TFLOP/s = 25 ms
    assert "**8,192**" in text                          # vLLM serve and SGLang on an 80 GB GPU
    assert "133.3 FLOP/B" in text
    bounds = list(at.table[0].value["bound"])
    assert bounds == ["memory", "compute", "compute", "compute"]


def test_changing_a_control_updates_the_numbers():
    at = open_app("app_pages/side_by_side.py")
    at.number_input(key="budget").set_value(2048).run()
    assert_clean(at)
    assert ("Largest decoder gap", "81.92 ms") in metrics(at)   # seed 001's 2,048 budget, exact


# --- extreme settings ----------------------------------------------------------------------
def test_prompt_that_does_not_fit_in_kv_is_a_message_not_a_traceback():
    at = open_app("app_pages/side_by_side.py", prompt=1_000_000, decodes=1024)
    assert_clean(at)
    assert at.error and "KV" in at.error[0].value and "fit" in at.error[0].value


@pytest.mark.parametrize("page", PAGES)
def test_extreme_prompt_and_decoders_on_a_gpu_where_they_fit(page):
    at = open_app(page, gpu="mi300x", model="qwen2.5-7b", prompt=1_000_000, decodes=1024,
                  context=100)
    assert_clean(at)
    assert not at.error
    if page.endswith("side_by_side.py"):
        text = shown(at)
        assert "The new request starves" in text      # budget 576 <= 1,024 decodes
        assert "starvation:" in text                  # the engine's note
        assert "iterations drawn as" in text          # the thinned timeline says so


def test_impossible_custom_model_is_a_message():
    at = open_app(None, model="custom", heads=30, kvheads=8)
    assert_clean(at)
    assert "multiple of KV heads" in at.error[0].value


# --- from a link ---------------------------------------------------------------------------
def test_link_restores_the_controls_on_every_page():
    query = dict(prompt=4096, budget=1024, decodes=32, gpu="h100-sxm", mode="roofline",
                 chunked="vllm-v1", unchunked="orca", presenter="true")
    for page in PAGES:
        at = open_app(page, **query)
        assert_clean(at)
        assert at.number_input(key="prompt").value == 4096
        assert at.number_input(key="budget").value == 1024
        assert at.number_input(key="decodes").value == 32
        assert at.selectbox(key="gpu").value == "h100-sxm"
        assert at.selectbox(key="mode").value == "roofline"
        assert at.selectbox(key="chunked").value == "vllm-v1"
        assert at.selectbox(key="unchunked").value == "orca"
        assert at.toggle(key="presenter").value is True


def test_page_controls_come_from_the_link_too():
    at = open_app("app_pages/roofline.py", tpot=50)
    assert at.number_input(key="tpot").value == 50.0
    assert "**1,250 tokens**" in shown(at)              # 1,250 x 16 GFLOP / 400 TFLOP/s = 50 ms
    at = open_app("app_pages/worked_example.py", budget2=1088)
    assert at.number_input(key="budget2").value == 1088


def test_custom_gpu_from_a_link():
    at = open_app("app_pages/side_by_side.py", gpu="custom", peak=800, bw=3, mem=80)
    assert_clean(at)
    assert at.number_input(key="peak").value == 800.0
    assert ("New request TTFT", "163.8 ms") in metrics(at)   # 8,192 x 16 GFLOP / 800 TFLOP/s


def test_out_of_range_link_values_get_a_note_and_the_nearest_value():
    at = open_app("app_pages/side_by_side.py", budget=0, decodes=99999, gpu="h100", mode="fast")
    assert_clean(at)
    assert at.number_input(key="budget").value == 1
    assert at.number_input(key="decodes").value == 4096
    assert at.selectbox(key="gpu").value == "illustrative"
    assert at.selectbox(key="mode").value == "simple"
    note = at.warning[0].value
    for words in ("`budget=0`", "minimum 1", "`decodes=99999`", "maximum 4,096", "`gpu=h100`",
                  "`mode=fast`"):
        assert words in note


def test_link_notes_can_be_dismissed():
    at = open_app(None, prompt="abc")
    assert "`prompt=abc`" in at.warning[0].value
    at.button(key="dismiss_link_notes").click().run()
    assert_clean(at)
    assert not at.warning
    assert at.number_input(key="prompt").value == 8192


def test_a_run_past_the_iteration_cap_is_a_message():
    # 2,000,000 prompt tokens at 1 token per iteration once the decoders are done
    at = open_app("app_pages/side_by_side.py", gpu="mi300x", model="qwen2.5-7b", prompt=2_000_000,
                  decodes=8, context=1, budget=1)
    assert_clean(at)
    assert "more than 50,000 iterations" in at.error[0].value


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_in_every_cost_mode(page):
    for mode in ("roofline", "calibrated"):
        at = open_app(page, mode=mode, gpu="h100-sxm", model="llama-3.1-8b")
        assert_clean(at)
        assert not at.error
