"""mkdocs hook: the search works from disk (file://).

Browsers run no Web Worker for a page opened from disk, and material's search runs in one.
material's ``offline`` plugin inlines the search index into ``search/search_index.js`` and
loads the worker through the ``iframe-worker`` shim, which it takes from a CDN unless
``extra.polyfills`` already names one.  mkdocs.yml names ours, and this hook copies it into
the built site from ``.docs-vendor/`` (git-ignored), where ``make docs`` fetches it from the
npm registry (``npm pack``): no third-party code is committed, and the pages fetch nothing
from another host.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError

VENDOR = Path(__file__).resolve().parents[2] / ".docs-vendor" / "iframe-worker"
#: where mkdocs.yml's extra.polyfills points (relative to the site)
TARGET = Path("assets/javascripts/iframe-worker")


def on_post_build(config, **kwargs) -> None:
    shim = VENDOR / "shim" / "index.js"
    if not shim.is_file():
        raise PluginError(
            f"{shim} is missing: the search from disk needs the iframe-worker shim; "
            "`make docs` fetches it (npm pack iframe-worker into .docs-vendor/)"
        )
    out = Path(config["site_dir"]) / TARGET
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shim, out / "shim.js")
    shutil.copyfile(VENDOR / "LICENSE", out / "LICENSE")  # MIT: the notice travels with the code
