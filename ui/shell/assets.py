"""The app's own front-end files (ui/shell/front/: styles and components' scripts), each read once."""

import functools
from pathlib import Path

FRONT = Path(__file__).parent / "front"


@functools.cache
def front(name: str) -> str:
    """A front-end file of the app's own, by its name in ui/shell/front/."""
    return (FRONT / name).read_text(encoding="utf-8")
