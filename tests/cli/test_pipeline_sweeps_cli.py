"""`sweep --pp P` and `capacity --pp P`: their runs go through the stages, as `simulate --pp`'s
do, say the stages and each run's bubble, are estimated with the stages before they start, and
with one stage print today's figures."""

import json

import pytest

from cli import sweeps as sweep_command
from sim.units import fmt_seconds
from tests.support.cli import cli, refused, simulate_json

H100_70B = ("--gpu", "h100-sxm", "--model", "llama-3.1-70b")
POISSON = ("--requests", "60", "--qps", "4", "--lengths", "sharegpt", "--seed", "1")
CAPACITY = ("--requests", "200", "--lengths", "sharegpt", "--seed", "1", "--tbt-slo", "0.03",
            "--delay-slo", "0.5", "--max-runs", "6")
# pipeline_payload's keys: what simulate --json adds for a pipelined run
PIPELINE_KEYS = ("pp_stages", "pp_layers", "pp_link", "pp_micro_batches", "pp_working_s",
                 "pp_busy_s", "pp_bubble_s", "pp_bubble_fraction")


def run_json(*argv, capsys):
    code, out, err = cli(*argv, "--json", capsys=capsys)
    assert code == 0, err
    return json.loads(out)


def without_stages(payload: dict) -> dict:
    """`payload` less the pipeline's keys (one stage's, which a run without --pp leaves out)."""
    return {k: v for k, v in payload.items() if k not in PIPELINE_KEYS}


def test_a_pipelined_sweep_point_is_simulates_pipelined_run(capsys):
    """A budget's point is the run simulate --pp gives at that budget: its iterations are the
    micro-batches, its bubble the schedule's; without the stages the same budget runs otherwise."""
    (point,) = run_json("sweep", *H100_70B, "--tp", "4", "--pp", "2", *POISSON, "--budgets",
                        "512", capsys=capsys)
    run = simulate_json(*H100_70B, "--tp", "4", "--pp", "2", *POISSON, "--budget", "512",
                        capsys=capsys)
    for key in ("iterations", "makespan_s", "throughput_tokens_per_s", *PIPELINE_KEYS):
        assert point[key] == run[key], key
    assert point["ttft_s"]["p99"] == run["ttft_s"]["p99"]
    assert point["tbt_s"]["p99"] == run["tbt_s"]["p99"]
    assert point["pp_stages"] == 2 and point["pp_layers"] == [40, 40]
    assert 0 < point["pp_bubble_fraction"] < 1
    # the pipeline's busy time is the time a micro-batch is in it (micro-batches overlap)
    assert point["busy_s"] == run["pp_working_s"] <= point["makespan_s"]
    (flat,) = run_json("sweep", *H100_70B, "--tp", "4", *POISSON, "--budgets", "512",
                       capsys=capsys)
    assert "pp_stages" not in flat
    assert flat["makespan_s"] != point["makespan_s"]
    assert flat["tbt_s"]["p99"] != point["tbt_s"]["p99"]


def test_a_pipelined_sweep_says_its_stages_and_each_budgets_bubble(capsys):
    """The busy time the offline words compare is the pipeline's (micro-batches overlap), not
    the sum of the iterations' durations."""
    code, out, err = cli("sweep", *H100_70B, "--tp", "4", "--pp", "2", *POISSON, "--budgets",
                         "256,2048", "--tbt-slo", "0.05", "--wide", capsys=capsys)
    assert code == 0, err
    assert "pipeline: 2 stages of 40/40 layers, each on 4 H100 SXM GPUs (8 in all), " \
           "activations over NVLink 4" in out
    header = next(line for line in out.splitlines() if line.startswith("budget"))
    assert header.split()[-2:] == ["bubble", "notes"]
    assert "bubble = idle stage-time / (stages x working time)" in out
    assert "working time = the time at least one micro-batch is in the pipeline" in " ".join(
        out.split())
    assert "iterations keep the pipeline busy" in out
    assert "(busy time: the time at least one micro-batch is in it)" in " ".join(out.split())


def test_one_stage_sweeps_and_capacities_print_todays_figures(capsys):
    """--pp 1 adds the (empty) pipeline keys and nothing else changes."""
    sweep_argv = ("sweep", *H100_70B[:2], *POISSON, "--budgets", "256,1024")
    today = run_json(*sweep_argv, capsys=capsys)
    one = run_json(*sweep_argv, "--pp", "1", capsys=capsys)
    assert [p["pp_stages"] for p in one] == [1, 1] and [p["pp_bubble_s"] for p in one] == [0, 0]
    assert [without_stages(p) for p in one] == today
    capacity_argv = ("capacity", *H100_70B[:2], *CAPACITY)
    today = run_json(*capacity_argv, capsys=capsys)
    one = run_json(*capacity_argv, "--pp", "1", capsys=capsys)
    assert one.pop("pp_stages") == 1 and one.pop("pp_layers") == [32]
    for side in ("policy", "baseline"):
        assert all(p["pp_bubble_fraction"] == 0 for p in one[side]["points"])
        one[side]["points"] = [without_stages(p) for p in one[side]["points"]]
    assert one == today


