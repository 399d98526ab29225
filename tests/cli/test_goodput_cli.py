"""`capacity --goodput`: DistServe's criterion in capacity's JSON shape, disaggregated against
colocated on the same GPUs, and the refusals beside the TBT criterion's flags."""

import json

import pytest

from tests.support.cli import cli, refused

H100 = ("--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--budget", "512")
FIXED = ("--lengths", "fixed", "--prompt-tokens", "2000", "--output-tokens", "50",
         "--requests", "150", "--max-runs", "6")
GOODPUT = ("--goodput", "--ttft-slo", "1", "--tpot-slo", "0.02")


def test_the_json_compares_the_split_with_colocation_per_gpu(capsys):
    code, out, err = cli("capacity", *H100, *FIXED, *GOODPUT, "--disaggregate", "1:1", "--json",
                         capsys=capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["criterion"] == "goodput" and result["slo_attainment"] == 0.9
    ours, theirs = result["policy"], result["baseline"]
    assert ours["gpus"] == theirs["gpus"] == 2
    assert ours["per_gpu_qps"] == pytest.approx(ours["capacity_qps"] / 2)
    assert result["ratio"] == pytest.approx(ours["per_gpu_qps"] / theirs["per_gpu_qps"])
    assert {"qps", "slo_attainment", "p99_tbt_s", "median_delay_s", "sustained"} \
        == set(ours["points"][0])
    assert result["disaggregation"] == {"prefill_gpus": 1, "decode_gpus": 1, "link": "nvlink4"}


def test_without_a_split_it_compares_the_policy_with_the_baseline(capsys):
    code, out, err = cli("capacity", *H100, *FIXED, *GOODPUT, "--baseline", "vllm-v1",
                         capsys=capsys)
    assert code == 0, err
    assert "sarathi colocated, 1 x tp 1 at budget 512" in out
    assert "vllm-v1 colocated, 1 x tp 1 at budget 512" in out
    # an unchunked baseline runs at its own budget, vLLM V0's max(longest request, 2,048)
    code, out, err = cli("capacity", *H100, *FIXED, *GOODPUT, "--baseline", "vllm-v0",
                         capsys=capsys)
    assert code == 0, err
    assert "vllm-v0 colocated, 1 x tp 1 at budget 2,050" in out


@pytest.mark.parametrize("argv, message", [
    (("--goodput", "--tpot-slo", "0.1"), "--goodput needs --ttft-slo SECONDS"),
    ((*GOODPUT, "--tbt-slo", "0.1"), "--tbt-slo does not apply here: --goodput takes the place "
                                     "of the TBT criterion"),
    (("--tbt-slo", "0.1", "--disaggregate", "1:1"), "--disaggregate does not apply here: without "
                                                    "--goodput there is no goodput criterion; add "
                                                    "--goodput"),
    ((*GOODPUT, "--disaggregate", "1:1", "--baseline", "vllm-v0"),
     "--baseline does not apply here: --disaggregate compares the split with --policy colocated"),
    ((*GOODPUT, "--slo-attainment", "1.5"), "--slo-attainment must be"),
])
def test_bad_input_says_what_was_wrong(argv, message, capsys):
    assert message in refused("capacity", *H100, *FIXED, *argv, capsys=capsys)
