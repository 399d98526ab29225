"""One colour, one meaning: the four things the story is about (charts.theme.MEANINGS: decode,
prefill, the new request, a freeze) each have a colour of their own in every chart, apart for
colour-blind viewers, and no other mark takes one of them or a colour near it.

Colour-vision deficiencies are simulated with Machado, Oliveira & Fernandes (2009), "A
Physiologically-based Model for Simulation of Color Vision Deficiency", severity 1.0 (the full
dichromacies), applied to linear sRGB; distances are CIEDE2000 in CIELAB (D65)."""

import itertools
import re

import numpy as np
import pandas as pd
import pytest

from charts import fidelity as fidelity_charts
from charts.theme import MEANINGS, SERIES, SPARE_SERIES, Look
from charts.worked import to_scale
from tests.support.charts import calibrated, fast_first, lab_figures, traffic_figures

VISIONS = {
    "typical": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
APART = 15     # CIEDE2000 between two meanings, in every vision: clearly two colours at a glance
NEAR = 10      # a colour this close to a meaning's reads as that meaning
LOOKS = [Look(dark=dark, contrast=contrast) for dark in (False, True) for contrast in (False, True)]
# A label names a meaning when it starts with one of its words (a legend's entry: "decode
# tokens", "weight read (memory)"; a timeline mark's name after its lane: "chunked_froze")
WORDS = {"decode": ("decode", "memory", "weight read", "ticks"),
         "prefill": ("prefill", "compute", "arithmetic"),
         "new request": ("new",), "freeze": ("froze", "freeze", "waiting")}


def linear_rgb(hex_colour: str) -> np.ndarray:
    srgb = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def lab(linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ np.clip(linear, 0, 1)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> float:
    """Sharma, Wu & Dalal (2005)'s formulation of CIEDE2000."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = np.hypot(a1, b1), np.hypot(a2, b2)
    h1, h2 = np.degrees(np.arctan2(b1, a1)) % 360, np.degrees(np.arctan2(b2, a2)) % 360
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    d_hue = 2 * np.sqrt(c1 * c2) * np.sin(np.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        h_mean = h1 + h2
    elif abs(h1 - h2) <= 180:
        h_mean = (h1 + h2) / 2
    else:
        h_mean = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * np.cos(np.radians(h_mean - 30)) + 0.24 * np.cos(np.radians(2 * h_mean))
         + 0.32 * np.cos(np.radians(3 * h_mean + 6)) - 0.20 * np.cos(np.radians(4 * h_mean - 63)))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    r_t = (-np.sin(np.radians(60 * np.exp(-(((h_mean - 275) / 25) ** 2))))
           * 2 * np.sqrt(c_mean ** 7 / (c_mean ** 7 + 25 ** 7)))
    dl, dc, dhh = (l2 - l1) / s_l, (c2 - c1) / s_c, d_hue / s_h
    return float(np.sqrt(dl ** 2 + dc ** 2 + dhh ** 2 + r_t * dc * dhh))


def distance(a: str, b: str, vision: str = "typical") -> float:
    matrix = VISIONS[vision]
    return ciede2000(lab(matrix @ linear_rgb(a)), lab(matrix @ linear_rgb(b)))


def test_the_distance_is_ciede2000():
    """Sharma et al.'s test pairs 1 and 17 (CIELAB in, ΔE00 out), and a dichromat's confusion:
    Okabe-Ito orange and vermillion, 22 apart for most, half that for a deuteranope."""
    assert ciede2000(np.array([50, 2.6772, -79.7751]), np.array([50, 0, -82.7485])) \
        == pytest.approx(2.0425, abs=1e-4)
    assert ciede2000(np.array([50, 2.5, 0]), np.array([73, 25, -18])) == pytest.approx(27.1492, abs=1e-4)
    assert distance("#E69F00", "#D55E00", "deuteranopia") < distance("#E69F00", "#D55E00") / 1.5


@pytest.mark.parametrize("look", LOOKS, ids=lambda look: f"dark={look.dark},contrast={look.contrast}")
@pytest.mark.parametrize("vision", list(VISIONS))
def test_the_four_meanings_stay_apart_for_every_viewer(look, vision):
    colours = look.meanings()
    assert list(colours) == list(MEANINGS)
    for (one, a), (other, b) in itertools.combinations(colours.items(), 2):
        assert distance(a, b, vision) >= APART, (one, other, a, b)


@pytest.mark.parametrize("look", LOOKS, ids=lambda look: f"dark={look.dark},contrast={look.contrast}")
def test_other_categories_keep_clear_of_the_meanings(look):
    for name, hue in {**SERIES, **SPARE_SERIES}.items():   # spare: a policy the lab does not ship
        for meaning, colour in look.meanings().items():
            assert distance(hue, colour) >= APART, (name, meaning)


def worked_figure(look: Look):
    """The worked example's to-scale bars with every kind of piece they draw."""
    parts = ["decode", "prefill", "weight read (memory)", "arithmetic (compute)", "weights", "free"]
    return to_scale(pd.DataFrame({"row": parts, "start": 0.0, "end": 1.0, "part": parts,
                                  "total": "1"}), look, unit="ms")


def coloured(spec, label: str = ""):
    """(colour, label) for every colour a Vega-Lite spec sets: a scale's range entry labelled by
    its domain entry, a mark's colour or a colour value labelled by the nearest view's name."""
    if isinstance(spec, list):
        for item in spec:
            yield from coloured(item, label)
        return
    if not isinstance(spec, dict):
        return
    label = spec["name"] if isinstance(spec.get("name"), str) else label
    scale = spec.get("scale") if isinstance(spec.get("scale"), dict) else {}
    if isinstance(scale.get("range"), list) and isinstance(scale.get("domain"), list):
        for entry, colour in zip(scale["domain"], scale["range"]):
            if isinstance(colour, str) and colour.startswith("#"):
                yield colour.upper(), str(entry)
    for key in ("color", "fill", "stroke", "value"):
        if isinstance(spec.get(key), str) and spec[key].startswith("#"):
            yield spec[key].upper(), label
    if isinstance(spec.get("range"), dict):                           # the config's palettes
        for colour in spec["range"].get("category", []):
            yield colour.upper(), "a category with no colour of its own"
    for key, value in spec.items():
        if key not in ("datasets", "data", "scale"):
            yield from coloured(value, label)


def meanings_named(label: str) -> set[str]:
    start = re.sub(r"^(un)?chunked_", "", label.lower())
    return {meaning for meaning, words in WORDS.items() if start.startswith(words)}


@pytest.fixture(scope="module")
def every_chart(seed, seed_burst, frontier, capacity, memory_bound, points, curves):
    """Every chart builder's figure, by name, in a look: the side-by-side timeline, its streams,
    the roofline and the budget curve, Traffic's, Budget trade-off's, Capacity's, Memory's, the
    fidelity page's and the worked example's."""
    def build(look: Look) -> dict:
        return {**lab_figures(*seed, look),
                **traffic_figures(seed_burst, look, frontier, capacity, memory_bound),
                "fidelity times": fidelity_charts.time_vs_tokens(
                    fidelity_charts.times_frame(points, curves), look),
                "fidelity accuracy": fidelity_charts.accuracy(points, look),
                "fidelity factors": fidelity_charts.factors_waterfall(
                    fidelity_charts.factors_frame(calibrated()), look),
                "worked": worked_figure(look)}
    return build


@pytest.mark.parametrize("look", fast_first(LOOKS), ids=lambda look: f"dark={look.dark},contrast={look.contrast}")
def test_a_colour_means_one_thing_in_every_chart(every_chart, look):
    """A colour at or near a meaning's is used for that meaning only, and a mark or legend entry
    named for a meaning is drawn in its colour (or a neutral ink)."""
    meanings = look.meanings()
    neutral = {look.ink.upper(), look.muted.upper(), look.grid.upper(), look.background.upper()}
    seen = 0
    for name, figure in every_chart(look).items():
        for colour, label in set(coloured(figure.spec())):
            if colour in neutral:
                continue
            seen += 1
            named = meanings_named(label)
            near = {m for m, c in meanings.items() if distance(colour, c) < NEAR}
            assert near <= named, f"{name}: {label!r} drawn {colour}, the colour of {near}"
            if len(named) == 1:
                assert colour == meanings[next(iter(named))].upper(), \
                    f"{name}: {label!r} drawn {colour}, not {meanings[next(iter(named))]}"
    assert seen > 20
