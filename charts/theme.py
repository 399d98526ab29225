"""One look for every chart, in the app and in exported figures.

Colours are the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), distinguishable with
the common colour-vision deficiencies. Decode work is blue, prefill work orange, the new request
vermillion, everywhere. `presenter` enlarges every font for a projector; `dark` swaps the background
and ink, keeping the hues; `contrast` is for a washed-out projector or a bright room: black (or
white) ink and deeper hues of the same three colours, every mark at least 3:1 against the
background (WCAG 1.4.11), every text 4.5:1.
"""

from __future__ import annotations

from dataclasses import dataclass

OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000"}

PREFILL = OKABE_ITO["orange"]
NEW_REQUEST = OKABE_ITO["vermillion"]
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
        return self._pick(NEW_REQUEST, NEW_REQUEST, "#B0003A", "#FF6A88")

    @property
    def compute_bound(self) -> str:
        return self.new_request

    @property
    def memory_bound(self) -> str:
        return self.decode

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
            range=dict(category=list(OKABE_ITO.values())),
            concat=dict(spacing=6 if self.presenter else 10),
        )
