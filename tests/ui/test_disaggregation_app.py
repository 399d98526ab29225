"""The Disaggregation page through AppTest: its runs, words and worked transfer at the defaults,
its controls from a link and back into it, goodput behind its button, its refusals, its
downloads, and its place on the learner's path. Workloads are small: the suite runs on two
cores."""

import json
import re

from tests.support.apptest import assert_clean, charts, open_app, shown
from ui.shell.story import BY_PATH, CHAPTERS, PAGES, SECTIONS

PAGE = "pages/across_gpus/disaggregation.py"
SMALL = dict(requests=40)


def test_at_the_defaults_colocation_wins_and_the_transfer_is_worked_out():
    at = open_app(PAGE, **SMALL)
    assert_clean(at)
    text = shown(at)
    assert "colocated on the same 2 GPUs: **colocation wins at this rate**" in text
    # Llama-3-8B's layout (the textbook 8B): 2 x 32 x 1,024 x 2 bytes a token, over NVLink 4
    assert "2 (key and value) × 32 layers × 1,024 (KV heads × head dim) × 2 bytes = 131,072" in text
    assert "bytes = 8,192 prompt tokens × 131,072 bytes = 1.07 GB" in text
    assert "1.07 GB / 450 GB/s (NVLink 4 (H100, H200), one way) + 3 µs latency = 2.389 ms" in text
    assert "the median transfer takes 2.389 ms" in text
    assert len(at.get("iframe")) == 1 and not charts(at)        # the lanes' player; goodput waits
    assert at.button(key="find_goodput").label == "Find the goodput"
    # the search's size counts instance runs, and says so: 14 rates x (2 + 2 instances)
    assert "Up to 14 rates per setup, each a run of 40 requests in which every instance is " \
        "simulated on its own: 14 × (2 disaggregated + 2 colocated instances): 56 runs" in text
    labels = " ".join(b.proto.label for b in at.get("download_button"))
    assert "PNG" in labels and "SVG" in labels and "CSV" in labels, labels


def test_its_words_define_their_terms_and_name_whose_targets():
    """The targets are DistServe's kind, set by the page's boxes (DistServe sets its own per
    application); p90 and makespan carry their definitions where the page first uses them."""
    at = open_app(PAGE, **SMALL)
    text = shown(at)
    assert "judged by the kind of targets DistServe sets (per application)" in text
    assert "here the two target boxes below set them" in text and "DistServe's targets" not in text
    raw = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    bullets = next(m.value for m in at.markdown if "miss the TTFT target" in m.value)
    assert 'title="The 90th percentile' in bullets.split("p90</span> TTFT")[0]
    assert 'title="A run&#x27;s length: from its first request&#x27;s arrival' in raw


def handoff_fields(player_page: str, field: str) -> list:
    """One field of every hand-off in the player's page (its Vega spec, inline)."""
    return [json.loads(v) for v in re.findall(rf'"{field}":("(?:[^"\\]|\\.)*"|[\d.e+-]+)',
                                               player_page)]


def test_the_lanes_play_every_hand_off_with_its_arithmetic():
    at = open_app(PAGE, **SMALL)
    page = at.get("iframe")[0].proto.srcdoc                     # the player, its spec inline
    assert '"clock": "t"' in page or '"clock":"t"' in page
    from_lanes = handoff_fields(page, "from_lane")
    assert len(from_lanes) == 40 and set(from_lanes) == {"prefill 1"}   # every request moved
    assert set(handoff_fields(page, "to_lane")) == {"decode 1"}
    assert {round(x, 3) for x in handoff_fields(page, "transfer_ms")} == {2.389}
    assert set(handoff_fields(page, "kv_sum")) == {"8,192 tokens × 131,072 bytes = 1.07 GB"}
    assert set(handoff_fields(page, "transfer_sum")) == {"1.07 GB / 450 GB/s + 3 µs = 2.389 ms"}
    assert "transfer = bytes / bandwidth + latency" in page


def test_its_controls_from_a_link_and_back_into_it():
    at = open_app(PAGE, prefillgpu=2, decodegpu=1, kvlink="100gbe", qps=1, ttftslo=2, tpotslo=50,
                  **SMALL)
    assert_clean(at)
    assert at.number_input(key="prefillgpu").value == 2
    assert at.selectbox(key="kvlink").value == "100gbe"
    text = shown(at)
    assert "2 prefill GPUs + 1 decode GPU" in text and "same 3 GPUs" in text
    assert "+ 10 µs latency = 85.91 ms" in text                     # 1.07 GB at 12.5 GB/s
    assert "TTFT target of 2 s" in text and "TPOT target of 50 ms" in text
    for key, value in dict(prefillgpu="2", kvlink="100gbe", qps="1", tpotslo="50").items():
        assert at.query_params[key] in (value, [value])


def test_goodput_behind_its_button():
    at = open_app(PAGE, requests=20, qps=1)
    at.button(key="find_goodput").click().run()
    assert_clean(at)
    text = shown(at)
    assert "Goodput (the highest rate at which at least 90% of requests meet both targets)" in text
    assert "as much per GPU" in text or "a tie" in text
    assert "Each rate was judged by one run of 20 requests" in text    # both limits bracketed
    # each search's outcome in the page's words, not the command line's (QPS, <=, sarathi 1:1)
    assert "Sarathi-Serve OSDI'24 (stall-free) disaggregated on 1 prefill GPU + 1 decode GPU " \
        "meets both targets for at least 90% of requests (TTFT ≤ 1 s, TPOT ≤ 25 ms) up to " in text
    assert "Sarathi-Serve OSDI'24 (stall-free) colocated as 2 instances of 1 GPU " in text
    searches = next(m.value for m in at.main.markdown if "colocated as 2 instances" in m.value)
    assert "QPS" not in searches and "<=" not in searches and "SLOs" not in searches
    assert len(charts(at)) == 1                                   # beside the lanes' player
    again = open_app(PAGE, requests=20, qps=1)                    # kept: shown at once
    assert len(charts(again)) == 1 and "Goodput (the highest" in shown(again)


