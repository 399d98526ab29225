"""The Pipeline page through AppTest: its three schedules, bubbles and words at the defaults, the
figure's rows and hover arithmetic, its controls from a link and back into it, the same GPUs as
TP against TP × PP, an uneven split, its refusals, its downloads, and its place on the learner's path."""

import json
import re

from tests.support.apptest import assert_clean, charts, open_app, shown
from ui.shell.story import BY_PATH, CHAPTERS, PAGES

from .claims_text import plain

PAGE = "pages/across_gpus/pipeline.py"


def test_at_the_defaults_dynamic_chunks_idle_the_stages_least():
    at = open_app(PAGE)
    assert_clean(at)
    text = shown(at)
    # the worked example over two stages joined by NVLink 4, simple cost model
    assert "2 stages of 16/16 layers, each on 1 GPU (2 in all)" in text
    assert "Dynamic chunks idle the stages least here: 7.31% of the stages' working time " \
           "(the time at least one micro-batch is in the pipeline), against 8.34% with fixed " \
           "chunks, 9.72% unchunked: 1.03 percentage points below the next." in plain(text)
    # each time with the figures that make the shown numbers add up to the shown result
    assert "Unchunked: stage idle time = stages × working time − busy = 2 × 1.694997 s − " \
           "(1.531160 s + 1.529173 s) = 329.66 ms; fraction = idle / (stages × working time) " \
           "= 329.66 ms / (2 × 1.694997 s) = 9.72%." in text
    assert "the longest micro-batch (8,192 prompt tokens and 0 decodes) holds a stage 164 ms" \
        in text
    assert "Dynamic chunks are a what-if for Sarathi-Serve" in text
    # the Textbook GPU has no link for tensor parallelism: said, not drawn
    assert "No tensor-parallel run to compare" in at.info[0].value
    # why the stages may take the picked link while tensor parallelism may not
    assert "over the link picked above, NVLink 4 (H100, H200): one send per stage boundary" in text
    assert "keep its GPUs in one node on their own link: the Textbook GPU (400 TFLOP/s, 3 TB/s) " \
           "preset has none, so no TP2 runs here." in text
    labels = " ".join(b.proto.label for b in at.get("download_button"))
    assert "PNG" in labels and "SVG" in labels and "CSV" in labels, labels


def test_sixteen_gpus_on_nvlink_are_called_a_best_case():
    """An HGX node joins 8 GPUs by NVLink: TP16, and 4 stages of TP4 joined by NVLink, are priced
    on a domain no node has, and the page says so (not at 8 GPUs: the next test)."""
    at = open_app(PAGE, pp=4, mode="calibrated", gpu="h100-sxm", model="llama-3.1-70b", tp=4)
    assert_clean(at)
    assert "One node joins at most 8 GPUs by such a link, not 16: TP16 and the stages over " \
           "NVLink 4 (H100, H200) assume one domain of 16, so those figures are a best case" \
           in shown(at)


def records(player_page: str, field: str) -> list[dict]:
    """Every record of the player's spec (inline in its page) that has `field`."""
    return [json.loads(r) for r in re.findall(r'\{[^{}]*"' + field + r'":[^{}]*\}', player_page)]


def test_the_stages_play_a_row_per_stage_and_the_bubbles_arithmetic_on_hover():
    at = open_app(PAGE)
    assert len(at.get("iframe")) == 1 and not charts(at)          # the stages' player
    page = at.get("iframe")[0].proto.srcdoc
    assert '"clock": "t"' in page or '"clock":"t"' in page
    bars = records(page, "micro_batches")
    assert {b["row"] for b in bars} == {f"{run} · stage {s}" for run in (
        "unchunked", "fixed chunks", "dynamic chunks") for s in (1, 2)}
    unchunked = [b for b in records(page, "idle_arithmetic") if b["schedule"] == "unchunked"]
    assert {b["idle_arithmetic"] for b in unchunked} == {
        "2 × 1.694997 s − (1.531160 s + 1.529173 s) = 329.66 ms"}
    assert {b["fraction_arithmetic"] for b in unchunked} == {
        "329.66 ms / (2 × 1.694997 s) = 9.72%"}
    for title in ("stage idle time = stages × working time − busy",    # the hover's titles,
                  "fraction = idle / (stages × working time)"):         # as the page's JSON
        assert json.dumps(title)[1:-1] in page                          # escapes them


