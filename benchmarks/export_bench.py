"""Figure exports (issue 10): a 48-frame GIF of the Side by side timeline in < 5 s, and a
docs-sized PNG. The same figure the app's GIF button and `python -m sim export --format gif`
draw (charts.export.gif: one compiled Vega spec, frames drawn on threads)."""

from charts import export
from charts.theme import Look
from charts.views import timeline
from ui.scenario import scenario_from

GIF_TARGET = 5.0


def _side_by_side():
    s = scenario_from({})
    lanes = timeline(s.run(s.unchunked, 50_000), s.run(s.chunked, 50_000), "prompt")
    return lanes.figure(Look(), 900), lanes.t_max


def cases():
    figure, t_max = _side_by_side()
    return [
        (f"export: {export.GIF_FRAMES}-frame GIF, Side by side at the defaults (900 px)",
         GIF_TARGET, lambda: export.gif(figure, t_max)),
        ("export: PNG at 2x, same figure", None, lambda: export.png(figure)),
    ]