@pytest.mark.parametrize("gpus", [("--tp", "8"), ("--tp", "4", "--pp", "2")])
def test_capacity_agrees_with_simulate_at_its_rates(gpus, capsys):
    """TP8 and TP4 x PP2 on the same eight H100s: simulate at the capacity found meets the SLOs
    with the p99 TBT (and bubble) the search saw, and at the rate it failed misses them."""
    found = run_json("capacity", *H100_70B, *gpus, *CAPACITY, capsys=capsys)["policy"]
    assert found["capacity_qps"] > 0 and found["failed_qps"] is not None
    points = {p["qps"]: p for p in found["points"]}
    for qps, meets in ((found["capacity_qps"], True), (found["failed_qps"], False)):
        run = simulate_json(*H100_70B, *gpus, *CAPACITY[:6], "--qps", repr(qps), "--budget",
                            "512", capsys=capsys)
        assert run["tbt_s"]["p99"] == pytest.approx(points[qps]["p99_tbt_s"], rel=1e-12)
        assert points[qps]["sustained"] == meets
        if meets:
            assert run["tbt_s"]["p99"] <= 0.03
        for key in PIPELINE_KEYS:
            assert run.get(key) == points[qps].get(key), key
    assert ("pp_bubble_fraction" in points[found["capacity_qps"]]) == ("--pp" in gpus)


def test_a_pipelines_compute_ceiling_is_its_busiest_stages(capsys):
    """Two stages compute their halves of the work at once: the ceiling nearly doubles (the last
    stage also computes the LM head), not the same as one stage's, nor twice it."""
    one = run_json("capacity", *H100_70B, "--tp", "4", *CAPACITY[:-2], "--max-runs", "1",
                   capsys=capsys)
    two = run_json("capacity", *H100_70B, "--tp", "4", "--pp", "2", *CAPACITY[:-2],
                   "--max-runs", "1", capsys=capsys)
    ratio = two["policy"]["ceiling_qps"] / one["policy"]["ceiling_qps"]
    assert 1.8 < ratio < 2


def test_capacity_says_its_stages_and_each_rates_bubble(capsys):
    code, out, err = cli("capacity", *H100_70B, "--tp", "4", "--pp", "2", *CAPACITY, "--wide",
                         capsys=capsys)
    assert code == 0, err
    assert "pipeline: 2 stages of 40/40 layers, each on 4 H100 SXM GPUs (8 in all)" in out
    assert "policy   QPS" in out and " bubble  meets both" in out
    data = run_json("capacity", *H100_70B, "--tp", "4", "--pp", "2", *CAPACITY, capsys=capsys)
    assert (data["pp_stages"], data["pp_layers"], data["pp_link"]) == (2, [40, 40], "nvlink4")
    assert all(0 < p["pp_bubble_fraction"] < 1 for side in ("policy", "baseline")
               for p in data[side]["points"])


def test_goodput_counts_a_pipelines_gpus(capsys):
    data = run_json("capacity", *H100_70B, "--tp", "4", "--pp", "2", *CAPACITY[:6],
                    "--goodput", "--ttft-slo", "1", "--tpot-slo", "0.05", "--max-runs", "3",
                    capsys=capsys)
    assert data["pp_stages"] == 2 and data["policy"]["gpus"] == 8
    assert "x pp 2" in data["policy"]["name"]
    assert all("pp_bubble_fraction" in p for p in data["policy"]["points"])


class Started(Exception):
    """The command got past its estimate and began its runs."""


@pytest.mark.parametrize("command, argv, refusal", [
    ("sweep", ("--requests", "6000", "--qps", "20"), "a sweep of 8 budgets would take"),
    ("compare_capacity", ("--requests", "20000", "--tbt-slo", "0.1"),
     "one run of each policy would take"),
])
def test_the_estimate_counts_the_stages(command, argv, refusal, monkeypatch, capsys):
    """Eight stages pass every micro-batch eight times: a sweep or a capacity search whose runs
    fit without them is refused with them, before any run starts, and told it could use fewer."""
    def started(*args, **kwargs):
        raise Started
    monkeypatch.setattr(sweep_command, command, started)
    argv = ("sweep" if command == "sweep" else "capacity", "--gpu", "h100-sxm", "--model",
            "llama-3.1-8b", "--lengths", "sharegpt", *argv)
    with pytest.raises(Started):
        cli(*argv, capsys=capsys)
    message = refused(*argv, "--pp", "8", capsys=capsys)
    assert refusal in message and "time budget" in message and "fewer --pp stages" in message


