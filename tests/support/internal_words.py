"""Examples of words that make sense only inside the project's own tracker: how it filed the
source articles (a label and a number) and how it numbers its work items, and the path of the
reference notes kept beside the repository. The tests that forbid such words anywhere a reader
sees them check their patterns against these; the examples are built from their parts so that
the repository itself never spells one."""

ARTICLE = "seed"                                # the tracker's word for a source article
ARTICLE_LABEL = f"{ARTICLE} 0{0}1"              # how it filed the first worked example's article
ARTICLES = f"{ARTICLE}s'"                       # the same word for all four, possessive
WORK_ITEM = f"{'iss'}ue 1{1}"                   # one of its numbered work items
UPSTREAM_THREAD = f"vLLM {'iss'}ue 8121"         # a public engine's thread, which may be cited
NOTES_PATH = "../" + "shared/" + "reference" # its reference notes, outside the repository
WORKPLACE = "/" + "work/"                       # the folder the checkout sits in on its machines
