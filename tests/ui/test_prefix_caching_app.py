"""The Prefix caching page through AppTest: its runs, words and table at the defaults (the
sidebar's Sarathi-Serve, which ships caching off: a what-if, said so), an engine that caches, its
controls from a link and back into it, each regime's words, and its figure's downloads.
Workloads are small: the suite runs on two cores."""

from tests.support.apptest import assert_clean, charts, open_app, shown, tables
from ui.shell.controls import read_link
from ui.shell.story import BY_PATH, CHAPTERS, PAGES

PAGE = "pages/under_load/prefix_caching.py"
SMALL = dict(requests=40, qps=4)


def test_at_the_defaults_the_cache_saves_the_shared_prefix_and_says_it_is_a_what_if():
    at = open_app(PAGE)
    assert_clean(at)
    text = shown(at)
    assert "Sarathi-Serve ships prefix caching off" in at.info[0].value
    assert "Sarathi-Serve, caching on (a what-if)" in text
    # 200 requests, each a 2,048-token system prompt and 1,024 tokens of its own: 199 hits
    assert "computed 206,848 prompt tokens instead of 614,400: 407,552 saved" in text
    assert "hit rate 66.3% = 407,552 hit tokens / 614,400 looked up" in text
    assert "⌊min(2,048, 3,071) / 16⌋ × 16 = 2,048 tokens" in text
    assert "Caching cuts the time to first token" in text
    table = tables(at)[0]
    assert list(table.columns) == ["caching off", "caching on"]
    assert list(table.loc["prompt tokens read from the cache"]) == ["0", "407,552"]
    assert list(table.loc["hit rate (hits / looked up)"]) == ["0.0%", "66.3%"]
    assert len(charts(at)) == 1


def test_an_engine_that_caches_is_not_called_a_what_if_and_sglang_reads_one_token_pages():
    at = open_app(PAGE, chunked="sglang", prefix=1000, plen=100, **SMALL)
    assert_clean(at)
    text = shown(at)
    assert not at.info and "SGLang, caching on" in text and "what-if" not in text
    assert "⌊min(1,000, 1,099) / 1⌋ × 1 = 1,000 tokens (SGLang's block: 1 token)" in text


def test_its_controls_come_from_a_link_and_go_back_into_it():
    at = open_app(PAGE, prefix=512, pshare=0.5, order="lpm", plen=256, olen=32, seed=3,
                  chunked="vllm-v1", **SMALL)
    assert_clean(at)
    assert at.number_input(key="prefix").value == 512
    assert at.number_input(key="pshare").value == 0.5
    assert at.selectbox(key="order").value == "lpm"
    assert "each with chance 0.5 begins with the same 512-token system prompt" in shown(at)
    assert "Waiting order: LPM: longest prefix match first" in shown(at)
    for key, value in dict(prefix="512", pshare="0.5", order="lpm", plen="256").items():
        assert at.query_params[key] in (value, [value])


def test_a_bad_link_value_is_named_and_replaced_by_the_nearest_or_the_default():
    link = read_link({"prefix": "-5", "pshare": "2", "order": "random"})
    assert link.values == {"prefix": 0, "pshare": 1.0, "order": "fcfs"}   # clamped; the default
    assert set(link.notes) == {"prefix", "pshare", "order"}


def test_a_burst_admits_some_requests_before_the_prefix_is_cached():
    """All 40 at time 0, vLLM V1 at budget 16,384: the first iteration admits six requests
    (five whole 3,072-token prompts and a chunk of the sixth), and the five beside the first
    miss the prefix: 79,872 − 5 × 2,048 = 69,632 tokens found."""
    at = open_app(PAGE, arrivals="burst", chunked="vllm-v1", budget=16384, requests=40)
    assert_clean(at)
    text = shown(at)
    assert at.selectbox(key="arrivals").value == "burst"
    assert "all arriving at time 0 (a burst: the rate is not used; random seed: 0)" in text
    assert ("It found 69,632 of the 79,872 tokens it could have: some requests were admitted "
            "before the prefix was computed and cached") in text
    assert at.query_params["arrivals"] in ("burst", ["burst"])


def test_no_prefix_says_there_is_nothing_to_find():
    at = open_app(PAGE, prefix=0, **SMALL)
    assert_clean(at)
    text = shown(at)
    assert "No two of these 40 requests share a whole block of prompt (none begins" in text
    assert "hit = ⌊" not in text                       # no request shares: no hit to work out
    assert "Here caching saves nothing" in text and "saved" not in text.split("Off and on")[0]


def test_the_closing_sentence_names_the_runs_cause():
    """A prefix shorter than a block finds nothing though the pool holds cached blocks; a 16-token
    hit leaves a 1,044-token prompt 2 chunks at Sarathi-Serve's 576-token budget."""
    short = shown(open_app(PAGE, prefix=8, qps=40, pshare=0.5))
    assert ("Here caching saves nothing: the shared prefix, 8 tokens, is shorter than one "
            "16-token block, and only full blocks are cached and found, so no prompt finds a hit, "
            "though up to 228,752 tokens of the requests' own blocks sat cached, unread.") in short
    small = shown(open_app(PAGE, prefix=20, qps=20))
    assert ("The hits leave a prompt's chunk count unchanged at the 576-token budget: alone, "
            "⌈1,044 / 576⌉ = 2, ⌈(1,044 − 16) / 576⌉ = 2 (in the run, where decodes share the "
            "budget, 524 prefill chunks without the cache, 518 with). They spare 3,184 of 208,800 "
            "prompt tokens (1.5%). The first token comes sooner mostly from shorter queues") in small
    assert "fewer chunks" not in small


def test_its_figure_has_its_downloads():
    at = open_app(PAGE, **SMALL)
    assert_clean(at)
    labels = " ".join(b.proto.label for b in at.get("download_button"))
    assert "PNG" in labels and "SVG" in labels and "CSV" in labels, labels


def test_it_follows_long_and_short_requests_and_home_names_it():
    chapter = next(c for c in CHAPTERS if c.id == "traffic")
    assert "Prefix caching page" in chapter.text and PAGE in chapter.pages
    assert BY_PATH[PAGE].section == "Under load"
    paths = [p.path for p in PAGES]
    assert paths.index(PAGE) == paths.index("pages/under_load/long_short.py") + 1
