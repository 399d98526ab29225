"""Draw docs/path-*.png: one picture per chapter of the learner's path (ui/shell/story.py), the
chapter as Home tells it above what the page it leads to shows at that point of the story.

    .venv/bin/python docs/learners_path.py      # from the project root; needs /usr/bin/chromium

Serves the app once at its defaults, opens each page in Debian's Chromium at 1440 × 1000 and
keeps the PNGs small: 900 px wide, 64 colours.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # run as a script from the root: the project's packages

from harness.browser import CHARTS, CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from harness.server import streamlit_server  # noqa: E402
from ui.shell.story import CHAPTERS  # noqa: E402

WIDTH = 900
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"


def settle(page) -> None:
    page.wait_for_selector(READY, timeout=60_000)
    page.wait_for_timeout(1500)


def shot(locator) -> Image.Image:
    locator.scroll_into_view_if_needed()
    return Image.open(io.BytesIO(locator.screenshot())).convert("RGB")


def paused_player(page, url: str, t_s: float) -> Image.Image:
    """Side by side, played to `t_s` and paused: the stall as it happens."""
    page.goto(f"{url}/side_by_side")
    settle(page)
    frame = page.wait_for_selector("iframe").content_frame()
    frame.wait_for_function("window.playerReady === true", timeout=30_000)
    frame.get_by_test_id("player-play").click()
    frame.wait_for_function(f"window.playerState.t >= {t_s}", timeout=30_000)
    frame.get_by_test_id("player-play").click()
    page.wait_for_timeout(500)
    return shot(page.locator("iframe"))


def deeper(page, url: str, chapter: str) -> Image.Image:
    """What the chapter's page shows at this point of the story."""
    if chapter == "freeze":
        return paused_player(page, url, 0.2)
    path, target = {
        "two-kinds": ("roofline", lambda: page.locator(CHARTS).first),
        "split": ("worked_example", lambda: page.locator(".st-key-worked-chunk")),
        "trade": ("side_by_side", lambda: page.get_by_test_id("stHorizontalBlock")
                  .filter(has_text="Streams frozen").last),
        "dial": ("budget_tradeoff", lambda: page.locator(CHARTS).first),
        "traffic": ("traffic", lambda: page.locator('[data-testid="stMarkdown"]:has(table)').first),
        "across-gpus": ("disaggregation", lambda: page.locator(".st-key-main-figure iframe")),
    }[chapter]
    page.goto(f"{url}/{path}")
    settle(page)
    if chapter == "across-gpus":   # the lanes' player, drawn at the run's end
        frame = page.wait_for_selector(".st-key-main-figure iframe").content_frame()
        frame.wait_for_function("window.playerReady === true", timeout=30_000)
    if chapter == "split":
        page.get_by_text("Show every step at once").click()
        settle(page)
    return shot(target())


def stacked(top: Image.Image, bottom: Image.Image) -> Image.Image:
    """The two pictures one above the other, `WIDTH` wide, a rule between them, 64 colours."""
    scaled = [im.resize((WIDTH, round(im.height * WIDTH / im.width))) for im in (top, bottom)]
    out = Image.new("RGB", (WIDTH, scaled[0].height + scaled[1].height + 9), "white")
    out.paste(scaled[0], (0, 0))
    out.paste(Image.new("RGB", (WIDTH, 1), "#aab2bf"), (0, scaled[0].height + 4))
    out.paste(scaled[1], (0, scaled[0].height + 9))
    return out.quantize(colors=64, method=Image.Quantize.MEDIANCUT)


def main() -> None:
    from playwright.sync_api import sync_playwright

    with streamlit_server(ROOT / "app.py", Path("/tmp/learners_path.log")) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        for i, chapter in enumerate(CHAPTERS, 1):
            page.goto(url)
            settle(page)
            told = shot(page.locator(f".st-key-chapter-{chapter.id}"))
            out = ROOT / "docs" / f"path-{i}-{chapter.id}.png"
            stacked(told, deeper(page, url, chapter.id)).save(out, optimize=True)
            print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size:,} bytes)")
        browser.close()


if __name__ == "__main__":
    main()