def test_a_gpu_without_its_own_link_asks_for_one():
    at = open_app(PAGE, kvlink="gpu", **SMALL)
    assert_clean(at)
    assert "has no GPU-to-GPU link in its preset" in at.info[0].value and not charts(at)


def test_gpus_tp_does_not_divide_are_refused_with_what_works():
    at = open_app(PAGE, gpu="h100-sxm", tp=2, prefillgpu=1, decodegpu=2, **SMALL)
    assert_clean(at)
    assert "3 GPUs do not split into colocated instances of tp 2" in at.error[0].value


def test_it_opens_the_across_gpus_section_and_chapter_seven():
    assert BY_PATH[PAGE].section == "Across GPUs"
    assert list(SECTIONS.values()).index("Across GPUs") == \
        list(SECTIONS.values()).index("Under load") + 1
    chapter = next(c for c in CHAPTERS if c.id == "across-gpus")
    assert chapter.pages[0] == PAGE and CHAPTERS[-1] is chapter
    # the first page after the last of Under load's
    under_load = max(i for i, p in enumerate(PAGES) if p.section == "Under load")
    assert PAGES[under_load + 1].path == PAGE


def test_runs_past_a_pages_limits_are_refused_with_what_shortens_them():
    at = open_app(PAGE, requests=1000, olen=32768)
    assert_clean(at)
    error = at.error[0].value
    assert "its trace would keep 32,769,000 token times" in error
    assert "Make it shorter: fewer requests or fewer output tokens." in error and not charts(at)


def test_each_pool_shards_its_instances_over_its_own_tp():
    """Two prefill and two decode H100s in instances of tp 2: one lane each, and each GPU sends
    its half of the KV heads (65,536 bytes a token, 537 MB a prompt)."""
    at = open_app(PAGE, gpu="h100-sxm", prefillgpu=2, decodegpu=2, ptp=2, dtp=2, **SMALL)
    assert_clean(at)
    assert at.number_input(key="ptp").value == 2 and at.query_params["dtp"] in ("2", ["2"])
    text = shown(at)
    assert "2 prefill GPUs + 2 decode GPUs, in instances of 2 GPUs (prefill) and 2 GPUs " \
        "(decode). Colocated: the same 4 GPUs as 4 instances of 1 GPU (the sidebar's tp)" in text
    assert "× 2 bytes / 2 GPUs (tensor parallelism shards the KV heads) = 65,536 bytes" in text
    assert "bytes = 8,192 prompt tokens × 65,536 bytes = 537 MB" in text
    assert "537 MB / 450 GB/s (NVLink 4 (H100, H200), one way) + 3 µs latency = 1.196 ms" in text
    page = at.get("iframe")[0].proto.srcdoc
    assert set(handoff_fields(page, "from_lane")) == {"prefill 1 (tp 2)"}
    assert set(handoff_fields(page, "to_lane")) == {"decode 1 (tp 2)"}


def test_each_setups_tp_is_said_beside_its_own_instances():
    """Prefill instances of tp 2 beside decode and colocated instances of the sidebar's tp 1:
    the caption gives each its own GPUs, and no 'each instance on 1 GPU' for them all."""
    at = open_app(PAGE, gpu="h100-sxm", prefillgpu=2, decodegpu=2, ptp=2, **SMALL)
    assert_clean(at)
    text = shown(at)
    assert "each instance on" not in text
    assert "in instances of 2 GPUs (prefill) and 1 GPU (decode). Colocated: the same 4 GPUs " \
        "as 4 instances of 1 GPU (the sidebar's tp)" in text
    assert "14 × (3 disaggregated + 4 colocated instances): 98 runs" in text


def test_an_uneven_split_names_every_pool_and_gives_no_size_advice():
    """One prefill and one decode GPU at the sidebar's tp 2: both pools are named, with a count
    of one said as one, and no smaller run is offered as a cure (none would divide them)."""
    at = open_app(PAGE, gpu="h100-sxm", tp=2, prefillgpu=1, decodegpu=1, **SMALL)
    assert_clean(at)
    said = at.error[0].value
    assert "1 prefill GPU does not split into instances of tp 2" in said
    assert "1 decode GPU does not split into instances of tp 2" in said
    assert "Colocated: the same 2 GPUs as 1 instance of 2 GPUs" in shown(at)
    assert "fewer requests" not in said and "Prefill / Decode instance tp" in said


def test_a_pools_tp_that_does_not_divide_its_gpus_is_refused():
    at = open_app(PAGE, gpu="h100-sxm", prefillgpu=3, ptp=2, **SMALL)
    assert_clean(at)
    assert "3 prefill GPUs do not split into instances of tp 2" in at.error[0].value


def test_gpus_the_sidebars_tp_does_not_divide_get_no_instance_count_in_the_caption():
    """3 GPUs at tp 2: the caption says what was asked, the refusal under it why it cannot run."""
    at = open_app(PAGE, gpu="h100-sxm", tp=2, prefillgpu=2, decodegpu=1, **SMALL)
    assert_clean(at)
    assert "Colocated: the same 3 GPUs in instances of 2 GPUs (the sidebar's tp)" in shown(at)
    assert "—" not in shown(at)
    assert "3 GPUs do not split into colocated instances of tp 2" in at.error[0].value
