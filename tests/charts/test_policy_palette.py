"""Every policy has a colour on every chart: the shipped ones keep the hues chosen for colour-blind
distance (tests/charts/test_colours.py), and a policy the registry does not hold (a new one, a
variant) gets a spare hue of its own instead of a KeyError."""

import pytest
import vl_convert as vlc

from charts import memory as memory_charts
from charts import traffic as T
from charts.theme import SERIES, SPARE_SERIES, Look
from sim.serving.policies import POLICIES

LOOKS = [Look(dark=dark, contrast=contrast) for dark in (False, True) for contrast in (False, True)]

NEW = ("my-policy", "vllm-v1-threshold", "orca-2", "fourth-new")


@pytest.mark.parametrize("look", LOOKS)
def test_shipped_policies_keep_their_colours(look):
    """The colours the shipped policies had before any name outside them could be drawn."""
    assert look.policy_inks(tuple(POLICIES)) == {
        "sarathi": SERIES["violet"], "vllm-v1": SERIES["olive"], "sglang": SERIES["purple"],
        "vllm-v0": SERIES["brown"], "orca": look.ink}


@pytest.mark.parametrize("look", LOOKS)
def test_a_new_policy_gets_a_colour_no_other_policy_on_the_chart_has(look):
    for new in range(1, len(SPARE_SERIES) + 1):
        names = (*POLICIES, *NEW[:new])
        inks = look.policy_inks(names)
        assert set(inks) == set(names)
        assert len(set(inks.values())) == len(names), inks
        # a shipped policy's colour does not depend on which others share its chart
        assert {n: inks[n] for n in POLICIES} == look.policy_inks(tuple(POLICIES))
    more = look.policy_inks((*POLICIES, *NEW))      # more new ones than spares: still a colour each
    assert set(more) == {*POLICIES, *NEW}


def test_spare_hues_are_no_shipped_policys():
    """(Their distance from the meanings is checked with SERIES' in test_colours.py.)"""
    for look in LOOKS:
        shipped = set(look.policy_inks(tuple(POLICIES)).values())
        assert not shipped & set(SPARE_SERIES.values())


def test_traffic_and_memory_charts_draw_a_policy_the_registry_does_not_hold(seed_burst,
                                                                             memory_bound):
    traces = {("my-policy" if name == "sarathi" else name): t for name, t in seed_burst.items()}
    look = Look()
    ttft, gaps = T.ttft_and_gaps(traces)
    cost, kv_traces = memory_bound
    kv = {f"new-{name}": t for name, t in kv_traces.items()}
    timeline = T.traffic_timeline(T.timeline_frame(traces), look).spec()
    vlc.vegalite_to_svg(timeline)                      # it compiles and draws
    assert "my-policy" in str(timeline)                # its panel is titled by its name
    coloured = [
        T.cdf_chart(ttft, look, name="ttft", title="TTFT", x_title="s", log=True),
        T.tail_chart(gaps, look, name="gaps", title="gaps", x_title="ms", threshold=100, unit="ms"),
        memory_charts.kv_chart(memory_charts.kv_frame(kv, cost.kv_bytes_per_token), look),
    ]
    for figure in coloured:
        spec = figure.spec()
        vlc.vegalite_to_svg(spec)
        assert SPARE_SERIES["grey"] in str(spec)       # the new policy in its spare hue
