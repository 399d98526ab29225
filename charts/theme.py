"""One look for every chart, in the app and in exported figures.

Colours are the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), distinguishable with
the common colour-vision deficiencies. Decode work is blue, prefill work orange, the new request
vermillion, everywhere. `presenter` enlarges every font for a projector; `dark` swaps the background
and ink, keeping the hues.
"""

from __future__ import annotations

from dataclasses import dataclass

OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000"}

PREFILL = OKABE_ITO["orange"]
NEW_REQUEST = OKABE_ITO["vermillion"]
COMPUTE_BOUND = OKABE_ITO["vermillion"]
FONT = "Source Sans Pro, Helvetica Neue, Arial, sans-serif"


@dataclass(frozen=True)
class Look:
    """Sizes and inks for one (presenter, dark) combination; builders read it for marks whose
    size or colour the config cannot set (text labels, rules)."""
    presenter: bool = False
    dark: bool = False

    @property
    def font_size(self) -> int:
        return 18 if self.presenter else 12

    @property
    def title_size(self) -> int:
        return 22 if self.presenter else 14

    @property
    def ink(self) -> str:
        return "#FAFAFA" if self.dark else "#1F2430"

    @property
    def muted(self) -> str:
        return "#A3A8B8" if self.dark else "#5B6170"

    @property
    def grid(self) -> str:
        return "#31333F" if self.dark else "#E6E8EE"

    @property
    def background(self) -> str:
        """The page's own colour (Streamlit 1.67's dark theme is #171614), so a figure saved in
        the dark theme sits on a dark page without a box around it."""
        return "#171614" if self.dark else "#FFFFFF"

    @property
    def decode(self) -> str:
        # Okabe-Ito blue is too dark on a dark background; its sky blue keeps the hue.
        return OKABE_ITO["sky"] if self.dark else OKABE_ITO["blue"]

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
            concat=dict(spacing=10 if not self.presenter else 16),
        )
