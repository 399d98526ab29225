"""The learner's path (ui/shell/story.py) and the glossary (ui/shell/glossary.py): every page on the path
once, in order, each ending with its "Next"; Home's chapters filled from the run; every term the
issue names defined in one place."""

import re
from pathlib import Path

import pytest

from tests.support.apptest import ALL_PAGES, ROOT, assert_clean, open_app, page_links
from ui.learn import words
from ui.shell import controls, glossary, story
from ui.shell.glossary import ACRONYMS, TERMS, first, term


def test_every_page_script_is_on_the_path_once_beginners_first():
    paths = [p.path for p in story.PAGES]
    assert sorted(paths) == sorted(ALL_PAGES) and len(set(paths)) == len(paths)
    assert paths[0] == "pages/learn/home.py"
    sections = list(dict.fromkeys(p.section for p in story.PAGES))
    assert sections == ["Learn", "Under load", "Across GPUs", "Advanced", "Teach"]
    # a section's pages are next to each other, so the sidebar shows the path in order
    assert [p.section for p in story.PAGES] == sorted((p.section for p in story.PAGES),
                                                      key=sections.index)
    assert story.BY_PATH["pages/advanced/fidelity.py"].section == "Advanced"


def test_the_page_folders_are_the_sidebars_sections_in_its_order():
    folders = sorted({Path(p).parent.name for p in ALL_PAGES})
    assert sorted(story.SECTIONS) == folders
    in_sidebar = list(dict.fromkeys(p.section for p in story.PAGES))
    assert in_sidebar == list(story.SECTIONS.values())
    assert all(story.SECTIONS[Path(p.path).parent.name] == p.section for p in story.PAGES)


def test_every_page_keeps_its_address_whatever_its_folder():
    """Slides and bookmarks link to /<page>: a page's address is its file's name, never its
    folder, so moving a page between sections keeps its links."""
    assert {Path(p.path).stem for p in story.PAGES} == {
        "home", "side_by_side", "worked_example", "roofline", "exactness", "budget_tradeoff",
        "traffic",
        "long_short", "prefix_caching", "disaggregation", "pipeline",
        "capacity", "memory", "fidelity", "tour"}


def test_next_walks_the_whole_path_and_back_home():
    seen, page = [], story.PAGES[0]
    for _ in story.PAGES:
        seen.append(page.path)
        page = story.next_page(page.path)
    assert seen == [p.path for p in story.PAGES] and page is story.PAGES[0]


def test_app_builds_the_sidebar_from_the_path():
    source = (ROOT / "app.py").read_text()
    assert "story.PAGES" in source and "st.Page(" in source
    assert not re.search(r'st\.Page\("pages/', source)          # no second list of pages


@pytest.mark.parametrize("page", [p for p in story.PAGES if p.visited], ids=lambda p: p.title)
def test_each_visited_page_opens_under_its_address_with_its_heading(page):
    """What the browser tests and the first-render benchmark read of the one list of pages: the
    page at its address shows the heading the list gives it, and its own controls are ones the
    app has (the link fuzzer draws its links from them)."""
    at = open_app(page.path)
    assert_clean(at)
    assert page.shown_heading == (at.title or at.header)[0].value
    assert set(page.controls) <= set(controls.CONTROLS)
    assert story.url_path(page) == ("" if page is story.PAGES[0] else Path(page.path).stem)


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_page_ends_with_next(page):
    """Every page but the tour, whose own Next moves on (a second, to Home, would compete)."""
    at = open_app(page)
    assert_clean(at)
    if page == "pages/teach/tour.py":
        assert not [link for link in page_links(at) if link.startswith("Next:")]
        return
    after = story.next_page(page)
    assert page_links(at)[-1] == f"Next: {after.title}: {after.what}"


