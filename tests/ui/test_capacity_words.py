"""The Capacity page's sentence on the paper's ratio (ui/under_load/capacity.py's `paper_words`):
one figure per SLO preset, the one the Fidelity page sets beside the lab's, with where the paper
states it; none for a custom SLO."""

import re

import pytest

from sim.studies.capacity import SLO_PRESETS
from sim.studies.reproduce import load_shipped
from ui.shell.controls import CUSTOM
from ui.under_load.capacity import paper_words

FIDELITY = {r.scenario: r for r in load_shipped().rows if r.metric.endswith("/ vLLM V0")}


@pytest.mark.parametrize("preset", list(SLO_PRESETS))
def test_each_preset_names_the_fidelity_pages_figure_and_its_source(preset):
    said = paper_words(preset)
    shown = [float(x) for x in re.findall(r"\*\*([\d.]+)×\*\*", said)]
    assert shown == [FIDELITY[preset].paper]
    assert SLO_PRESETS[preset].paper.where in FIDELITY[preset].source
    assert f"in its {SLO_PRESETS[preset].paper.where}." in said


def test_the_strict_mistral_preset_is_3_5x_not_the_abstracts_2_6x():
    assert "**3.5×**" in paper_words("mistral-7b-strict") and "2.6" not in paper_words(
        "mistral-7b-strict")


def test_a_custom_slo_gets_no_paper_figure():
    said = paper_words(CUSTOM)
    assert "×" not in said and "none for this one" in said
