"""Take the README's pictures of the browser pages with the system's headless Chromium.

    .venv/bin/python docs/screenshots.py        # writes docs/images/replay_page.png and play_page.png

Needs what tests/test_web.py needs: Chromium (apt-get install chromium), Playwright and
Flask (the dev extra).  The games are fixed by their seeds, so the pictures are the same
each time (up to font rendering).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents import make_agent  # noqa: E402
from conquian_arena import replay  # noqa: E402
from conquian_arena.human_game import Setup  # noqa: E402
from conquian_arena.match import deal_for_seed, play_game  # noqa: E402
from conquian_arena.webplay import PlayServer, make_http_server  # noqa: E402

IMAGES = ROOT / "docs" / "images"
VIEWPORT = {"width": 1180, "height": 620}


def _small_png(path: Path) -> None:
    """Fewer colours, same look: the pictures stay small in the repository."""
    from PIL import Image

    with Image.open(path) as im:
        im.convert("RGB").quantize(colors=96, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def replay_picture(browser, work: Path) -> Path:
    games = work / "games.jsonl"
    hands, stock = deal_for_seed(31)
    record = play_game([make_agent("greedy", seed=1), make_agent("greedy", seed=2)], hands=hands, stock=stock, seed=3)
    games.write_text(json.dumps(record.to_dict()) + "\n")
    page_path = work / "replay.html"
    assert replay.main([str(games), "--html", str(page_path)], output=lambda *_: None) == 0
    page = browser.new_page(viewport=VIEWPORT)
    step = next(k for k, a in enumerate(record.actions, 1) if a.startswith("meld ") and k > len(record.actions) // 2)
    page.goto(page_path.as_uri() + f"#game=0&step={step}")
    out = IMAGES / "replay_page.png"
    page.screenshot(path=str(out))
    page.close()
    return out


def play_picture(browser) -> Path:
    server = PlayServer(Setup("greedy", seed=12, auto_pass=True), save=None)
    http = make_http_server(server, "127.0.0.1", 0)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"http://127.0.0.1:{http.server_port}/")
    out = IMAGES / "play_page.png"
    try:
        for _ in range(300):  # refuse and discard until, some moves in, a take with a card to lay comes
            page.wait_for_selector('#status[data-status="your-move"]')
            moves = [el.get_attribute("data-move") for el in page.query_selector_all("[data-move]:not([disabled])")]
            version = page.get_attribute("#status", "data-version")
            if "take" in moves and len(page.query_selector_all("#log li")) > 6:
                page.click('button[data-move="take"]')
                page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
                cards = page.query_selector_all('svg[data-move^="meld "]')
                if cards:
                    version = page.get_attribute("#status", "data-version")
                    cards[0].click()
                    page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
                    page.screenshot(path=str(out))
                    return out
                continue
            lay = [m for m in moves if m.startswith("meld ")]
            move = "finish" if "finish" in moves else lay[0] if lay else "refuse" if "refuse" in moves else moves[0]
            page.click(f'[data-move="{move}"]:not([disabled])')
            page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
        raise RuntimeError("no meld came up")
    finally:
        page.close()
        server.stop()
        http.shutdown()


def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for path in (replay_picture(browser, Path(tmp)), play_picture(browser)):
            _small_png(path)
            print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")
        browser.close()


if __name__ == "__main__":
    main()
