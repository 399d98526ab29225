"""GEMM tiles in one iteration: the rows the calibrated mode's GEMMs compute for the iteration's
tokens (decode rows and chunk together), and what the empty rows of its last tile cost. The
Roofline page's tile steps and budget readout and the worked example's last chunk read them.

A GEMM runs whole tiles of `tile` token rows (`sim.cost.calibration.padded_rows`), so an iteration
of 257 tokens computes 320 rows and costs about what one of 320 does; the empty rows' time is the
iteration's time less the same iteration with its token GEMMs on exactly its tokens (the LM
head's rows, one per emitted token, keep their own tile). The simple and roofline modes have
no tiles: their rows are their tokens and nothing is wasted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.cost.calibration import padded_rows, tile_used
from sim.cost.iteration import Composition, CostModel


@dataclass(frozen=True)
class TiledIteration:
    """One iteration's tokens, the rows its GEMMs compute, and its time with and without the
    empty rows."""

    tokens: int
    tile: int | None          # the tile in force (None: a mode without tiles)
    rows: int                 # padded_rows(tokens, tile)
    time_s: float             # the iteration as the mode prices it
    exact_time_s: float       # the same iteration with the token GEMMs on exactly `tokens` rows

    @property
    def wasted_rows(self) -> int:
        return self.rows - self.tokens

    @property
    def wasted_s(self) -> float:
        return self.time_s - self.exact_time_s

    @property
    def wasted_share(self) -> float:
        """The empty rows' share of the iteration's time."""
        return self.wasted_s / self.time_s if self.time_s else 0.0

    @property
    def tile_here(self) -> int | None:
        """The tile these tokens run on: the mode's, or a smaller one below it."""
        return None if self.tile is None or not self.tokens else tile_used(self.tokens, self.tile)


def tiled(cost: CostModel, composition: Composition) -> TiledIteration:
    """`composition` priced by `cost`, with its GEMM rows and the time the empty ones take."""
    aggregates = cost.aggregates(composition)
    tokens, tile = composition.tokens, cost.gemm_tile
    time_s = cost.time(*aggregates)[2]
    exact_s = cost.time(*aggregates, token_tiles=False)[2] if tile else time_s
    return TiledIteration(tokens, tile, int(padded_rows(tokens, tile)), time_s, exact_s)


def tile_multiples(tokens: int, tile: int) -> tuple[int, int]:
    """The whole-tile token counts on either side of `tokens` (both `tokens` where it is one)."""
    below = tile * (tokens // tile)
    return below, tile * math.ceil(tokens / tile)