def test_the_chapters_are_filled_from_the_run_and_link_to_pages_on_the_path():
    at = open_app()
    text = "\n".join(m.value for m in at.markdown)
    assert "{" not in text and "}" not in text                 # every field filled
    assert "a decode step of the 64 streams takes **5.333 ms**" in text
    assert "the whole prompt in one pass takes **327.7 ms**" in text
    assert "327.7 ms + 5.333 ms = **333 ms**" in text     # the prompt iteration, then the wait
    assert "falls from 333 ms to 23.04 ms (14.5× shorter), and 0 of the 64 streams freeze" in text
    assert "takes up to 23.04 ms instead of a 5.333 ms decode step" in text
    assert "61,440 token-reads × 131 kB = 8.05 GB, 2.684 ms at 3 TB/s" in text   # the KV re-read
    titles = [h.value for h in at.subheader]
    assert titles[:7] == ["1. Two kinds of work in one pass", "2. One long prompt freezes every stream",
                          "3. Split it: a budget B, a chunk C = B − D",
                          "4. What it costs, what it buys", "5. The budget is a dial",
                          "6. Under real traffic", "7. Across GPUs"]
    for chapter in story.CHAPTERS:
        assert chapter.pages and all(p in story.BY_PATH for p in chapter.pages)
    links = page_links(at)
    for chapter in story.CHAPTERS:
        for path in chapter.pages:
            page = story.BY_PATH[path]
            assert f"{page.title}: {page.what}" in links


def test_story_fields_name_every_field_the_chapters_use():
    used = {name for c in story.CHAPTERS for name in re.findall(r"\{(\w+)\}", c.text)}
    import sim
    w = sim.textbook_scenario()
    u, c = sim.run(w, "vllm-v0", mode="simple"), sim.run(w, "sarathi", mode="simple")
    fields = words.story_fields(u, c, sim.CostModel(sim.get_gpu("illustrative"),
                                                    sim.get_model("dense-8b"), "simple"))
    assert used <= set(fields)


def test_the_glossary_defines_every_term_the_learner_meets():
    names = {t.name for t in TERMS.values()}
    for needed in ("TTFT", "TBT", "ITL", "TPOT", "prefill", "decode", "stream", "iteration",
                   "token budget",
                   "chunk", "KV", "SLO", "p50 / p99", "roofline", "compute-bound", "memory-bound",
                   "disaggregation", "prefill pool", "decode pool", "KV transfer", "goodput"):
        assert needed in names
    assert ACRONYMS["TTFT"] == "time to first token" and "prefill" not in ACRONYMS
    assert all(t.definition.endswith(".") for t in TERMS.values())
    assert len(glossary.entries()) == len(TERMS)


def test_glossary_markup_shows_the_word_and_hides_nothing_unsafe():
    assert first("ttft") == ('time to first token (<abbr title="From a request&#x27;s arrival to '
                             'its first output token: queue wait + prefill.">TTFT</abbr>)')
    assert first("ttft", hover=False) == "time to first token (TTFT)"
    assert term("prefill", "Prefill").startswith('<span class="glossary-term" title="Processing')
    assert term("prefill", "Prefill").endswith(">Prefill</span>")


def test_the_glossary_is_in_the_sidebar_of_every_page():
    at = open_app("pages/learn/roofline.py")
    entries = [m.value for m in at.sidebar.markdown if "**TTFT** (time to first token)" in m.value]
    assert len(entries) == 1 and all(f"**{t.name}**" in entries[0] for t in TERMS.values())


def test_no_page_script_writes_a_term_before_defining_it_in_code():
    """One glossary: no page defines TTFT or TBT in its own words."""
    for path in ALL_PAGES:
        source = Path(ROOT, path).read_text()
        assert "time to first token (TTFT)" not in source, path


@pytest.mark.parametrize("query, freeze, split, trade", [
    (dict(prompt=100), "2. A pass this short freezes no stream",
     "3. A budget B, a chunk C = B − D: here the budget holds the whole prompt",
     "4. What it costs, what it buys"),   # the prompt rides with the decodes: a 2x shorter wait
    (dict(decodes=0), "2. One prompt in one pass, no stream to freeze",
     "3. Split it: a budget B, a chunk C = B − D", "4. What it costs; with no streams, it buys nothing"),
])
def test_home_titles_its_chapters_by_what_the_run_shows(query, freeze, split, trade):
    at = open_app(**query)
    assert_clean(at)
    assert [h.value for h in at.subheader][1:4] == [freeze, split, trade]
