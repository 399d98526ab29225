"""The Long and short requests page through AppTest: its runs, words and tables at the defaults,
each comparison, its controls from a link and back into it, and its figure's downloads.
Workloads are small: the suite runs on two cores."""

import pytest

from tests.support.apptest import assert_clean, charts, open_app, shown, tables
from ui.shell import controls
from ui.shell.controls import CONTROLS, read_link
from ui.shell.store import TRACES
from ui.shell.story import BY_PATH, CHAPTERS, PAGES
from ui.under_load import workload_box

PAGE = "pages/under_load/long_short.py"
SMALL = dict(requests=60, qps=4)


def test_at_the_defaults_it_compares_vllm_without_and_with_a_threshold_of_256():
    at = open_app(PAGE)
    assert_clean(at)
    text = shown(at)
    assert "vLLM V1: --long-prefill-token-threshold 0 and 256" in text
    assert "the chat requests' p99 time to first token falls from" in text
    assert "The trade:" in text
    percentiles, knobs = tables(at)[:2]
    assert list(percentiles.columns) == ["vLLM V1, budget 576, no threshold",
                                         "vLLM V1, budget 576, threshold 256"]
    assert "chat: HOL wait p99" in percentiles.index and "documents: TTFT p50" in percentiles.index
    # most requests wait behind no other class's prompt: their median wait reads as none
    assert list(percentiles.loc["chat: HOL wait p50"]) == ["none", "none"]
    assert "0 µs" not in percentiles.to_string() and "(none: no such wait)" in text
    assert list(knobs["flag"]) == ["`--long-prefill-token-threshold`", "`--max-num-batched-tokens`",
                                   "`--enable-mixed-chunk`", "`--chunked-prefill-size`"]
    assert list(knobs["run at"]) == ["0 → 256", "576 → 2,048", "off → on", "576 → 2,048"]
    assert len(charts(at)) == 1


@pytest.mark.parametrize("vary,heading", [("mixedchunk", "SGLang: --enable-mixed-chunk off and on"),
                                          ("budget", "vLLM V1: --max-num-batched-tokens 576 and "
                                                     "4,096")])
def test_each_comparison_from_a_link(vary, heading):
    at = open_app(PAGE, vary=vary, budget2=4096, mix="chat+one-long", threshold=512, **SMALL)
    assert_clean(at)
    assert at.selectbox(key="vary").value == vary
    assert at.selectbox(key="mix").value == "chat+one-long"
    assert at.number_input(key="threshold").value == 512
    assert heading in shown(at) and "The long requests' median time to first token" in shown(at)
    assert list(tables(at)[1]["run at"])[0] == "0 → 512"
    for key, value in dict(vary=vary, mix="chat+one-long", threshold="512",
                           budget2="4096").items():
        assert at.query_params[key] in (value, [value])      # the view's link reproduces it


def test_the_pickers_name_their_options_and_the_link_keeps_keys():
    assert CONTROLS["mix"].name("chat+documents") == "Chat + documents (5% long prompts)"
    assert CONTROLS["mix"].name("chat+one-long") == "Chat + one 100,000-token prompt"
    assert set(controls.MIX_NAMES) == set(CONTROLS["mix"].options)
    link = read_link({"mix": "chat+nothing", "threshold": "-1"})
    assert link.values == {"mix": "chat+documents", "threshold": 0}
    assert set(link.notes) == {"mix", "threshold"}


def test_mixed_chunk_is_set_by_the_comparison_not_by_a_link_key():
    """The page runs SGLang with mixed chunk off and then on (`vary=mixedchunk`); no control
    reads a `mixedchunk` key, so a link's is named as such and left out."""
    at = open_app(PAGE, vary="mixedchunk", mixedchunk="on", **SMALL)
    assert_clean(at)
    assert "SGLang: --enable-mixed-chunk off and on" in shown(at)
    assert "“`mixedchunk`” in the link is not a setting of this lab" in at.warning[0].value
    assert "mixedchunk" not in at.query_params          # the link keeps what the view reads


def test_too_few_requests_for_a_long_prompt_is_said():
    at = open_app(PAGE, requests=3)
    assert_clean(at)
    assert "hold one class only" in at.info[0].value


def test_its_runs_together_past_what_a_page_keeps_are_refused_as_on_traffic(monkeypatch):
    """Each of the page's six runs is within a run's limits, their traces together are not
    (the page's limit lowered so a small mix passes it): refused before anything runs, in the
    words the traffic pages use."""
    monkeypatch.setattr(workload_box, "PAGE_TOKENS", 10_000)
    at = open_app(**SMALL)
    kept = len(TRACES)                                  # Home's two lanes
    at.switch_page(PAGE).run()
    assert_clean(at)
    error = at.error[0].value
    assert "the 6 runs' traces would keep" in error and "token times together" in error
    assert "more than the 10,000 a page keeps. Make them shorter: fewer requests." in error
    assert len(TRACES) == kept and not charts(at)


def test_its_figure_has_its_downloads():
    at = open_app(PAGE, **SMALL)
    assert_clean(at)
    labels = " ".join(b.proto.label for b in at.get("download_button"))
    assert "PNG" in labels and "SVG" in labels and "CSV" in labels, labels


def test_home_chapter_six_names_the_page_and_it_follows_traffic():
    chapter = next(c for c in CHAPTERS if c.id == "traffic")
    assert "Long and short requests page" in chapter.text and PAGE in chapter.pages
    assert BY_PATH[PAGE].section == "Under load"
    paths = [p.path for p in PAGES]
    assert paths.index(PAGE) == paths.index("pages/under_load/traffic.py") + 1
