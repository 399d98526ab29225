"""`simulate --pp P`: the JSON's stages and bubbles, the table's arithmetic, --chunking, and the
refusals for what does not fit a pipeline."""

import pytest

from tests.support.cli import cli, refused, simulate_json

H100_70B = ("--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--budget", "512")
POISSON = ("--requests", "60", "--qps", "4", "--lengths", "sharegpt", "--seed", "1")


def test_the_json_has_the_stages_and_their_bubble(capsys):
    run = simulate_json(*H100_70B, *POISSON, "--pp", "4", capsys=capsys)
    assert run["pp_stages"] == 4 and run["pp_layers"] == [20] * 4 and run["pp_link"] == "nvlink4"
    assert run["pp_micro_batches"] == run["iterations"]
    idle = 4 * run["pp_working_s"] - sum(run["pp_busy_s"])
    assert run["pp_bubble_s"] == pytest.approx(idle)
    assert run["pp_bubble_fraction"] == pytest.approx(idle / (4 * run["pp_working_s"]))
    assert 0 < run["pp_bubble_fraction"] < 1


def test_one_stage_prints_todays_figures_and_no_bubble(capsys):
    today = simulate_json(*H100_70B[:2], *POISSON, capsys=capsys)
    one = simulate_json(*H100_70B[:2], *POISSON, "--pp", "1", capsys=capsys)
    assert one.pop("pp_stages") == 1 and one.pop("pp_bubble_s") == 0
    assert one.pop("pp_bubble_fraction") == 0
    for key in ("pp_layers", "pp_link", "pp_micro_batches", "pp_working_s", "pp_busy_s"):
        one.pop(key, None)   # no link with one stage: left out, as --json leaves out what is none
    assert one == today


def test_the_table_shows_the_bubbles_arithmetic(capsys):
    code, out, _ = cli("simulate", *H100_70B, *POISSON, "--pp", "2", "--pp-link", "100gbe",
                       "--gpu", "a100-80gb", "--model", "falcon-180b", "--tp", "4",
                       capsys=capsys)
    assert code == 0
    out = " ".join(out.split())
    assert "pipeline: 2 stages of 40/40 layers, each on 4 A100 80GB SXM GPUs (8 in all), " \
           "activations over 100 Gb Ethernet (RoCE)" in out
    assert "bubble = stages x working time - busy = 2 x " in out


def test_dynamic_chunking_says_whose_rule_it_is(capsys):
    sglang = simulate_json(*H100_70B, *POISSON, "--pp", "4", "--policy", "sglang",
                           "--chunking", "dynamic", capsys=capsys)
    assert any("SGLang's own rule at pp > 1" in n for n in sglang["notes"])
    sarathi = simulate_json(*H100_70B, *POISSON, "--pp", "4", "--chunking", "dynamic",
                            capsys=capsys)
    assert any("a what-if" in n for n in sarathi["notes"])


def test_sglangs_running_requests_are_sized_on_a_stages_kv(capsys):
    """SGLang sizes max_running_requests by its KV pool: Llama-3.1-70B's weights fill one H100,
    which would leave it one seat; a quarter of the layers leaves a stage 40 GB of KV, and the
    2 QPS are served as they come."""
    run = simulate_json(*H100_70B, *POISSON, "--pp", "4", "--policy", "sglang", capsys=capsys)
    assert run["ttft_s"]["p50"] < 1


@pytest.mark.parametrize("argv, message", [
    (("--pp", "2", "--pp-layers", "50,20"), "--pp-layers 50,20 must be 2 whole numbers"),
    (("--pp", "2", "--pp-layers", "40,x"), "--pp-layers '40,x': give each stage's layers as"),
    (("--pp-link", "100gbe"), "--pp-link does not apply here: without --pp there are no "
                              "pipeline stages; add --pp STAGES"),
    (("--pp", "33", "--model", "llama-3.1-8b"), "pipeline stages (pp) 33 is more than "
                                                "Llama-3.1-8B's 32 layers: a stage holds one layer "
                                                "or more; give at most 32"),
    (("--pp", "1", "--pp-link", "100gbe"), "with pp 1 there is none"),
    (("--pp", "65",), "--pp must be"),
    (("--policy", "orca", "--chunking", "dynamic"), "--chunking does not apply here"),
    (("--pp", "2", "--disaggregate", "1:1"), "pipeline stages (pp > 1) and disaggregated pools"),
    (("--pp", "2", "--gpu", "l4"), "or more pipeline stages (pp)"),
])
def test_bad_input_says_what_was_wrong_and_what_would_work(argv, message, capsys):
    assert message in refused("simulate", *H100_70B, *POISSON, *argv, capsys=capsys)