def test_its_controls_from_a_link_and_back_into_it_with_tp_against_tp_x_pp():
    at = open_app(PAGE, gpu="h100-sxm", mode="calibrated", tp=2, pp=4, pplink="100gbe",
                  chunking="dynamic")
    assert_clean(at)
    assert at.number_input(key="pp").value == 4
    assert at.selectbox(key="pplink").value == "100gbe"
    text = shown(at)
    assert "4 stages of 8/8/8/8 layers, each on 2 GPUs (8 in all), activations sent over " \
           "100 Gb Ethernet (RoCE)" in text
    assert "The same 8 GPUs: TP8 against TP2 × PP4" in text
    assert "own link: NVLink 4 (H100, H200) on H100 SXM." in text and "best case" not in text
    assert "dynamic chunks) with every layer split over all 8 GPUs (TP8)" in text
    assert "On the same 8 GPUs, TP2 × PP4 runs each micro-batch on a stage in 5.375 ms (median) " \
           "where TP8 runs a whole iteration in 7.815 ms" in text
    assert "stage 1 is the busiest, 5.53 s of the 5.53 s working time (it also runs the " \
           "engine's CPU work per micro-batch)" in text
    table = next(m.value for m in at.markdown if m.value.startswith("| setup"))
    assert "| TP8 | 8 | 7.815 ms |" in table and "| TP2 × PP4 | 8 | 5.375 ms |" in table
    for key, value in dict(pp="4", pplink="100gbe", chunking="dynamic").items():
        assert at.query_params[key] in (value, [value])


def test_one_stage_has_no_bubble():
    at = open_app(PAGE, pp=1)
    assert_clean(at)
    assert "With one stage there is no pipeline and no bubble" in shown(at)


def test_stages_that_do_not_divide_the_layers_split_them_as_vllm_does():
    """32 layers over 3 stages: the remainder on the stages before the last (vLLM's rule)."""
    at = open_app(PAGE, pp=3)
    assert_clean(at)
    assert not at.error
    assert "3 stages of 11/11/10 layers" in shown(at)
    assert "stage 1 is the busiest, 1.5 s of the 1.67 s working time (it holds 11 layers to " \
           "stage 3's 10)" in shown(at)
    assert len(at.get("iframe")) == 1                               # the stages' player


def test_a_prompt_within_one_chunk_idles_every_schedule_alike_and_says_why():
    at = open_app(PAGE, pp=8, prompt=300, decodes=400, chunked="sglang")
    assert_clean(at)
    assert "Every schedule idles its stages alike here, 0.834% of the stages' working time (the " \
           "time at least one micro-batch is in the pipeline): they run the same micro-batches, " \
           "as no chunk splits the prompt (it fits in one)." in plain(shown(at))


def test_it_follows_disaggregation_in_the_across_gpus_section_and_chapter():
    assert BY_PATH[PAGE].section == "Across GPUs"
    paths = [p.path for p in PAGES]
    assert paths.index(PAGE) == paths.index("pages/across_gpus/disaggregation.py") + 1
    chapter = next(c for c in CHAPTERS if c.id == "across-gpus")
    assert PAGE in chapter.pages and "the Pipeline page" in chapter.text


MEMORY = "pages/advanced/memory.py"


def stage_table(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("| stage"))


def test_the_memory_page_gives_each_stages_weights_and_kv():
    at = open_app(MEMORY)
    assert_clean(at)
    # half of the 8B model's 16 GB and 131,072 KV bytes a token on each stage: 80 GB x 0.85 - 8 GB
    # = 60 GB, / 65,536 B = 915,527 tokens, in whole blocks of 16
    assert "| 1 | 16 | 8 GB | 65.5 kB | 80 GB × (1 − 0.15) − 8 GB = 60 GB | 915,520 |" \
        in stage_table(at)
    assert "the pipeline holds the fewest any stage fits: 915,520 tokens under Sarathi-Serve, " \
           "against 396,720 on one GPU with the whole model" in shown(at)


def test_a_model_too_large_for_one_gpu_fits_across_stages_on_the_memory_page():
    at = open_app(MEMORY, gpu="h100-sxm", model="llama-3.1-70b", pp=4)
    assert "Llama-3.1-70B weights (141 GB) do not fit in H100 SXM" in at.error[0].value
    assert "| 4 | 20 | 35.3 GB | 81.9 kB |" in stage_table(at)
    assert "456,736 tokens under Sarathi-Serve, where one GPU with the whole model fits none" \
        in shown(at)
    assert at.query_params["pp"] in ("4", ["4"])


def test_one_stage_on_the_memory_page_points_at_its_tables():
    at = open_app(MEMORY, pp=1)
    assert_clean(at)
    assert "With one stage, each GPU holds the whole model" in shown(at)
    assert not [m for m in at.markdown if m.value.startswith("| stage")]
