"""The app's scenario controls are the knob table's (sim/knobs.py): their link keys, labels, help,
and the app's own default and range where the table gives one; the policy pickers' help is written
from each policy's PolicySpec."""

import pytest

from sim.knobs import KNOBS
from sim.serving.policies import CHUNKED, POLICIES, UNCHUNKED, in_words
from ui.controls import CONTROLS, KV_PICK, read_link


@pytest.mark.parametrize("knob", [k for k in KNOBS.values() if k.key], ids=lambda k: k.name)
def test_each_knob_in_the_app_is_its_control(knob):
    control = CONTROLS[knob.key]
    default, low, high = knob.on_app()
    assert (control.label, control.help, control.default) == (knob.label, knob.help, default)
    if knob.choices:
        assert set(knob.choices) <= set(control.options) and control.options[0] == default
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
