"""Stalls: gaps between two tokens of a stream long enough for its reader to see it stop.

The one definition of a freeze, which every counter and sentence of the lab uses: a stream is
*frozen* at time t when its current gap (the time since its last token) exceeds STALL_S = 100 ms,
about the longest delay that still feels instantaneous (J. Nielsen, "Response Times: The 3
Important Limits", 1993: 0.1 s); a gap longer than STALL_S is a *freeze*, and its whole length is
the freeze's duration (so a lane where no gap exceeds STALL_S has no frozen time at all).
Percentiles hide such a freeze: one 333 ms gap among a stream's 256 gaps is 0.4% of them, below
the p99. These counts do not: how many streams froze, how long each was frozen, and how many gaps
went over the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import check_number
from sim.serving.engine import Trace
from sim.serving.metrics import Percentiles, token_gaps

STALL_S = 0.1
STALL_SOURCE = "J. Nielsen, Response Times: The 3 Important Limits (1993): 0.1 s feels instantaneous"


def frozen_for(wait_s, threshold_s: float = STALL_S):
    """How long a stream has been frozen after waiting `wait_s` since its last token (a number or
    an array): the whole wait once it exceeds the threshold, 0 before. What a live counter shows."""
    wait = np.asarray(wait_s, dtype=float)
    out = np.where(wait > threshold_s, wait, 0.0)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class Stalls:
    threshold_s: float
    streams: int                # streams counted (requests with two tokens or more among those asked)
    frozen_streams: int         # streams with at least one gap over the threshold
    gaps: int                   # gaps between two tokens of those streams
    gaps_over: int              # of which over the threshold
    frozen_per_stream_s: float  # mean over the streams of the sum of their gaps over the threshold
    largest_gap_s: float        # NaN when there are no gaps
    steady_gap_s: float         # p99 of the gaps: the pace a stream keeps outside rare freezes
    median_gap_s: float = float("nan")   # p50 of the gaps

    @property
    def share(self) -> float:
        """The share of all gaps that are freezes (NaN without gaps): a freeze reaches the p99
        only when this passes about 1%, the p50 only past 50%."""
        return self.gaps_over / self.gaps if self.gaps else float("nan")


def stalls(trace: Trace, threshold_s: float = STALL_S, streams: np.ndarray | None = None) -> Stalls:
    """The freezes of the streams `streams` (a mask over requests; default every request)."""
    threshold_s = check_number("stall threshold (s)", threshold_s, high=3600)
    gaps, owner = token_gaps(trace)
    if streams is not None:
        keep = np.asarray(streams, bool)[owner]
        gaps, owner = gaps[keep], owner[keep]
    counted = np.unique(owner)
    over = gaps > threshold_s
    frozen_s = np.bincount(owner[over], weights=gaps[over], minlength=len(trace.arrival_s))
    spread = Percentiles.of(gaps)   # NaN where there are no gaps
    return Stalls(
        threshold_s, len(counted), len(np.unique(owner[over])), len(gaps), int(over.sum()),
        float(frozen_s[counted].mean()) if len(counted) else float("nan"),
        spread.max, spread.p99, spread.p50)