@pytest.mark.parametrize("argv, message", [
    (("sweep", *POISSON, "--pp-link", "100gbe"), "--pp-link does not apply here"),
    (("sweep", *POISSON, "--model", "llama-3.1-8b", "--pp", "33"),
     "pipeline stages (pp) 33 is more than Llama-3.1-8B's 32 layers"),
    (("capacity", *CAPACITY, "--pp", "2", "--pp-layers", "50,20"),
     "--pp-layers 50,20 must be 2 whole numbers"),
    (("capacity", *CAPACITY[:6], "--goodput", "--ttft-slo", "1", "--tpot-slo", "0.05",
      "--disaggregate", "4:4", "--pp", "2"),
     "drop --pp to compare the split with colocated instances, or drop --disaggregate"),
])
def test_bad_input_says_what_was_wrong_and_what_would_work(argv, message, capsys):
    assert message in refused(argv[0], *H100_70B, *argv[1:], capsys=capsys)


def test_dynamic_chunking_says_whose_rule_it_is_at_every_budget(capsys):
    """As simulate: SGLang's own rule for sglang at pp > 1, a what-if otherwise, each budget's
    with its own target (f(budget) − f(0))."""
    points = run_json("sweep", *H100_70B, "--tp", "4", "--pp", "2", *POISSON, "--policy",
                      "sglang", "--chunking", "dynamic", "--budgets", "512,1024", capsys=capsys)
    for point in points:
        (note,) = [n for n in point["notes"] if "--chunking dynamic" in n]
        assert "SGLang's own rule at pp > 1" in note
        assert f"f({point['budget']:,}) − f(0)" in note
    data = run_json("capacity", *H100_70B, "--tp", "4", "--pp", "2", *CAPACITY[:-2],
                    "--max-runs", "1", "--chunking", "dynamic", "--baseline", "sglang",
                    capsys=capsys)
    assert [n.split(":")[0] for n in data["notes"] if "--chunking dynamic" in n] == \
        ["sarathi", "sglang"]
    assert "a what-if" in data["notes"][-2] and "SGLang's own rule" in data["notes"][-1]


README_SWEEP = ("--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--mode", "calibrated",
                "--requests", "500", "--qps", "2", "--lengths", "sharegpt", "--budgets",
                "256,512,1024,2048", "--tbt-slo", "0.05")


def test_the_readmes_pipelined_sweep(capsys):
    """README's and docs/pipeline.md's figures: TP4 x PP2's bubble from 15.3% at 256 to 21.4%
    at 2,048, 512 the pick at 48.23 ms; TP8 on the same GPUs 30.85 ms there."""
    command = ("--gpu h100-sxm --model llama-3.1-70b --tp 4 --pp 2 --mode calibrated \\\n"
               "    --requests 500 --qps 2 --lengths sharegpt --budgets 256,512,1024,2048 "
               "--tbt-slo 0.05")
    for doc in ("README.md", "docs/pipeline.md"):
        assert command in open(doc).read(), doc
    staged = run_json("sweep", *README_SWEEP, "--tp", "4", "--pp", "2", capsys=capsys)
    assert [f"{p['pp_bubble_fraction']:.1%}" for p in staged] == ["15.3%", "18.1%", "20.2%",
                                                                   "21.4%"]
    (pick,) = [p for p in staged if p["recommended"]]
    assert (pick["budget"], fmt_seconds(pick["tbt_s"]["p99"])) == (512, "48.23 ms")
    assert [fmt_seconds(p["tbt_s"]["p99"]) for p in staged] == ["33.44 ms", "48.23 ms",
                                                                 "80.75 ms", "148.4 ms"]
    flat = run_json("sweep", *README_SWEEP, "--tp", "8", capsys=capsys)
    assert [fmt_seconds(p["tbt_s"]["p99"]) for p in flat] == ["21.08 ms", "30.85 ms", "51.94 ms",
                                                               "93.85 ms"]


def test_goodput_of_a_split_at_one_stage_is_the_split_without_pp(capsys):
    """--pp 1 is one engine, so the split and its colocated twin run as without --pp (simulate
    --disaggregate --pp 1 runs too); their curve has no bubble column to fill."""
    argv = ("capacity", *H100_70B[:2], *CAPACITY[:6], "--goodput", "--ttft-slo", "1",
            "--tpot-slo", "0.05", "--disaggregate", "1:1", "--max-runs", "2")
    today = run_json(*argv, capsys=capsys)
    assert run_json(*argv, "--pp", "1", capsys=capsys) == today
    code, out, err = cli(*argv, "--pp", "1", capsys=capsys)
    assert code == 0, err
    assert "bubble" not in out
