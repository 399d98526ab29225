"""The pages the browser tests visit: every page at its defaults, and at the extreme settings the
AppTest tests use (tests/ui), in the light theme and two in the dark."""

from harness.pages import DEFAULTS

EXTREMES = [
    "side_by_side?gpu=mi300x&model=qwen2.5-7b&prompt=1000000&decodes=1024&context=100",
    "side_by_side?budget=0&decodes=99999&gpu=h100&mode=fast&presenter=1",
    "roofline?gpu=h100-sxm&model=llama-3.1-8b&mode=calibrated&tp=2&compare=true",
    "fidelity?gpu=h100-sxm&model=llama-3.1-8b&tp=2&why=decode",
    "traffic?burst=300&decodes=4096&context=1&budget=4160",
    "budget_tradeoff?burst=10&prompt=65536&decodes=0&bmin=1&bmax=4",
    "capacity?slo=custom&tbtslo=250",
    "memory?gpu=l4&model=yi-34b",
]
VISITS = ([(path, "light") for path in (*DEFAULTS, *EXTREMES)]
          + [("", "dark"), ("roofline", "dark"), ("traffic", "dark")])


def ids(visits) -> list[str]:
    """Test ids that say the theme and the page."""
    return [f"{scheme}:/{path}" for path, scheme in visits]
