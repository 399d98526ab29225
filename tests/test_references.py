"""References that resolve for a reader who cloned the repository: no path outside it (outside
sources are cited in docs/sources.md with their public addresses), every repository file a
docstring, comment, message or document names exists, and nothing is called by a label only
the project's tracker knows (its work-item numbers, its label for a source article: examples in
tests/support/internal_words.py)."""

import re
import subprocess
from pathlib import Path

import pytest

from tests.support import internal_words as example

ROOT = Path(__file__).resolve().parents[1]
THIS = "tests/test_references.py"   # its self-test names paths that do not exist
TEXT = (".py", ".toml", ".md", ".txt", ".cfg", ".yml", ".yaml", ".js", ".css", ".html")

OUTSIDE = re.compile(r"\.\./shared|shared/(?:reference|seeds|tools|design|style)|" + example.WORKPLACE)
REPO_PATH = re.compile(r"(?<![\w./-])((?:sim|ui|cli|charts|pages|tests|benchmarks|docs|tour)/"
                       r"[\w/.-]*\.(?:py|csv|md|toml|json))\b")
TRACKER = re.compile(r"(?<!vLLM )(?<!SGLang )(?<!sarathi-serve )\bissues? #?\d+", re.I)
# the tracker's label for a source article (a word and a number from 000); a random seed
# ("--seed 1") is fine
ARTICLE_LABEL = re.compile(r"(?<![-\w])seeds? 0\d+|\bseeds'", re.I)


def tracked_text() -> dict[str, str]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    return {n: (ROOT / n).read_text(encoding="utf-8") for n in names
            if (n.endswith(TEXT) or n == "Makefile") and (ROOT / n).is_file()}


FILES = tracked_text()


def hits(pattern: re.Pattern, files=FILES) -> list[str]:
    return [f"{name}:{n}: {line.strip()[:100]}" for name, text in files.items()
            for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def test_the_patterns_catch_what_they_should_and_only_that():
    bad = {"a.py": f"# see {example.NOTES_PATH}/schedulers.md\n({example.WORK_ITEM})\n"
                   f"{example.ARTICLE_LABEL}'s drain\nthe {example.ARTICLES} arithmetic\n"
                   f"see {example.NOTES_PATH[3:]}/x.md\n",
           "b.py": f"{example.UPSTREAM_THREAD}\nrandom seed 7 (--seed 0)\nseed_scenario()\n"
                   "--seed 012\n"}
    assert len(hits(OUTSIDE, bad)) == 2
    assert hits(TRACKER, bad) == [f"a.py:2: ({example.WORK_ITEM})"]
    assert len(hits(ARTICLE_LABEL, bad)) == 2
    assert REPO_PATH.findall("in sim/calibration.py, tour/en/NN-name.md and sim/cost/") == \
        ["sim/calibration.py", "tour/en/NN-name.md"]


def unexplained(pattern: re.Pattern) -> list[str]:
    return hits(pattern)


def test_no_path_outside_the_repository():
    assert unexplained(OUTSIDE) == []


def test_every_repository_path_named_exists():
    missing = [f"{name}: {path}" for name, text in FILES.items()
               for path in REPO_PATH.findall(text)
               if "NN" not in path and name != THIS and not (ROOT / path).exists()]
    assert missing == []


@pytest.mark.parametrize("pattern", [TRACKER, ARTICLE_LABEL], ids=["tracker", "article-label"])
def test_things_are_called_what_they_are(pattern):
    assert unexplained(pattern) == []


def test_every_paper_and_upstream_thread_cited_has_its_address_in_docs_sources():
    """An arXiv id or an upstream issue or pull request (owner/repo#N) named anywhere is listed in
    docs/sources.md with its public address."""
    sources = FILES["docs/sources.md"]
    cited = {m for name, text in FILES.items() if name != "docs/sources.md"
             for m in re.findall(r"arXiv (\d{4}\.\d{4,5})|([\w-]+/[\w.-]+)#(\d+)", text)}
    assert cited
    assert [f"arXiv {paper}" for paper, _, _ in cited
            if paper and f"https://arxiv.org/abs/{paper}" not in sources] == []
    assert [f"{repo}#{n}" for _, repo, n in cited if repo and not
            re.search(rf"github\.com/{re.escape(repo)}/(?:issues|pull)/{n}\b", sources)] == []
