"""References that resolve for a reader who cloned the repository: no path outside it (outside
sources are cited in docs/sources.md with their public addresses), every repository file a
docstring, comment, message or document names exists, and nothing is called by a label only
the project's tracker knows ("issue 11", "seed 001" for a source article)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".py", ".toml", ".md", ".txt", ".cfg", ".yml", ".yaml", ".js", ".css", ".html")
# the checks that forbid these words quote them
QUOTE_THE_WORDS = {"tests/test_references.py", "tests/ui/test_words_on_screen.py",
                   "tests/cli/test_help.py"}

OUTSIDE = re.compile(r"\.\./shared|shared/(?:reference|seeds|tools|design|style)|/work/")
REPO_PATH = re.compile(r"(?<![\w./-])((?:sim|ui|cli|charts|pages|tests|benchmarks|docs|tour)/"
                       r"[\w/.-]*\.(?:py|csv|md|toml|json))\b")
TRACKER = re.compile(r"(?<!vLLM )(?<!SGLang )(?<!sarathi-serve )\bissues? #?\d+", re.I)
# the source articles were filed as "seed 000" to "seed 003"; a random seed ("--seed 1") is fine
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
    bad = {"a.py": "# see ../shared/reference/schedulers.md\n(issue 11)\nseed 001's drain\n"
                   "the seeds' arithmetic\nsee shared/reference/x.md\n",
           "b.py": "vLLM issue 8121\nrandom seed 7 (--seed 0)\nseed_scenario()\n--seed 012\n"}
    assert len(hits(OUTSIDE, bad)) == 2
    assert hits(TRACKER, bad) == ["a.py:2: (issue 11)"]
    assert len(hits(ARTICLE_LABEL, bad)) == 2
    assert REPO_PATH.findall("in sim/calibration.py, tour/en/NN-name.md and sim/cost/") == \
        ["sim/calibration.py", "tour/en/NN-name.md"]


def unexplained(pattern: re.Pattern) -> list[str]:
    return [h for h in hits(pattern) if h.split(":")[0] not in QUOTE_THE_WORDS]


def test_no_path_outside_the_repository():
    assert unexplained(OUTSIDE) == []


def test_every_repository_path_named_exists():
    missing = [f"{name}: {path}" for name, text in FILES.items()
               for path in REPO_PATH.findall(text)
               if "NN" not in path and name not in QUOTE_THE_WORDS and not (ROOT / path).exists()]
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
