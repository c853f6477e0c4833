"""The documentation site (mkdocs.yml, docs/): complete, buildable, and without a broken link.

The fast tests need no browser: the API reference is generated from the modules (one page per
public module, by docs/_ext/gen_api.py: adding or moving a module needs no edit here or in
mkdocs.yml), no page speaks of issue numbers, the rules page takes the package's rule book as it
is, and the docstring converter of the site (docs/_ext/rst_docstrings.py) turns reStructuredText
into the Markdown it renders.

The slow tests build the site (``mkdocs build --strict``: a warning fails the build), serve it
over HTTP on localhost and open every page in the system's headless Chromium through Playwright:
every internal link and resource must answer 200, every ``#fragment`` must name an element of
its target page, every built page must be reachable from the home page, no page may fetch
anything from another host (the site works offline), and the search must find pages: a user's
topic typed into it answers with the guide page that explains it, not with a research note.
``make test-docs`` runs them on the site it has just built (``CONQUIAN_DOCS_SITE=site``); without
mkdocs (the ``docs`` extra) or Chromium they are skipped, saying why.
"""

from __future__ import annotations

import ast
import csv
import functools
import http.server
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGES = ("conquian_env", "agents", "conquian_arena", "conquian_train")


def _public_modules() -> set[str]:
    """Every module of the three packages whose name (and whose package's) has no leading underscore."""
    found = set()
    for pkg in PACKAGES:
        found.add(pkg)
        for info in pkgutil.walk_packages([str(ROOT / pkg)], prefix=f"{pkg}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.add(info.name)
    return found


def _nav_pages(nav) -> list[str]:
    pages = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def _load_config() -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML reads mkdocs.yml (it comes with mkdocs: the docs extra)")
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def _ext(name: str):
    """A module of docs/_ext (the site's build scripts), loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"docs_ext_{name}", DOCS / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- without a browser
def test_the_api_reference_is_generated_from_the_modules():
    gen = _ext("gen_api")
    generated = gen.public_modules()
    # every module that imports as a public one (pkgutil) has its page; the generator finds more only
    # where pkgutil cannot look without an optional extra (conquian_env.jax needs jax to import)
    assert _public_modules() - set(generated) == set(), "public modules the API reference leaves out"
    assert [m for m in generated if m not in _public_modules() and not m.startswith("conquian_env.jax")] == []
    assert len(generated) == len(set(generated))
    pages = gen._pages()
    for module in generated:
        assert pages[gen.page_of(module)].endswith(f"::: {module}\n")
        assert f"]({gen.page_of(module)})" in pages["SUMMARY.md"], f"{module} missing from the API nav"
        assert f"[`{module}`]({gen.page_of(module)})" in pages["index.md"], f"{module} missing from the overview"
    # nothing hand-kept: no page under docs/api/, no module line in mkdocs.yml's nav
    assert not (DOCS / "api").exists() or list((DOCS / "api").rglob("*.md")) == []
    nav = _nav_pages(_load_config()["nav"])
    assert "api/" in nav and [p for p in nav if p.startswith("api/") and p != "api/"] == []
    # and every page the nav names exists (mkdocs would only warn about a missing one)
    assert [p for p in nav if not p.endswith("/") and not (DOCS / p).is_file()] == []


def test_a_new_module_gets_its_page(tmp_path):
    # found in the folders, not listed: a module added (or moved) is in the reference at the next build
    gen = _ext("gen_api")
    for package in gen.PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f'"""The {package} package."""\n')
    (tmp_path / "agents" / "newbot.py").write_text('"""A new bot | its one line.\n\nMore."""\n')
    (tmp_path / "agents" / "_private.py").write_text("")
    (tmp_path / "agents" / "family").mkdir()
    (tmp_path / "agents" / "family" / "__init__.py").write_text("")
    (tmp_path / "agents" / "family" / "twin.py").write_text("")
    (tmp_path / "agents" / "data").mkdir()  # no package: nothing in it is a module
    (tmp_path / "agents" / "data" / "make.py").write_text("")
    assert gen.public_modules(tmp_path) == [
        "conquian_env", "agents", "agents.family", "agents.family.twin", "agents.newbot",
        "conquian_arena", "conquian_train",
    ]  # fmt: skip
    assert gen.page_of("agents.family.twin") == "agents/family.twin.md"
    assert gen.summary_line("agents.newbot", tmp_path) == "A new bot &#124; its one line."


# an issue tracker's numbers mean nothing to a reader of the docs (who has no tracker): "issue 28",
# "issues 7 and 9", "#28"; a fragment (rules.md#6-stakes), an entity (&#124;) or code (``#2``) is none
_ISSUE = re.compile(r"\b(?:issues?|pr|pull request)\s*#?\s*\d+|(?<![\w&#/.`])#\d+(?![\w-])", re.I)


def _issue_references(text: str) -> list[str]:
    return [m.group(0) for m in _ISSUE.finditer(text)]


def test_the_issue_pattern():
    found = _issue_references("as issue 28 asks; Issues 7; (#28); see #9.")
    assert found == ["issue 28", "Issues 7", "#28", "#9"]
    assert _issue_references("[s6](rules.md#6-stakes), a &#124; b, ``#2``, (#what-is-in-it), 28 issues") == []


def test_no_page_of_the_docs_names_an_issue_number():
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    found = {p.relative_to(ROOT).as_posix(): _issue_references(p.read_text()) for p in pages}
    assert {page: refs for page, refs in found.items() if refs} == {}
    # nor the API pages, which are the public modules' docstrings
    gen = _ext("gen_api")
    in_docstrings = {}
    for module in gen.public_modules():
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        path = path if path.is_file() else ROOT.joinpath(*module.split("."), "__init__.py")
        tree = ast.parse(path.read_text())
        nodes = [
            tree,
            *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))),
        ]
        refs = [r for n in nodes for r in _issue_references(ast.get_docstring(n) or "")]
        if refs:
            in_docstrings[module] = refs
    assert in_docstrings == {}


def test_the_readme_ladder_is_the_ladders_files():
    # the README's ladder table, hand-written, says what docs/ladder/ratings.csv says (the home page's is
    # generated from that file by docs/_ext/sections.py)
    readme = (ROOT / "README.md").read_text()
    assert "\n## The bot ladder\n" in readme
    readme = readme.split("\n## The bot ladder\n", 1)[1].split("\n## ", 1)[0]
    with open(DOCS / "ladder" / "ratings.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        elo, low, high = (round(float(r[k])) for k in ("elo", "elo_low", "elo_high"))
        line = next((ln for ln in readme.splitlines() if ln.startswith(f"| `{r['spec']}`")), None)
        assert line is not None, f"the README's ladder has no row for {r['spec']}"
        assert f"{elo:+d} [{low:+d}, {high:+d}] | {float(r['score']):.3f}" in line, line
    pytest.importorskip("mkdocs", reason="docs/_ext/sections.py is a mkdocs hook (the docs extra)")
    table = _ext("sections").ladder_table()
    assert all(f"| `{r['spec']}` |" in table for r in rows)


def test_the_research_notes_nav_is_their_folder():
    # a research note added under docs/experiments/ is in the site's nav with no line in mkdocs.yml
    pytest.importorskip("mkdocs", reason="docs/_ext/sections.py is a mkdocs hook (the docs extra)")
    nav = _ext("sections").research_nav().splitlines()
    notes = sorted((DOCS / "experiments").rglob("*.md"))
    assert nav[0].endswith("](README.md)")
    assert sorted(line.rsplit("](", 1)[1][:-1] for line in nav) == sorted(
        p.relative_to(DOCS / "experiments").as_posix() for p in notes
    )
    assert "experiments/" in _nav_pages(_load_config()["nav"])


def test_the_rules_page_is_the_package_rule_book():
    # included at build time (pymdownx.snippets), never a hand-made copy that can drift
    text = (DOCS / "rules.md").read_text()
    front, sep, rest = text.partition("\n---\n")
    assert front == "---\nsearch:\n  boost: 3" and sep  # its front matter ranks it in the search, nothing else
    lines = [line for line in rest.splitlines() if line.strip()]
    snippets = [line for line in lines if line.startswith("--8<--")]
    assert snippets == ['--8<-- "conquian_env/RULES.md"']
    assert all(line.startswith(("--8<--", "<!--")) or line.endswith("-->") or "`" in line for line in lines)


def test_the_readme_links_to_pages_that_exist():
    # the README is the first page a newcomer reads: its links into docs/ must not dangle
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert local, "the README links to no page of the docs"
    assert [t for t in local if not (ROOT / t).is_file()] == []
    linked = {t for t in local if t.startswith("docs/")}
    topics = {p.relative_to(ROOT).as_posix() for p in DOCS.glob("*.md")} - {"docs/index.md", "docs/rules.md"}
    assert topics - linked == set(), "topic pages the README's table does not link to"


def _converter():
    pytest.importorskip("griffe", reason="the docstring converter is a griffe extension (the docs extra)")
    return _ext("rst_docstrings").convert


def test_docstring_converter_roles_blocks_doctests():
    convert = _converter()
    text = "See :class:`~conquian_env.game.GameState` and :func:`encode`.\n\nLike so::\n\n    a = 1\n    b = 2\n\nEnd."
    assert convert(text) == ("See `GameState` and `encode`.\n\nLike so:\n\n```python\na = 1\nb = 2\n```\n\nEnd.")
    assert convert(">>> import x\n>>> x.y()\n\nafter") == "\n```pycon\n>>> import x\n>>> x.y()\n```\n\n\nafter"
    # a "::" with no indented block after it is prose, left alone
    assert convert("ratio a::b\nnext") == "ratio a::b\nnext"


def test_docstring_converter_simple_tables():
    convert = _converter()
    table = "\n".join(
        [
            "====  ======  ==============",
            "slot  length  contents",
            "====  ======  ==============",
            "0     40      own hand, the cards",
            "              still held",
            "400   20      a | b, ``x | y``",
            "====  ======  ==============",
            "after",
        ]
    )
    assert convert(table).split("\n") == [
        "",
        "| slot | length | contents |",
        "| --- | --- | --- |",
        "| 0 | 40 | own hand, the cards still held |",
        "| 400 | 20 | a &#124; b, ``x | y`` |",
        "",
        "after",
    ]
    headless = "====  ====\nkey   the value\n      goes on\nk2    v2\n====  ===="
    assert convert(headless).split("\n") == [
        "",
        "|  |  |",
        "| --- | --- |",
        "| key | the value goes on |",
        "| k2 | v2 |",
        "",
    ]


# --------------------------------------------------------------------------- the built site, in Chromium
def _mkdocs_missing() -> str | None:
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ModuleNotFoundError:
            return module
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    given = os.environ.get("CONQUIAN_DOCS_SITE")
    if given:
        path = Path(given) if Path(given).is_absolute() else ROOT / given
        assert (path / "index.html").is_file(), f"CONQUIAN_DOCS_SITE={given}: no built site there (make docs)"
        return path
    missing = _mkdocs_missing()
    if missing:
        pytest.skip(f"{missing} is not installed: pip install -e '.[docs]' (make docs)")
    if not (ROOT / ".docs-vendor/iframe-worker/shim/index.js").is_file():  # the search shim, from npm
        fetched = subprocess.run(["make", "-s", "docs-vendor"], cwd=ROOT, capture_output=True, text=True)
        if fetched.returncode != 0:
            pytest.skip(f"make docs-vendor could not fetch the iframe-worker shim (npm): {fetched.stderr[-300:]}")
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}"
    return out


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def server(site):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def tab(browser, server):
    """A page whose requests to any other host are recorded (the browser cannot resolve other hosts)."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.outside: list[str] = []
    page.errors: list[str] = []
    page.on("pageerror", lambda err: page.errors.append(str(err)))

    def request(r):
        if not r.url.startswith((server, "data:", "blob:")):
            page.outside.append(r.url)

    page.on("request", request)
    yield page
    context.close()


_COLLECT = """() => ({
    links: Array.from(document.querySelectorAll('a[href]'), a => a.href),
    resources: [
        ...Array.from(document.querySelectorAll('img[src], script[src]'), e => e.src),
        ...Array.from(document.querySelectorAll('link[href]'), e => e.href),
    ],
    ids: Array.from(document.querySelectorAll('[id], a[name]'), e => e.id || e.getAttribute('name')),
})"""


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def _is_page(path: str) -> bool:
    return path.endswith("/") or path.endswith(".html")


def _canonical(url: str) -> str:
    return url[: -len("index.html")] if url.endswith("/index.html") else url


@pytest.mark.slow
def test_every_internal_link_resolves(site, server, tab):
    queue, seen = deque([server]), {server}
    ids: dict[str, set[str]] = {}
    fragments: list[tuple[str, str, str]] = []  # (on page, target page, fragment)
    broken: list[str] = []
    checked: dict[str, int] = {}
    while queue:
        url = queue.popleft()
        response = tab.goto(url, wait_until="domcontentloaded")
        if response is None or response.status != 200:
            broken.append(f"{url}: HTTP {response.status if response else 'no response'}")
            continue
        found = tab.evaluate(_COLLECT)
        ids[url] = {unquote(i) for i in found["ids"]}
        for href in found["links"] + found["resources"]:
            target, fragment = urldefrag(urljoin(url, href))
            if not target.startswith(server):
                continue  # another site: not ours to check (and the page never fetched it: see below)
            target = _canonical(target)
            if fragment:
                fragments.append((url, target, unquote(fragment)))
            if _is_page(urlparse(target).path):
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
            elif target not in checked:
                checked[target] = _status(target)
                if checked[target] != 200:
                    broken.append(f"{target} (linked from {url}): HTTP {checked[target]}")
    for page, target, fragment in fragments:
        if target in ids and fragment not in ids[target]:
            broken.append(f"{target}#{fragment} (linked from {page}): no element with that id")
    assert broken == []
    assert tab.outside == [], "pages fetched something from another host: the site must work offline"
    assert tab.errors == [], "script errors on the pages"
    # every page the build made is reachable from the home page
    built = {_canonical(server + p.relative_to(site).as_posix()) for p in site.rglob("*.html") if p.name != "404.html"}
    assert built - set(ids) == set(), "built pages that no link reaches"
    assert len(ids) >= 60  # the topic pages and the API reference


@pytest.mark.slow
def test_search_finds_the_pages(server, tab):
    tab.goto(server)
    hrefs = _search(tab, "MaskablePPO")
    assert any("/training.html" in h for h in hrefs), hrefs
    assert all(h.startswith(server) for h in hrefs)
    assert tab.outside == [] and tab.errors == []


@pytest.mark.slow
def test_the_site_works_from_disk(site, browser):
    """Opened as files (no server): the links point at the pages' files, and nothing is fetched from elsewhere."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith("file:") else outside.append(r.url))
    for link, title in (("rules.html", "the rules"), ("api/index.html", "API reference")):
        page.goto((site / "index.html").as_uri())
        page.locator(f"article a[href='{link}']").first.click()
        page.wait_for_url(f"**/{link}")
        assert title in page.locator("h1").first.inner_text()
    page.locator("article a[href='conquian_env/game.html']").first.click()
    page.wait_for_url("**/api/conquian_env/game.html")
    assert "conquian_env.game" in page.locator("h1").first.inner_text()
    assert outside == []
    context.close()


def _search(page, query: str) -> list[str]:
    """Type ``query`` into the site's search box and return the result links' targets."""
    from playwright.sync_api import TimeoutError as PageTimeout

    results = page.locator(".md-search-result__link")
    # the search worker indexes the site first; a query typed before it is ready is not run, nor is
    # the same text typed again: alternate with a shorter query until the full one gets results
    for attempt in range(30):
        page.fill("input.md-search__input", query[:-1])
        page.fill("input.md-search__input", query)
        try:
            results.first.wait_for(state="attached", timeout=1_000 + 100 * attempt)
            break
        except PageTimeout:  # not ready yet: type it again
            continue
    return results.evaluate_all("links => links.map(a => a.href)")


@pytest.mark.slow
def test_the_search_works_from_disk(site, browser):
    # before: opened from disk the search box stayed at "Type to start searching" (browsers run no Web
    # Worker for file:// pages); the offline plugin's index script and our iframe-worker shim make it work
    assert (site / "assets/javascripts/iframe-worker/shim.js").is_file(), "make docs fetches the shim"
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:")) else outside.append(r.url))
    page.goto((site / "index.html").as_uri())
    hrefs = _search(page, "MaskablePPO")
    assert any("/training.html" in h for h in hrefs), hrefs
    assert all(h.startswith("file:") for h in hrefs)
    assert "matching document" in page.locator(".md-search-result__meta").inner_text()
    # and from a page in a subfolder, whose links to the shim and the index are relative
    page.goto((site / "api/conquian_env/env.html").as_uri())
    assert any("/environment.html" in h for h in _search(page, "Observation layout"))
    assert outside == [], "the search fetched something from another host"
    context.close()


def _search_as_typed(page, query: str) -> list[str]:
    """Type ``query`` into the search box key by key, as a person does, and return the pages of the
    results in their order (each result item is a page; its first link is the page itself)."""
    from playwright.sync_api import TimeoutError as PageTimeout

    items = page.locator(".md-search-result__item")
    for attempt in range(30):  # the index may still be loading: a query typed before it is not run
        page.fill("input.md-search__input", "")
        page.type("input.md-search__input", query, delay=30)
        try:
            items.first.wait_for(state="attached", timeout=1_000 + 100 * attempt)
            break
        except PageTimeout:
            continue
    page.wait_for_timeout(300)  # the last key's results
    hrefs = items.evaluate_all("items => items.map(li => li.querySelector('a').href)")
    return [urldefrag(h)[0].split("?")[0] for h in hrefs]


#: a user's topic and the guide page that explains it
USER_TOPICS = {
    "action mask": "environment.html",
    "observation": "environment.html",
    "reward": "environment.html",
    "train": "training.html",
    "tournament": "tournaments.html",
    "seed": "environment.html",
}


@pytest.mark.slow
def test_the_search_answers_a_users_topic_with_the_guide(site, browser):
    # before: from disk, "action mask" gave three API pages (the scorer, AgileRL, wrappers) and not the
    # environment page, "reward" neither; "train" answered with the experiments' index first and "seed"
    # put a research note (dmcA) in its top three
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto((site / "index.html").as_uri())
    research = (site / "experiments").as_uri()
    tops = {}
    for query, guide in USER_TOPICS.items():
        top = _search_as_typed(page, query)[:3]
        tops[query] = [t.removeprefix(site.as_uri() + "/") for t in top]
        assert len(top) == 3, (query, tops[query])
        assert not any(t.startswith(research) for t in top), f"{query!r}: a research note in the top three {tops}"
        assert (site / guide).as_uri() in top, f"{query!r}: {guide} not in the top three {tops}"
    context.close()


# the widths where material shows both sidebars (the article is narrowest there) and a phone's
@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 420])
def test_no_code_block_runs_off_the_page(server, tab, width):
    # before: at 1280 px the RLlib API page's example lost everything after ~75 characters
    # ("# an algorithm checkpoint direct|") behind a scroll bar
    tab.set_viewport_size({"width": width, "height": 900})
    for page in ("api/conquian_env/integrations.rllib.html", "integrations/sb3.html", "getting-started.html"):
        tab.goto(server + page)
        hidden = tab.evaluate(
            """() => Array.from(document.querySelectorAll('article pre > code'))
                .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.slice(0, 60))"""
        )
        assert hidden == [], f"{page} at {width} px: code cut off on the right: {hidden}"


@pytest.mark.slow
def test_no_table_shows_an_empty_header_row(server, tab):
    # before: the first table of the environment and env pages opened with an empty header bar
    for page in ("environment.html", "api/conquian_env/env.html"):
        tab.goto(server + page)
        shown = tab.evaluate(
            """() => Array.from(document.querySelectorAll('article table thead'))
                .filter(h => h.getBoundingClientRect().height > 0 && !h.textContent.trim()).length"""
        )
        assert shown == 0, f"{page}: {shown} empty header rows shown"
        first = tab.locator("article table").first
        assert first.locator("tbody tr").first.inner_text().startswith("Creation")
        assert first.bounding_box()["height"] > 0


@pytest.mark.slow
def test_the_rules_page_shows_the_rule_book(server, tab):
    rules = (ROOT / "conquian_env" / "RULES.md").read_text()
    tab.goto(server + "rules.html")
    assert tab.locator("h1").first.inner_text().replace("¶", "").strip() == rules.splitlines()[0].lstrip("# ").strip()
    sections = [line[3:].strip() for line in rules.splitlines() if line.startswith("## ")]
    shown = [t.replace("¶", "").strip() for t in tab.locator("article h2").all_inner_texts()]
    assert shown == sections
