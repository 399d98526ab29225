"""One look for every chart, in the app and in exported figures.

One colour, one meaning, in every chart: four colours are reserved for the four things the story
is about (MEANINGS): decode work (and the memory-bound time it stands for) blue, prefill work (and
compute-bound time) orange, the new request teal, a freeze (a gap over 100 ms) red. No other mark
uses them or a colour near them; other categories (policies, regimes, series) take SERIES. The
four stay apart for colour-blind viewers in every look (tests/charts/test_colours.py simulates
protanopia, deuteranopia and tritanopia and measures CIEDE2000 distances). Decode blue and
prefill orange are Okabe-Ito's (Okabe & Ito 2008, "Color Universal Design").

`presenter` enlarges every font for a projector; `dark` swaps the background and ink, with each
meaning's hue lightened where it would sink into a dark page; `contrast` is for a washed-out
projector or a bright room: black (or white) ink and deeper hues of the same four colours, every
mark at least 3:1 against the background (WCAG 1.4.11), every text 4.5:1.
"""

from __future__ import annotations

from dataclasses import dataclass

OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000"}

PREFILL = OKABE_ITO["orange"]
MEANINGS = ("decode", "prefill", "new request", "freeze")
# Hues for categories that are none of the MEANINGS (policies, regimes, series), each at least
# 15 CIEDE2000 from every meaning's colour in every look.
SERIES = {"violet": "#7B4FD6", "purple": OKABE_ITO["purple"], "olive": "#999933", "brown": "#8C564B"}
# Each policy the lab ships keeps one colour on every chart: a SERIES hue, or the ink ("ink").
POLICY_HUES = {"sarathi": "violet", "vllm-v1": "olive", "sglang": "purple", "vllm-v0": "brown",
               "orca": "ink"}
# Hues for a policy not named in POLICY_HUES (a new one, or a variant a page builds), as clear of
# the meanings as SERIES and taken by no shipped policy: grey, Paul Tol's purple and sand.
SPARE_SERIES = {"grey": "#7F7F7F", "wine": "#AA4499", "sand": "#DDCC77"}
FONT = "Source Sans Pro, Helvetica Neue, Arial, sans-serif"


@dataclass(frozen=True)
class Look:
    """Sizes and inks for one (presenter, dark, contrast) combination; builders read it for marks
    whose size or colour the config cannot set (text labels, rules)."""
    presenter: bool = False
    dark: bool = False
    contrast: bool = False

    @property
    def font_size(self) -> int:
        return 18 if self.presenter else 12

    @property
    def title_size(self) -> int:
        return 22 if self.presenter else 14

    @property
    def caption_size(self) -> int:
        """An exported figure's scenario lines (Figure.captioned): as large as a chart's title
        and in ink, so a printed or projected figure states its scenario legibly."""
        return 22 if self.presenter else 15

    @property
    def edge_px(self) -> int:
        """Room around a captioned (exported) figure, so its scenario does not touch the edge."""
        return 24 if self.presenter else 16

    def _pick(self, light: str, dark: str, light_contrast: str, dark_contrast: str) -> str:
        if self.contrast:
            return dark_contrast if self.dark else light_contrast
        return dark if self.dark else light

    @property
    def ink(self) -> str:
        return self._pick("#1F2430", "#FAFAFA", "#000000", "#FFFFFF")

    @property
    def muted(self) -> str:
        return self._pick("#5B6170", "#A3A8B8", "#1F2430", "#E6E8EE")

    @property
    def grid(self) -> str:
        return self._pick("#E6E8EE", "#31333F", "#9AA0AC", "#5B6170")

    @property
    def background(self) -> str:
        """The page's own colour (Streamlit 1.67's dark theme is #171614), so a figure saved in
        the dark theme sits on a dark page without a box around it."""
        return "#171614" if self.dark else "#FFFFFF"

    @property
    def decode(self) -> str:
        # Okabe-Ito blue is too dark on a dark background; its sky blue keeps the hue.
        return self._pick(OKABE_ITO["blue"], OKABE_ITO["sky"], "#004FB0", "#7CC4FF")

    @property
    def prefill(self) -> str:
        return self._pick(PREFILL, PREFILL, "#B35500", "#FFB000")

    @property
    def new_request(self) -> str:
        return self._pick("#4DAF9A", "#248A78", "#108460", "#1F9177")

    @property
    def freeze(self) -> str:
        """A stream frozen: a gap longer than the freeze threshold (sim.studies.stalls.STALL_S)."""
        return self._pick("#A50026", "#D7263D", "#76031F", "#D80318")

    @property
    def compute_bound(self) -> str:
        """Compute-bound time is prefill's nature: its colour."""
        return self.prefill

    @property
    def memory_bound(self) -> str:
        """Memory-bound time is decode's nature: its colour."""
        return self.decode

    def policy_inks(self, names) -> dict[str, str]:
        """A colour for each policy in `names` (any name): its own (POLICY_HUES), and for one not
        there the spare hues in turn, in the order `names` lists such policies."""
        spares = list(SPARE_SERIES.values())
        unknown = [n for n in dict.fromkeys(names) if n not in POLICY_HUES]
        inks = {n: spares[i % len(spares)] for i, n in enumerate(unknown)}
        for name in names:
            if name in POLICY_HUES:
                hue = POLICY_HUES[name]
                inks[name] = self.ink if hue == "ink" else SERIES[hue]
        return inks

    def meanings(self) -> dict[str, str]:
        """Each of MEANINGS and its colour in this look."""
        return {"decode": self.decode, "prefill": self.prefill, "new request": self.new_request,
                "freeze": self.freeze}

    def config(self) -> dict:
        """The Vega-Lite config (and background) this look applies."""
        fs, ts = self.font_size, self.title_size
        axis = dict(labelFontSize=fs, titleFontSize=fs, labelColor=self.muted, titleColor=self.ink,
                    gridColor=self.grid, domainColor=self.muted, tickColor=self.muted,
                    labelFont=FONT, titleFont=FONT, titleFontWeight="normal")
        return dict(
            font=FONT, background=self.background,
            view={"stroke": None},
            axis=axis,
            legend=dict(labelFontSize=fs, titleFontSize=fs, labelColor=self.ink,
                        titleColor=self.ink, symbolSize=fs * 12, orient="top"),
            title=dict(fontSize=ts, color=self.ink, subtitleColor=self.muted,
                       subtitleFontSize=fs, anchor="start", font=FONT, fontWeight="bold"),
            header=dict(labelFontSize=fs, titleFontSize=ts, labelColor=self.ink, titleColor=self.ink),
            text=dict(fontSize=fs, color=self.ink, font=FONT),
            range=dict(category=[self.ink, *SERIES.values()]),
            concat=dict(spacing=6 if self.presenter else 10),
        )
