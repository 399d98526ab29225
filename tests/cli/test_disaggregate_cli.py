"""`simulate --disaggregate PREFILL_GPUS:DECODE_GPUS`: the JSON's transfer and pools, the link it
names, and the refusals beside flags that make no sense for it."""


import pytest

from tests.support.cli import cli, refused, simulate_json

H100 = ("--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--budget", "512")
POISSON = ("--requests", "60", "--qps", "4", "--lengths", "sharegpt", "--seed", "1")
PERCENTILES = {"p50", "p90", "p99", "max"}


def test_the_json_has_the_transfer_in_the_top_levels_shape_and_each_pool(capsys):
    run = simulate_json(*H100, *POISSON, "--disaggregate", "2:1", capsys=capsys)
    assert set(run["kv_transfer_s"]) == set(run["ttft_s"]) == PERCENTILES
    assert run["disaggregation"]["link"] == "nvlink4"          # the H100's own link
    assert run["disaggregation"]["transfers"] == run["requests"] == 60
    assert run["pools"]["prefill"]["instances"] == 2 and run["pools"]["decode"]["gpus"] == 1
    for pool in run["pools"].values():
        assert 0 < pool["utilisation"] <= 1 and set(pool["queue_s"]) == PERCENTILES
    # 131,072 KV bytes a token over 450 GB/s: the longest transfer is the longest prompt's
    assert run["kv_transfer_s"]["max"] < 8192 * 131_072 / 450e9 + 1e-3


def test_a_slower_link_shows_in_the_transfer_and_in_ttft(capsys):
    fast = simulate_json(*H100, *POISSON, "--disaggregate", "1:1", capsys=capsys)
    slow = simulate_json(*H100, *POISSON, "--disaggregate", "1:1", "--link", "100gbe",
                         capsys=capsys)
    assert slow["disaggregation"]["link_bandwidth_bytes_per_s"] == 12.5e9
    assert slow["kv_transfer_s"]["p50"] > 30 * fast["kv_transfer_s"]["p50"]
    assert slow["ttft_s"]["p50"] > fast["ttft_s"]["p50"]


def test_the_table_says_the_transfers_formula_and_each_pool(capsys):
    code, out, _ = cli("simulate", *H100, *POISSON, "--disaggregate", "1:1", "--link", "ib-ndr",
                       capsys=capsys)
    assert code == 0
    out = " ".join(out.split())   # the table's lines wrap at 120 columns
    assert "60 KV transfers over InfiniBand NDR, 400 Gb/s (50.0 GB/s one way, 10 us)" in out
    assert "prompt tokens x KV bytes per token / bandwidth + latency" in out
    assert "prompt done -> decode accepts it" in out


@pytest.mark.parametrize("argv, message", [
    (("--disaggregate", "2"), "--disaggregate takes PREFILL_GPUS:DECODE_GPUS, two whole numbers "
                              "such as 2:1, got '2'"),
    (("--disaggregate", "0:2"), "--disaggregate 0:2: 0 prefill GPUs; each pool takes 1 to 64"),
    (("--link", "nvlink4"), "--link does not apply here: without --disaggregate there is no "
                            "disaggregated run to shape; add --disaggregate PREFILL_GPUS:DECODE_GPUS"),
    (("--prefill-tp", "2", "--layerwise-send"), "--prefill-tp and --layerwise-send do not apply"),
    (("--disaggregate", "1:1", "--link", "nvlink9"), "--link: invalid choice: 'nvlink9'"),
    (("--disaggregate", "3:1", "--prefill-tp", "2"),
     "3 prefill GPUs do not split into instances of tp 2; give a multiple of 2 prefill GPUs"),
    (("--disaggregate", "1:1", "--mix", "chat+documents"),
     "--mix does not apply here: --disaggregate runs one engine per instance: its per-class"),
    (("--disaggregate", "1:1", "--trace-out", "out/t.csv"),
     "--disaggregate runs one engine per instance: its CSV holds one engine's iterations"),
])
def test_bad_input_says_what_was_wrong_and_what_would_work(argv, message, capsys):
    assert message in refused("simulate", *H100, *POISSON, *argv, capsys=capsys)


def test_the_textbook_scenario_is_refused_it_starts_with_streams(capsys):
    err = refused("simulate", *H100, "--disaggregate", "1:1", capsys=capsys)
    assert "--disaggregate serves new requests (--requests with --qps, or --trace-in); the " \
           "textbook scenario starts with streams already decoding on one GPU" in err
    err = refused("simulate", "--disaggregate", "1:1", *POISSON, capsys=capsys)
    assert "has no GPU-to-GPU link in its preset; name one with --link" in err


def test_a_traced_mix_runs_whole_and_says_its_classes_are_not_split_out(tmp_path, capsys):
    trace = tmp_path / "mixed.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens,class\n0,100,5,chat\n0.5,4000,5,doc\n"
                     "1,120,5,chat\n")
    run = simulate_json(*H100, "--trace-in", str(trace), "--disaggregate", "1:1", capsys=capsys)
    assert run["requests"] == 3 and "classes" not in run
    assert any("per-class figures are one engine's" in note for note in run["notes"])
