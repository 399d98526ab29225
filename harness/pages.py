"""Every page of the app at its defaults, as a visit opens it: its URL path and its heading (the
browser tests check each, the first-render benchmark times each), from the app's one list of
pages (ui/shell/story.py)."""

from ui.shell.story import PAGES, url_path

DEFAULTS = {url_path(p): p.shown_heading for p in PAGES if p.visited}
