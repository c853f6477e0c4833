"""The browser pages, checked as a person would use them: the replay page (``conquian-replay --html``),
the tournament report (``report.html``) and the play page (``conquian-play --web``).

The browser tests drive a real headless Chromium (the system's: ``apt-get install chromium``)
through Playwright (``pip install playwright``; its own browser downloads are never used).
They are skipped, saying why, when either is missing; the tests without a browser always run.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from pathlib import Path

import pytest

from agents import make_agent
from conquian_arena import replay
from conquian_arena.match import deal_for_seed, play_game
from conquian_arena.narration import describe_move
from conquian_arena.record import RecordedGame, load_records, replay_states, result_problem
from conquian_env.cards import CARD_NAMES, cards_of
from conquian_env.rules import Rules
from conquian_env.seeding import derive_seed


def _names(mask: int) -> str:
    return " ".join(CARD_NAMES[c] for c in cards_of(mask))


# --------------------------------------------------------------------------- fixtures
@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    errors: list[str] = []
    tab.on("pageerror", lambda err: errors.append(str(err)))
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield tab
    context.close()
    assert not errors, f"the page reported errors: {errors}"


@pytest.fixture(scope="module")
def games_file(tmp_path_factory) -> Path:
    """Three recorded games (one with the forcing rule) as a games.jsonl file."""
    path = tmp_path_factory.mktemp("games") / "games.jsonl"
    lines = []
    for g, (a, b) in enumerate([("greedy", "random"), ("random", "greedy"), ("greedy", "greedy")]):
        hands, stock = deal_for_seed(20 + g)
        bots = [make_agent(a, seed=1), make_agent(b, seed=2)]
        record = play_game(bots, hands=hands, stock=stock, first=g % 2, rules=Rules(forcing=g == 2), seed=g)
        lines.append(json.dumps(record.to_dict()))
    path.write_text("\n".join(lines) + "\n")
    return path


def _replay_cli(argv):
    out, err = [], []
    rc = replay.main(argv, output=out.append, errors=err.append)
    return rc, "\n".join(out), "\n".join(err)


# --------------------------------------------------------------------------- the replay page
_SHOWN = """() => {
  const t = document.getElementById("table"), q = s => document.querySelector(s);
  return {game: t.dataset.game, step: +t.dataset.step,
          hand0: q('.hand[data-seat="0"]').dataset.cards, hand1: q('.hand[data-seat="1"]').dataset.cards,
          meld0: q('.meld[data-seat="0"]').dataset.cards, meld1: q('.meld[data-seat="1"]').dataset.cards,
          face: q("#face").dataset.card, stock: +q("#stock").dataset.count, dead: q("#dead").dataset.cards,
          text: q("#move-text").innerText, textStep: +q("#move-text").dataset.step,
          current: q("#moves li.current").dataset.step};
}"""


def _expected(state) -> dict:
    return {
        "hand0": _names(state.hands[0]),
        "hand1": _names(state.hands[1]),
        "meld0": _names(state.melds[0]),
        "meld1": _names(state.melds[1]),
        "face": CARD_NAMES[state.face_up] if state.face_up >= 0 else "",
        "stock": state.stock_left,
        "dead": _names(state.dead),
    }


def test_replay_page_steps_through_a_game_with_the_keyboard(page, games_file, tmp_path):
    out = tmp_path / "replay.html"
    rc, text, err = _replay_cli([str(games_file), "--html", str(out)])
    assert rc == 0 and not err and "3 games" in text
    page.goto(out.as_uri())
    assert page.locator("#game option").count() == 3
    games, _ = load_records(games_file)
    game = games[0]
    states, ids = replay_states(game)
    for step, state in enumerate(states):
        shown = page.evaluate(_SHOWN)
        assert shown["game"] == "0" and shown["step"] == step == shown["textStep"] and shown["current"] == str(step)
        assert {k: shown[k] for k in _expected(state)} == _expected(state), f"step {step}"
        if step == 0:
            assert f"turned {CARD_NAMES[state.face_up]} from the stock to start" in shown["text"]
        else:  # the move in words, as the terminal replay says it
            for line in describe_move(states[step - 1], ids[step - 1], state, game.names):
                assert line in shown["text"]
        page.keyboard.press("ArrowRight")
    n = len(ids)
    shown = page.evaluate(_SHOWN)
    assert shown["step"] == n and f"end: {game.result_text()}" in shown["text"]  # the last key did nothing
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(_SHOWN)["step"] == n - 1
    page.keyboard.press("Home")
    assert page.evaluate(_SHOWN)["step"] == 0
    page.keyboard.press("End")
    assert page.evaluate(_SHOWN)["step"] == n
    # jump to a move: the move list and the slider
    page.click('#moves li[data-step="5"]')
    shown = page.evaluate(_SHOWN)
    assert shown["step"] == 5 and {k: shown[k] for k in _expected(states[5])} == _expected(states[5])
    page.locator("#slider").evaluate("(el) => { el.value = 9; el.dispatchEvent(new Event('input')); }")
    assert page.evaluate(_SHOWN)["step"] == 9
    page.click("#prev")
    page.click("#prev")
    page.click("#next")
    assert page.evaluate(_SHOWN)["step"] == 8
    # another game from the picker, and a link to a game and step
    page.select_option("#game", "2")
    shown = page.evaluate(_SHOWN)
    second, _ = replay_states(games[2])
    assert shown["game"] == "2" and shown["step"] == 0
    assert {k: shown[k] for k in _expected(second[0])} == _expected(second[0])
    page.goto(out.as_uri() + "#game=1&step=7")
    shown = page.evaluate(_SHOWN)
    third, _ = replay_states(games[1])
    assert shown["game"] == "1" and shown["step"] == 7
    assert {k: shown[k] for k in _expected(third[7])} == _expected(third[7])


def test_replay_html_command_line(games_file, tmp_path):
    out = tmp_path / "two.html"
    rc, text, err = _replay_cli([str(games_file), "--html", str(out), "--game", "2", "--game", "0"])
    assert rc == 0 and not err and "2 games" in text
    page = out.read_text()
    assert page.count('<script type="application/json" data-game=') == 2
    assert 'data-game="1"' not in page
    # self-contained: no address outside the page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "http://" not in page.replace("w3.org", "")
    rc, _, err = _replay_cli([str(games_file), "--html", str(out), "--game", "7"])
    assert rc == replay.EXIT_PROBLEM and "there is no game 7" in err and "0 to 2" in err
    rc, _, err = _replay_cli([str(games_file), "--game", "0", "--game", "1", "--no-pause"])
    assert rc == replay.EXIT_USAGE and "--html" in err
    tampered = tmp_path / "bad.jsonl"
    data = json.loads(games_file.read_text().splitlines()[0])
    data["actions"][3] = "discard KS" if data["actions"][3] != "discard KS" else "discard QS"
    tampered.write_text(json.dumps(data) + "\n")
    rc, _, err = _replay_cli([str(tampered), "--html", str(out)])
    assert rc == replay.EXIT_PROBLEM and "move 4" in err


# --------------------------------------------------------------------------- the tournament report
def test_report_page_is_written_and_links_to_every_replay(tmp_path):
    from conquian_arena.report import write_html_report
    from conquian_arena.tournament import run_tournament

    out = tmp_path / "t"
    summary = run_tournament(
        ["greedy", "random", "python:tests.test_evaluate:FirstLegalBot"],
        games=4,
        out=out,
        jobs=1,
        bootstrap=20,
        progress=False,
    )
    report = (out / "report.html").read_text()
    assert "<h2>Ratings</h2>" in report and "data:image/png;base64," in report  # the plot is inside
    for label in ("greedy", "random", "FirstLegalBot"):
        assert label in report
    games, _ = load_records(out)
    links = re.findall(r'href="(replays/[^"#]+)#game=(\d+)"', report)
    assert sorted(int(i) for _, i in links) == sorted(g.index for g in games) == list(range(12))
    for name, index in links:
        target = out / name
        assert target.exists(), name
        assert f'data-game="{index}"' in target.read_text()
    assert len({name for name, _ in links}) == 3  # one replay page per pair
    # a pair split into parts keeps every link pointing at the file holding its game
    write_html_report(summary, out, games_per_file=3)
    report = (out / "report.html").read_text()
    links = re.findall(r'href="(replays/[^"#]+)#game=(\d+)"', report)
    assert len(links) == 12 and len({n for n, _ in links}) == 6
    for name, index in links:
        assert f'data-game="{index}"' in (out / name).read_text()
    assert sorted(p.name for p in (out / "replays").iterdir()) == sorted({Path(n).name for n, _ in links})
    # the report can be skipped
    run_tournament(["random", "random"], games=2, out=tmp_path / "quiet", jobs=1, bootstrap=20, progress=False,
                   plot=False, html=False)  # fmt: skip
    assert not (tmp_path / "quiet" / "report.html").exists()


def test_report_page_opens_a_replay_in_the_browser(page, tmp_path):
    from conquian_arena.tournament import run_tournament

    out = tmp_path / "t"
    run_tournament(["greedy", "random"], games=2, out=out, jobs=1, bootstrap=20, progress=False, plot=False)
    page.goto((out / "report.html").as_uri())
    page.click('.games a[href$="#game=1"]')
    page.wait_for_selector('#table[data-game="1"]')
    games, _ = load_records(out)
    states, _ = replay_states(games[1])
    shown = page.evaluate(_SHOWN)
    assert shown["step"] == 0 and shown["hand0"] == _names(states[0].hands[0])


# --------------------------------------------------------------------------- the play page
@pytest.fixture
def play_server(tmp_path):
    """A ``conquian-play --web`` server on a free port, in a thread; yields (PlayServer, url)."""
    pytest.importorskip("flask", reason="the web extra: pip install 'conquian-env[web]'")
    from conquian_arena.human_game import Setup
    from conquian_arena.webplay import PlayServer, make_http_server

    servers = []

    def start(opponent="greedy", **kw):
        server = PlayServer(Setup(opponent, **kw), save=tmp_path / "web.jsonl")
        http = make_http_server(server, "127.0.0.1", 0)
        thread = threading.Thread(target=http.serve_forever, daemon=True)
        thread.start()
        servers.append((server, http, thread))
        return server, f"http://127.0.0.1:{http.server_port}/"

    yield start
    for server, http, thread in servers:
        server.stop()
        http.shutdown()
        thread.join(5)


_PLAYABLE = "[data-move]:not([disabled])"


def _click_through_a_game(page, server, rng, take_back_once=True, limit=600, melds=None):
    """Click legal moves at random until the game is over; checks the page against the server
    at every decision.  Returns the number of clicks and whether a laid card was taken back;
    ``melds`` (a list) gets, at each meld question, whether its finish button could be clicked."""
    clicks = 0
    took_back = not take_back_once
    while clicks < limit:
        page.wait_for_selector('#status[data-status="your-move"], #status[data-status="over"]')
        if page.get_attribute("#status", "data-status") == "over":
            return clicks, took_back
        version = page.get_attribute("#status", "data-version")
        snap = server.game.snapshot()
        assert str(snap["version"]) == version
        moves = [el.get_attribute("data-move") for el in page.query_selector_all(_PLAYABLE)]
        # only the legal moves can be clicked, and each of them can
        allowed = set(snap["legal"]) | ({"back"} if snap["back"] else set())
        assert sorted(moves) == sorted(allowed), (moves, snap["legal"])
        # the question offers "finish" only when the finish button can be clicked
        # (before: "lay down another hand card or finish" with the button disabled)
        question = page.inner_text("#status")
        assert ("finish" in question) == ("finish" in moves), (question, moves)
        if "lay down another hand card" in question or "finish" in moves:
            if melds is not None:
                melds.append("finish" in moves)
        assert page.get_attribute("#hand", "data-cards") == " ".join(CARD_NAMES[c] for c in snap["hand"])
        hand_moves = [m for m in moves if m.startswith(("meld ", "discard "))]
        if not took_back and any(m.startswith("meld ") for m in hand_moves):
            # lay a card, see it leave the hand, take it back
            card_move = next(m for m in hand_moves if m.startswith("meld "))
            before = page.get_attribute("#hand", "data-cards")
            page.click(f'svg[data-move="{card_move}"]')
            page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
            card = card_move.split()[1]
            assert card not in page.get_attribute("#hand", "data-cards").split()
            assert card in [el.get_attribute("data-card") for el in page.query_selector_all("#face svg")]
            version = page.get_attribute("#status", "data-version")
            page.click('button[data-move="back"]')
            page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
            assert page.get_attribute("#hand", "data-cards") == before
            took_back = True
            clicks += 2
            continue
        choices = [m for m in moves if m != "back"] or moves
        move = rng.choice(choices)
        page.click(f'[data-move="{move}"]:not([disabled])')
        page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
        clicks += 1
    raise AssertionError(f"the game did not end in {limit} clicks")


# play_server before page: the page closes first, so no poll of it meets a stopped server
@pytest.mark.parametrize(("opponent", "seat", "seed", "forcing"), [("greedy", 0, 5, False), ("random", 1, 8, True)])
def test_play_page_plays_a_whole_game_by_clicking(play_server, page, tmp_path, opponent, seat, seed, forcing):
    server, url = play_server(opponent, seed=seed, seat=seat, auto_pass=True, rules=Rules(forcing=forcing))
    page.goto(url)
    melds = []
    clicks, took_back = _click_through_a_game(page, server, random.Random(seed), melds=melds)
    assert clicks > 3 and took_back
    assert False in melds  # a meld question with the finish button disabled was met (and read right)
    result = page.inner_text("#result")
    saved = tmp_path / "web.jsonl"
    assert f"saved to {saved}" in page.inner_text("#status")
    records = [json.loads(line) for line in saved.read_text().splitlines()]
    assert len(records) == 1
    record = records[0]
    assert record["players"][seat] == "you" and record["players"][1 - seat] == opponent
    assert record["failure"] is None and record["rules"] == {"forcing": forcing}
    game = RecordedGame(index=0, line=1, data=record)
    states, _ = replay_states(game)
    assert result_problem(game, states[-1]) is None  # the saved record replays to its result
    final = states[-1]
    expected = "you win" if final.winner == seat else f"{opponent} wins" if final.winner >= 0 else "draw"
    assert result.startswith(expected)
    # the bot's moves were narrated
    log = page.inner_text("#log")
    assert f"{opponent} " in log and ("discarded" in log or "refused" in log)
    # the record is what conquian-replay shows, and the page links to its replay
    rc, text, err = _replay_cli([str(saved), "--game", "0", "--no-pause"])
    assert rc == 0 and not err and text.rstrip().endswith(f"end: {game.result_text()}")
    with page.expect_popup() as opened:
        page.click("text=watch the replay")
    opened.value.wait_for_selector('#table[data-game="0"]')
    # the deal's seed is told only now that the game is over (it gives away the whole deal)
    assert f"deal seed {derive_seed(seed, 0)}" in page.inner_text("#title")
    # a new game deals again, and the page follows it at once, its seed untold
    page.click("#new")
    page.wait_for_function('!document.getElementById("title").textContent.includes("deal seed")')
    page.wait_for_selector('#status[data-status="your-move"]', timeout=8_000)
    assert server.game.seed == derive_seed(seed, 1) and server.game.snapshot()["status"] == "your-move"


_COLOURS = """(el) => {
    // the colour an element's own box shows: its background blended over its ancestors', with opacity
    const parse = c => {
        const m = c.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1];
    };
    const chain = []; for (let e = el; e; e = e.parentElement) chain.unshift(e);
    let rgb = [255, 255, 255];
    for (const e of chain) {
        const s = getComputedStyle(e); const [r, g, b, a] = parse(s.backgroundColor); const k = a * Number(s.opacity);
        rgb = [r * k + rgb[0] * (1 - k), g * k + rgb[1] * (1 - k), b * k + rgb[2] * (1 - k)];
    }
    const s = getComputedStyle(el); const [r, g, b] = parse(s.color); const k = Number(s.opacity);
    return {background: rgb, text: [r * k + rgb[0] * (1 - k), g * k + rgb[1] * (1 - k), b * k + rgb[2] * (1 - k)],
            cursor: s.cursor};
}"""


def _contrast(one, two) -> float:
    """WCAG 2 contrast ratio of two sRGB colours (0-255)."""

    def luminance(rgb):
        lin = [(c / 255) / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    high, low = sorted((luminance(one), luminance(two)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _resigned_game(play_server, page):
    """A game against greedy that the page resigned at its first move; returns the server."""
    server, url = play_server("greedy", seed=3, auto_pass=True)
    page.goto(url)
    page.wait_for_selector('#status[data-status="your-move"]')
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("#resign")
    page.wait_for_selector('#status[data-status="over"]')
    return server


def test_the_finished_game_is_legible_and_its_buttons_plainly_disabled(play_server, page, tmp_path):
    # before: "watch the replay" was pale yellow on the cream status box (1.3:1), and the disabled
    # move buttons, a light button at 35% opacity, looked nearly enabled; and a resigned game had no replay link
    _resigned_game(play_server, page)
    link = page.locator("#status a", has_text="watch the replay")
    colours = link.evaluate(_COLOURS)
    assert _contrast(colours["text"], colours["background"]) >= 4.5, colours  # WCAG AA, normal text
    enabled = page.locator("#new").evaluate(_COLOURS)  # the one button left to click
    assert page.locator("#new").is_enabled()
    for button in page.locator(".buttons button:not([hidden]), #resign").all():
        assert button.is_disabled()
        disabled = button.evaluate(_COLOURS)
        assert disabled["cursor"] == "not-allowed"
        # plainly another kind of button than the enabled one: its face at least 3:1 apart
        assert _contrast(disabled["background"], enabled["background"]) >= 3, (disabled, enabled)
        assert _contrast(disabled["text"], disabled["background"]) < _contrast(enabled["text"], enabled["background"])
    page.screenshot(path=str(tmp_path / "over.png"))
    with page.expect_popup() as opened:
        link.click()
    opened.value.wait_for_selector('#table[data-game="0"]')


def test_the_move_log_has_room_for_three_digit_move_numbers(play_server, page):
    # before: the log's 26px left padding, where the list draws its markers, cut "100." to "00."
    server, url = play_server("greedy", seed=5, seat=0, auto_pass=True)
    page.goto(url)
    page.wait_for_selector('#status[data-status="your-move"]')
    padding, needed = page.evaluate("""() => {
        const style = getComputedStyle(document.getElementById("log"));
        const ctx = document.createElement("canvas").getContext("2d");
        ctx.font = `${style.fontSize} ${style.fontFamily}`;
        return [parseFloat(style.paddingLeft), ctx.measureText("199. ").width];
    }""")
    assert padding >= needed, (padding, needed)


def test_play_page_says_your_move_only_when_a_move_can_be_clicked(play_server, page):
    """While a move travels to the server every button is disabled; the status must not say
    "your-move" then (it did, and a poll answered meanwhile left the page in that state)."""
    server, url = play_server("greedy", seed=5, seat=0, auto_pass=True)
    page.goto(url)
    page.wait_for_selector('#status[data-status="your-move"]')
    # hold the move's answer back for a while, as a slow network would
    page.evaluate("""() => { const f = window.fetch; window.fetch = async (p, o) => {
        if (String(p).includes("api/move")) await new Promise(r => setTimeout(r, 800));
        return f(p, o); }; }""")
    version = page.get_attribute("#status", "data-version")
    move = page.get_attribute(_PLAYABLE, "data-move")
    page.click(f'[data-move="{move}"]:not([disabled])')
    assert page.query_selector_all(_PLAYABLE) == []  # the move is on its way: nothing to click
    assert page.get_attribute("#status", "data-status") == "sending"
    page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
    page.wait_for_selector('#status[data-status="your-move"], #status[data-status="over"]')
    if page.get_attribute("#status", "data-status") == "your-move":
        assert page.query_selector_all(_PLAYABLE)


def test_a_move_answer_older_than_a_poll_leaves_the_page_clickable(play_server, page):
    """The move's answer can come back after a poll brought a newer state (the bot moved
    meanwhile).  The newer state was drawn while the move travelled, every button disabled;
    the page must draw it again, clickable (before, it stayed "sending" until the next poll
    answered, 20 s later)."""
    server, url = play_server("greedy", seed=5, seat=0, auto_pass=True)
    page.goto(url)
    page.wait_for_selector('#status[data-status="your-move"]')
    # the move reaches the server at once; its answer is held until the test lets it go
    page.evaluate("""() => { const f = window.fetch; window.fetch = async (p, o) => {
        const r = await f(p, o);
        if (String(p).includes("api/move")) { window.moveAnswer = (await r.clone().json()).version;
            while (!window.release) await new Promise(ok => setTimeout(ok, 20)); }
        return r; }; }""")
    move = next(m for m in (el.get_attribute("data-move") for el in page.query_selector_all(_PLAYABLE)) if m != "back")
    page.click(f'[data-move="{move}"]:not([disabled])')
    page.wait_for_function("() => window.moveAnswer !== undefined")
    answer = page.evaluate("() => window.moveAnswer")
    deadline = time.monotonic() + 30
    while server.game.snapshot()["status"] not in ("your-move", "over"):  # the bot's reply
        assert time.monotonic() < deadline, "the bot did not answer in 30 s"
        time.sleep(0.02)
    server.game.wake()  # and one more version of it: the waiting poll gets a state newer than the answer
    page.wait_for_function(f'Number(document.getElementById("status").dataset.version) > {answer}')
    assert page.get_attribute("#status", "data-status") == "sending"  # drawn while the move travels
    assert page.query_selector_all(_PLAYABLE) == []
    page.evaluate("() => { window.release = true; }")
    # at once, not at the next poll's answer 20 s later
    page.wait_for_selector('#status[data-status="your-move"], #status[data-status="over"]', timeout=2_000)
    if page.get_attribute("#status", "data-status") == "your-move":
        assert page.query_selector_all(_PLAYABLE)


def test_a_repeated_state_leaves_the_page_elements_in_place(play_server, page):
    """A poll answered with the same view (a long poll's timeout, or a new version of the same
    table) must not rebuild the page: the replay link under the pointer stayed, but was
    swapped for a copy at every answer, so a click or an inspection could meet a detached node."""
    server = _resigned_game(play_server, page)
    version = page.get_attribute("#status", "data-version")
    page.evaluate("""() => { window.link = document.querySelector("#status a"); window.changed = 0;
        new MutationObserver(ms => { window.changed += ms.length; }).observe(document.body,
            {childList: true, subtree: true}); }""")
    server.game.wake()  # a new version of the same view: the waiting poll is answered
    page.wait_for_function(f'document.getElementById("status").dataset.version !== "{version}"')
    assert page.evaluate("() => window.link.isConnected") is True
    assert page.evaluate("() => window.changed") == 0  # no element rebuilt, no text node replaced


def test_play_api_needs_the_page_token_and_a_local_host(play_server):
    server, url = play_server("random", seed=3)
    from conquian_arena.webplay import create_app

    client = create_app(server, ("127.0.0.1", "localhost")).test_client()
    page = client.get("/", base_url="http://127.0.0.1:8000")
    assert page.status_code == 200 and server.token in page.get_data(as_text=True)
    assert client.get("/api/state", base_url="http://127.0.0.1:8000").status_code == 403  # no token
    head = {"X-Conquian-Token": server.token}
    assert client.get("/api/state", headers=head, base_url="http://evil.example:8000").status_code == 403
    state = client.get("/api/state", headers=head, base_url="http://localhost:8000").get_json()
    assert state["seed"] is None  # during the game: the seed would give away the whole deal
    assert state["names"] == ["you", "random"] and len(state["hand"]) == 10 and "opp_hand" in state
    assert "reveal" not in state  # the bot's hand is shown only once the game is over
    stale = client.post("/api/move", json={"move": "refuse", "version": -5}, headers=head,
                        base_url="http://localhost:8000")  # fmt: skip
    assert stale.status_code == 409
    while state["status"] != "your-move":  # you play first: the game soon waits for you
        state = client.get(f"/api/state?game=0&after={state['version']}", headers=head,
                           base_url="http://localhost:8000").get_json()  # fmt: skip
    answer = client.post("/api/move", json={"move": "banana", "version": state["version"]}, headers=head,
                         base_url="http://localhost:8000").get_json()  # fmt: skip
    assert "'banana' is not a move" in answer["error"] and answer["status"] == "your-move"
    # one answer per state: a second one (a double click, a stale page) is refused
    assert server.game.submit(answer["legal"][0], answer["version"])
    assert not server.game.submit(answer["legal"][0], answer["version"])
    resigned = client.post("/api/resign", headers=head, base_url="http://localhost:8000").get_json()
    assert resigned["status"] in ("over", "thinking", "your-move")
    server.game._thread.join(5)
    final = server.game.snapshot()
    assert final["status"] == "over" and "you quit the game" in final["result"]


def test_the_web_human_is_an_agent_played_by_the_one_game_loop(play_server):
    from agents.base import Agent
    from conquian_arena import match
    from conquian_arena.webgame import WebHumanAgent

    assert issubclass(WebHumanAgent, Agent)
    server, _ = play_server("random", seed=4)
    snap = server.game.snapshot()
    while snap["status"] != "your-move":  # the person plays first: the game waits for them
        snap = server.game.wait(snap["version"], timeout=5)
    assert server.game._thread.is_alive()  # play_game runs in the game's thread, waiting on the person
    assert any(f.name == "play_game" for f in _frames(server.game._thread)), "not played by match.play_game"
    assert match.play_game.__module__ == "conquian_arena.match"


def _frames(thread):
    import sys
    import traceback

    frame = sys._current_frames().get(thread.ident)
    return traceback.extract_stack(frame) if frame is not None else []


def _resign_and_deal_again(server):
    from conquian_arena.webgame import RESIGN

    game = server.game
    snap = game.snapshot()
    while snap["status"] != "your-move":
        snap = game.wait(snap["version"], timeout=5)
    game.answer(RESIGN)
    game._thread.join(5)
    assert game.over
    return server.new_game()


def test_web_games_of_a_seed_are_dealt_from_hashed_seeds(play_server):
    # before: game k of --seed N used seed N + k, and the page tells the seed after a game,
    # so the next game's deal could be computed from it
    server, _ = play_server("random", seed=7)
    seeds = [server.game.seed]
    for _ in range(2):
        seeds.append(_resign_and_deal_again(server).seed)
    assert seeds == [derive_seed(7, k) for k in range(3)]
    assert seeds[0] != 7 and all(b != a + 1 for a, b in zip(seeds, seeds[1:], strict=False))
    assert [server.game.hands, server.game.stock] == list(deal_for_seed(seeds[2]))
    # the same --seed deals the same games again
    again, _ = play_server("random", seed=7)
    assert again.game.seed == seeds[0] and again.game.hands == deal_for_seed(seeds[0])[0]


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3"])
def test_web_seed_must_be_a_non_negative_integer(bad):
    pytest.importorskip("flask", reason="the web extra: pip install 'conquian-env[web]'")
    from conquian_arena.human_game import Setup
    from conquian_arena.webplay import PlayServer

    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        PlayServer(Setup("random", seed=bad), save=None)


def test_play_api_refuses_bad_move_bodies_with_400_and_echoes_no_long_text(play_server):
    # before: a JSON body that is not an object was a 500 (AttributeError), and a
    # 40,000-character move was echoed back whole
    server, _ = play_server("random", seed=3)
    from conquian_arena.webplay import create_app

    client = create_app(server).test_client()
    head = {"X-Conquian-Token": server.token}
    for body in ("[1, 2]", "3", '"take"', "null", "{not json"):
        answer = client.post("/api/move", data=body, headers=head, content_type="application/json")
        assert answer.status_code == 400, body
        assert "must be a JSON object" in answer.get_json()["error"]
    state = server.game.snapshot()
    while state["status"] != "your-move":
        state = server.game.wait(state["version"], timeout=5)
    for move in ("x" * 900, ["take"], 7):  # (a longer body is refused unread: see the next test)
        answer = client.post("/api/move", json={"move": move, "version": state["version"]}, headers=head)
        assert answer.status_code == 400
        assert len(answer.get_data()) < 300 and "at most 40 characters" in answer.get_json()["error"]
    # the game still waits for the person, and a short bad move is still told, bounded
    answer = client.post("/api/move", json={"move": "y" * 40, "version": state["version"]}, headers=head)
    assert answer.status_code == 200 and "is not a move" in answer.get_json()["error"]
    assert len(answer.get_json()["error"]) < 80


def test_play_api_answers_deep_or_huge_bodies_with_400_not_500(play_server):
    # before: a body nested 100,000 deep was a 500 (RecursionError in the JSON parser)
    server, _ = play_server("random", seed=3)
    from conquian_arena.webplay import MAX_BODY_BYTES, MAX_BODY_DEPTH, create_app, json_depth

    client = create_app(server).test_client()
    head = {"X-Conquian-Token": server.token}
    deep = {
        "[" * 100_000: f"over {MAX_BODY_BYTES} bytes",  # refused unread
        "[" * 1000: "nests arrays or objects 1000 deep",
        '{"a":' * 150 + "1" + "}" * 150: "nests arrays or objects 150 deep",
        '{"move": "take", "version": [[[[[0]]]]]}': f"6 deep (at most {MAX_BODY_DEPTH})",
        '{"move": "' + "x" * MAX_BODY_BYTES + '", "version": 0}': f"over {MAX_BODY_BYTES} bytes",
        b'{"move": "\xff"}': "not UTF-8",
        "{not json": "not JSON",
    }
    for body, why in deep.items():
        answer = client.post("/api/move", data=body, headers=head, content_type="application/json")
        assert answer.status_code == 400, body[:20]
        error = answer.get_json()["error"]
        assert error.startswith("the body must be a JSON object") and why in error, error
        assert len(answer.get_data()) < 300
    # brackets inside a string are text, not nesting; a body near the cap is read whole
    assert json_depth('{"move": "[[[[[[[[[[", "version": 1}') == 1
    assert json_depth('{"a": "\\"[[[[[["}') == 1
    state = server.game.snapshot()
    while state["status"] != "your-move":
        state = server.game.wait(state["version"], timeout=5)
    body = json.dumps({"move": "[[[[[[[[", "version": state["version"]}) + " " * (MAX_BODY_BYTES - 60)
    answer = client.post("/api/move", data=body, headers=head, content_type="application/json")
    assert answer.status_code == 200 and "is not a move" in answer.get_json()["error"]


def test_every_page_forbids_framing(play_server):
    # before: no X-Frame-Options / frame-ancestors: another site could frame the page
    server, _ = play_server("random", seed=3)
    from conquian_arena.webplay import create_app

    client = create_app(server).test_client()
    head = {"X-Conquian-Token": server.token}
    answers = [client.get("/"), client.get("/api/state", headers=head), client.get("/replay"), client.get("/api/x")]
    for answer in answers:
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]


def test_long_polls_are_bounded(play_server):
    # before: every long poll held a thread for 20 s, as many as were sent
    import urllib.error
    import urllib.request

    from conquian_arena.webplay import MAX_WAITING

    server, url = play_server("random", seed=3)
    state = server.game.snapshot()
    while state["status"] != "your-move":
        state = server.game.wait(state["version"], timeout=5)
    poll = f"{url}api/state?game=0&after={state['version']}"

    def get(results):
        request = urllib.request.Request(poll, headers={"X-Conquian-Token": server.token})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                results.append(answer.status)
        except urllib.error.HTTPError as err:
            results.append(err.code)

    waiting: list[int] = []
    threads = [threading.Thread(target=get, args=(waiting,)) for _ in range(MAX_WAITING)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while server._waiting._value > 0 and time.monotonic() < deadline:  # every place taken
        time.sleep(0.02)
    assert server._waiting._value == 0 and not waiting
    start = time.monotonic()
    extra: list[int] = []
    get(extra)
    assert extra == [429] and time.monotonic() - start < 5  # answered at once, not after 20 s
    server.game.wake()  # a newer state: the waiting polls are answered
    for t in threads:
        t.join(10)
    assert waiting == [200] * MAX_WAITING
    assert server._waiting._value == MAX_WAITING  # every place given back
