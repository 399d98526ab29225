"""The app's scenario controls are the knob table's (sim/knobs.py): their link keys, labels, help,
and the app's own default and range where the table gives one; the policy pickers' help is written
from each policy's PolicySpec."""

import pytest

from sim.knobs import KNOBS, LIMIT_KNOBS
from sim.serving.policies import CHUNKED, POLICIES, UNCHUNKED, Limits, in_words
from ui.shell.controls import CONTROLS, KV_PICK, read_link
from ui.shell.scenario import limits_with


@pytest.mark.parametrize("knob", [k for k in KNOBS.values() if k.key], ids=lambda k: k.name)
def test_each_knob_in_the_app_is_its_control(knob):
    control = CONTROLS[knob.key]
    default, low, high = knob.on_app()
    assert (control.label, control.help, control.default) == (knob.label, knob.help, default)
    if knob.choices:
        assert set(knob.choices) <= set(control.options) and control.options[0] == default
        return
    if knob.kind == "switch":     # on or off: a toggle, any spelling of a boolean in a link
        assert control.kind == "bool" and read_link({knob.key: "on"}).values[knob.key] is True
        return
    assert (control.low, control.high, control.step) == (low, high, knob.step)
    link = read_link({knob.key: str(high + 1)})      # a link past the app's maximum: corrected
    assert link.values[knob.key] == high and knob.key in link.above_max


def test_the_policy_pickers_describe_each_policy_from_its_spec():
    assert CONTROLS["chunked"].help == in_words(CHUNKED)
    assert CONTROLS["unchunked"].help == in_words(UNCHUNKED)
    for spec in POLICIES.values():
        if spec.chunked:
            assert spec.engine in KV_PICK.help


def test_a_pages_limit_controls_reach_the_runs_limits():
    base = Limits(max_seqs=77)
    assert limits_with(base, {}) == base
    assert limits_with(base, {"prefills": 3}) == Limits(max_seqs=77, max_concurrent_prefills=3)
    assert limits_with(base, {"prefills": 0}).max_concurrent_prefills is None   # 0: no cap
    for knob in LIMIT_KNOBS:
        if knob.key:
            if knob.choices:   # chunk sizing: its other choice
                value = knob.choices[-1]
            else:
                value = True if knob.kind == "switch" else int(CONTROLS[knob.key].high)
            assert getattr(limits_with(base, {knob.key: value}), knob.name) == value


def test_a_link_shared_with_the_old_key_of_a_renamed_knob_still_sets_it():
    """`partials` (the old key of max concurrent prefills, named after a vLLM knob that vLLM V1
    does not have) reads as `prefills` and is rewritten to it; the new key wins over the old."""
    from ui.shell.controls import read_link
    link = read_link({"partials": "3"})
    assert link.values == {"prefills": 3} and link.renamed == {"partials": "prefills"}
    assert read_link({"partials": "3", "prefills": "5"}).values == {"prefills": 5}
