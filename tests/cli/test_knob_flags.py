"""The scenario's flags are the knob table's (sim/knobs.py): each flag takes the table's range and
default, and a limit given for a policy that does not read it is refused, naming those that do."""

import re

import pytest

from cli.main import build_parser
from sim.errors import InputError, fmt_bound
from sim.knobs import KNOBS
from tests.support.cli import cli

SIMULATE = ("simulate",)


def parse(*argv):
    return build_parser().parse_args([*SIMULATE, *argv])


@pytest.mark.parametrize("knob", [k for k in KNOBS.values() if k.kind in ("int", "float")],
                         ids=lambda k: k.name)
def test_each_number_flag_takes_the_tables_range_and_default(knob):
    assert getattr(parse(), knob.name) == knob.default
    high = knob.high if knob.whole else float(knob.high)
    assert getattr(parse(knob.flag, str(high)), knob.name) == high
    with pytest.raises(InputError, match=fmt_bound(knob.high)):
        parse(knob.flag, str(high + 1))
    with pytest.raises(InputError):
        parse(knob.flag, str(knob.low - 1))


@pytest.mark.parametrize("knob", [k for k in KNOBS.values() if k.choices], ids=lambda k: k.name)
def test_each_choice_flag_offers_the_tables_choices(knob):
    assert getattr(parse(), knob.name) == knob.default
    for option in knob.choices:
        assert getattr(parse(knob.flag, option), knob.name) == option
    with pytest.raises(InputError, match=re.escape(", ".join(repr(c) for c in knob.choices))):
        parse(knob.flag, "no-such-" + knob.name)


@pytest.mark.parametrize("knob", [k for k in KNOBS.values() if k.kind == "switch"],
                         ids=lambda k: k.name)
def test_each_switch_is_off_unless_given_and_takes_no_value(knob):
    assert getattr(parse(), knob.name) is False
    assert getattr(parse(knob.flag), knob.name) is True
    with pytest.raises(InputError, match="unrecognized arguments"):
        parse(knob.flag, "on")


def test_the_help_line_is_the_tables_words():
    text = build_parser()._subparsers._group_actions[0].choices["simulate"].format_help()
    flat = " ".join(text.split())
    for knob in KNOBS.values():
        assert " ".join(knob.what.split()) in flat, knob.name


@pytest.mark.parametrize("argv", [
    ("simulate", "--policy", "vllm-v0"),
    ("simulate", "--policy", "orca"),
    ("capacity", "--policy", "vllm-v0", "--baseline", "orca", "--tbt-slo", "0.1", "--requests", "10"),
])
def test_a_limit_no_given_policy_reads_is_refused_naming_those_that_do(argv, capsys):
    code, _, err = cli(*argv, "--max-concurrent-prefills", "2", capsys=capsys)
    assert code == 2
    assert "--max-concurrent-prefills does not apply here" in err
    assert ", ".join(KNOBS["max_concurrent_prefills"].policies) in err


@pytest.mark.parametrize("flags, readers", [
    (("--long-prefill-token-threshold", "256"), "vllm-v1"),
    (("--mixed-chunk",), "sglang"),
])
def test_an_engines_own_knob_is_refused_for_the_other_engines(flags, readers, capsys):
    code, _, err = cli("simulate", "--policy", "sarathi", *flags, capsys=capsys)
    assert code == 2
    assert f"{flags[0]} does not apply here: only {readers} reads it" in err


@pytest.mark.parametrize("policy, flags", [
    ("vllm-v1", ("--long-prefill-token-threshold", "256")),
    ("sglang", ("--mixed-chunk",)),
])
def test_an_engines_own_knob_changes_its_run(policy, flags, capsys):
    """The worked example (64 streams, one 8,192-token prompt): the threshold splits the prompt
    into more chunks; mixed chunks let the streams decode beside the prompt, so fewer
    iterations stall them."""
    argv = ("simulate", "--policy", policy, "--mode", "simple", "--json")
    plain, knob = cli(*argv, capsys=capsys), cli(*argv, *flags, capsys=capsys)
    assert plain[0] == knob[0] == 0 and plain[1] != knob[1]


def test_mixed_chunks_at_a_budget_the_streams_fill_are_refused_as_starving(capsys):
    """SGLang's prefill batch alone takes the whole budget; mixed with the 64 streams' decodes,
    a budget of 64 leaves its chunk nothing."""
    argv = ("simulate", "--policy", "sglang", "--budget", "64", "--mode", "simple")
    assert cli(*argv, capsys=capsys)[0] == 0
    code, _, err = cli(*argv, "--mixed-chunk", capsys=capsys)
    assert code == 2 and "chunk = budget - decodes = 0" in err


def test_a_limit_one_of_the_policies_reads_is_kept(capsys):
    code, out, err = cli("simulate", "--policy", "vllm-v1", "--max-concurrent-prefills", "1",
                         "--mode", "simple", "--json", capsys=capsys)
    assert code == 0, err


def test_the_old_spelling_of_a_renamed_flag_still_works(capsys):
    """--max-partial-prefills (named after a vLLM knob vLLM V1 does not have) is now
    --max-concurrent-prefills; commands written with the old flag still run, the same run."""
    argv = ("simulate", "--policy", "vllm-v1", "--mode", "simple", "--json")
    new = cli(*argv, "--max-concurrent-prefills", "1", capsys=capsys)
    old = cli(*argv, "--max-partial-prefills", "1", capsys=capsys)
    assert new[0] == old[0] == 0 and new[1] == old[1]
