"""Chunked Prefill Lab: `streamlit run app.py`.

The entrypoint draws what every page shares (the controls in the sidebar, each bound to its URL
key) and routes to the page scripts in pages/<section>/. Only subfolders, never a `.py` directly
in `pages/`: on Streamlit 1.67, while no session has called st.navigation yet, a script directly in
`pages/` is a legacy page, and a deep link to it (e.g. a slide's link to /roofline, the first
request after `make run`) runs it alone, without this frame and its sidebar. The legacy scan does
not look into subfolders, so every deep link runs through here (pinned by a browser test).
"""

import runpy
from pathlib import Path

import streamlit as st

from ui.shell import presenter, story, widgets
from ui.teach import tour_view

# The favicon ships with the app: a ":material/..." page icon is fetched from Google's font CDN.
st.set_page_config(page_title="Chunked Prefill Lab", layout="wide",
                   page_icon=str(Path(__file__).parent / "static" / "favicon.png"))
sections: dict[str, list] = {}
for entry in story.PAGES:   # the learner's path: beginners' pages first (ui/shell/story.py)
    default = entry is story.PAGES[0]
    sections.setdefault(entry.section, []).append(
        st.Page(entry.path, title=entry.title, icon=entry.icon, default=default,
                url_path="start" if default else None))
# Home is served at the root, yet its file's name reads as a link: /home (typed, bookmarked, or a
# page list built from the files) runs Home's script with the link's values, not "Page not found".
# Streamlit keeps a default page's inferred path reserved, hence Home's own path above.
sections[story.PAGES[0].section].append(st.Page(
    lambda: runpy.run_path(story.PAGES[0].path, run_name="__main__"),
    title=story.PAGES[0].title, url_path="home", visibility="hidden"))
# every page listed: Streamlit folds a long list behind "View more", which hid Advanced and Teach
page = st.navigation(sections, expanded=True)   # before the sidebar: the tour sets its controls (tour_view.enter)
first_run = widgets.apply_link_corrections()
on_tour = page.url_path == tour_view.URL_PATH
tour_view.enter(on_tour, first_run)
widgets.sidebar()
presenter.setup(widgets.look(), stage=on_tour)   # after the sidebar: its toggles' values come from the link
widgets.readable_css()
widgets.glossary()
widgets.show_link_notes()
page.run()
if not on_tour:   # the tour's own Next moves on; a second Next, to Home, would compete with it
    widgets.next_link(page.title)   # not after a page's st.stop(): Streamlit drops what follows it
