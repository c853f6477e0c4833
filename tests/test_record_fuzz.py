"""Records that cannot freeze a reader: a fuzz of record lines (numbers longer than Python reads,
deep nesting, wrong types, bad bytes) through ``load_records``, ``conquian-replay`` (``--list``,
``--game``, ``--html``) and the web game's save file: no traceback, every bad line named and
skipped, every good game still readable, and the web page always told the game is over."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest

from agents.base import RandomAgent
from conquian_arena import replay
from conquian_arena.match import deal_for_seed, play_game
from conquian_arena.record import load_records

HUGE = "1" + "0" * 5000  # past Python's int-string limit (4300 digits)


def _good_line(seed: int) -> str:
    hands, stock = deal_for_seed(seed)
    return json.dumps(play_game([RandomAgent(seed), RandomAgent(seed + 1)], hands=hands, stock=stock,
                                seed=seed).to_dict())  # fmt: skip


def _bad_lines(good: str, rng: random.Random) -> list[str]:
    """Damaged records: oversized numbers in every field a reader looks at, deep nesting, wrong types."""
    obj = json.loads(good)
    bad = [f'{{"index": {HUGE}}}', good[:-1] + f', "index": {HUGE}}}', f"[{HUGE}]", HUGE, "-" + HUGE,
           "[" * 100_000 + "]" * 100_000, '{"a": ' * 50_000 + "1" + "}" * 50_000, "\udcff not utf-8",
           "null", "[]", '"text"', "1e999999", "NaN"]  # fmt: skip
    for key in obj:
        for value in (HUGE, "[[[[[[1]]]]]]", '"x"', "null", "{}", "-1", "1.5", "true"):
            bad.append(json.dumps({**obj, key: 0}).replace(f'"{key}": 0', f'"{key}": {value}', 1))
    for _ in range(40):  # bytes cut or flipped at random
        cut = rng.randrange(1, len(good))
        bad.append(good[:cut])
        chars = list(good)
        chars[rng.randrange(len(chars))] = rng.choice('{}[],:"0x\\')
        bad.append("".join(chars))
    return bad


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    rng = random.Random(7)
    goods = [_good_line(s) for s in range(3)]
    bad = _bad_lines(goods[0], rng)
    lines = [goods[0], *bad[: len(bad) // 2], goods[1], *bad[len(bad) // 2 :], goods[2]]
    path = tmp_path_factory.mktemp("fuzz") / "games.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    return path, goods, len(bad)


def test_load_records_skips_every_bad_line_by_name_and_keeps_every_good_game(fuzzed):
    # before: one line with a 5,000-digit integer made load_records raise (ValueError), every game lost
    path, goods, n_bad = fuzzed
    games, problems = load_records(path)
    kept = {json.dumps(g.data) for g in games}
    assert all(json.dumps(json.loads(g)) in kept for g in goods)
    assert all(f"{path}, line " in p and "skipped" in p for p in problems)
    assert any("a number too long" in p for p in problems)


@pytest.mark.parametrize("argv", [["--list"], ["--game", "0", "--no-pause"], ["--html", "OUT"]], ids=str)
def test_conquian_replay_reads_a_fuzzed_file_without_a_traceback(fuzzed, argv, tmp_path):
    path, _, _ = fuzzed
    argv = [a.replace("OUT", str(tmp_path / "r.html")) for a in argv]
    out, err = [], []
    rc = replay.main([str(path), *argv], output=out.append, errors=err.append)
    text = "\n".join(out + err)
    # a fuzzed line can pass as a record whose deal is impossible: the replay says so in a line (1)
    assert rc in ((0,) if argv == ["--list"] else (0, 1)), text[-2000:]
    assert "Traceback" not in text and all(line.count("\n") == 0 for line in err)


def test_a_single_oversized_number_leaves_the_other_games_of_the_file_readable(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(_good_line(1) + "\n" + f'{{"index": {HUGE}}}' + "\n" + _good_line(2) + "\n")
    games, problems = load_records(path)
    assert len(games) == 2 and len(problems) == 1 and "line 2" in problems[0]


# --------------------------------------------------------------------------- the web game's save file


def _resign(server):
    from conquian_arena.webgame import RESIGN

    game = server.game
    snap = game.snapshot()
    while snap["status"] != "your-move":
        snap = game.wait(snap["version"], timeout=10)
    game.answer(RESIGN)
    game._thread.join(10)
    assert not game._thread.is_alive()
    return game.snapshot()


@pytest.fixture
def web(tmp_path):
    pytest.importorskip("flask", reason="the web extra: pip install 'conquian-env[web]'")
    from conquian_arena.human_game import Setup
    from conquian_arena.webplay import PlayServer

    servers = []

    def start(save: Path):
        server = PlayServer(Setup("random", seed=3), save=save)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_a_web_game_saved_beside_an_oversized_record_ends_and_the_next_one_is_dealt(web, tmp_path):
    # before: the game thread died in _finish after saving: the page stayed on "your move" and
    # every later game froze the same way
    save = tmp_path / "web.jsonl"
    save.write_text(f'{{"index": {HUGE}}}\n')
    server = web(save)
    for _ in range(2):
        snap = _resign(server)
        assert snap["status"] == "over" and f"saved to {save}" in snap["saved"], snap
        server.new_game()
        assert server.game.number == len(server.played)
    games, problems = load_records(save)
    assert len(games) == 2 and len(problems) == 1


@pytest.mark.parametrize("make", ["folder", "fifo-less-dir"], ids=["a folder", "a file's folder is a file"])
def test_a_web_game_whose_save_file_cannot_be_written_still_ends_saying_why(web, tmp_path, make):
    if make == "folder":
        save = tmp_path / "web.jsonl"
        save.mkdir()
    else:
        (tmp_path / "plain").write_text("x")
        save = tmp_path / "plain" / "web.jsonl"
    server = web(save)
    snap = _resign(server)
    assert snap["status"] == "over" and snap["saved"].startswith(f"could not save the game to {save}: ")
    assert "\n" not in snap["saved"]


def test_serve_refuses_a_save_path_that_is_a_folder_in_one_line(tmp_path):
    pytest.importorskip("flask")
    from conquian_arena.human_game import Setup
    from conquian_arena.webplay import serve

    said, codes = [], []
    setup = Setup("random")
    thread = threading.Thread(target=lambda: codes.append(serve(setup, save=tmp_path, port=0, output=said.append)),
                              daemon=True)  # fmt: skip
    thread.start()
    thread.join(60)  # before: it served, every game's save failing
    assert codes == [2], said
    assert len(said) == 1 and str(tmp_path) in said[0] and "not a file of games" in said[0]
