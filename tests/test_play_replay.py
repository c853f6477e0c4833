"""The terminal front ends: conquian_arena.play (a person against a bot) and conquian_arena.replay."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.base import Agent, Resign
from conquian_arena import human_game, play, replay
from conquian_arena.match import deal_for_seed, play_game
from conquian_arena.record import RecordedGame, replay_states
from conquian_env.actions import DISCARD_BASE, REFUSE, TAKE, str_to_action
from conquian_env.cards import CARD_NAMES, cards_of
from conquian_env.game import MELD, new_game
from conquian_env.rules import Rules
from conquian_env.view import PlayerView

_MOVES_LINE = re.compile(r"^\s+1\) ")


class Script:
    """An ``input_fn`` that answers from a list (or a rule), then raises EOFError."""

    def __init__(self, answers=(), rule=None, limit=2000):
        self.answers = list(answers)
        self.rule = rule
        self.prompts = 0
        self.limit = limit

    def __call__(self, prompt: str) -> str:
        self.prompts += 1
        if self.answers:
            return self.answers.pop(0)
        if self.rule is not None and self.prompts <= self.limit:
            return self.rule()
        raise EOFError


class Output(list):
    def __call__(self, text: str = "") -> None:
        self.extend(str(text).split("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self)


def _first_option_text(out: Output) -> str:
    """The text of option 1 in the last list of moves shown."""
    for line in reversed(out):
        if _MOVES_LINE.match(line):
            return re.match(r"^\s+1\) (.+?)(?:  \d+\) |$)", line).group(1)
    raise AssertionError("no list of moves was shown")


# --------------------------------------------------------------------------- play
@pytest.mark.parametrize(
    "argv",
    [
        ["--opponent", "random", "--seed", "3"],
        ["--opponent", "random", "--seed", "11", "--seat", "1", "--first", "bot", "--forcing"],
    ],
)
def test_play_full_game_answering_numbers(argv):
    out = Output()
    script = Script(rule=lambda: "1")
    assert play.main(argv, input_fn=script, output=out) == play.EXIT_OK
    assert re.search(r"\*\*\* (you win|random wins|draw)", out.text)
    assert "the whole table:" in out.text
    assert "is not" not in out.text  # every answer was accepted
    assert script.prompts > 3


def test_play_full_game_answering_texts():
    out = Output()
    answers = []

    def rule():
        text = _first_option_text(out)
        answers.append(text)
        return text.upper() if len(answers) % 2 else text  # case does not matter

    script = Script(rule=rule)
    rc = play.main(["--opponent", "random", "--seed", "5", "--first", "bot"], input_fn=script, output=out)
    assert rc == play.EXIT_OK
    assert re.search(r"\*\*\* (you win|random wins|draw)", out.text)
    assert "is not" not in out.text
    assert answers and all(str_to_action(a) >= 0 for a in answers)
    assert any(line.startswith("random ") for line in out)  # the bot's moves are shown


def test_play_same_seed_same_game():
    runs = []
    for _ in range(2):
        out = Output()
        play.main(["--opponent", "random", "--seed", "8"], input_fn=Script(rule=lambda: "1"), output=out)
        runs.append(out.text)
    assert runs[0] == runs[1]


def test_play_bad_input_is_reprompted():
    out = Output()
    script = Script(["banana", "0", "99", "meld ZZ", "finish", "", "help", "table", "2", "quit"])
    assert play.main(["--opponent", "random", "--seed", "3"], input_fn=script, output=out) == play.EXIT_OK
    text = out.text
    assert "'banana' is not a move: type a number from 1 to 2 or one of 'take', 'refuse'" in text
    assert "there is no move number 0" in text
    assert "there is no move number 99" in text
    assert "unknown card" in text  # meld ZZ names the bad card
    assert "'finish' is not a legal move now" in text
    assert "no move given" in text
    assert "How to answer" in text  # help
    assert "you refused AD" in text  # the 9th answer, "2", was the first move played
    assert "you quit the game" in text
    assert script.prompts == 10


def test_play_quit_and_eof():
    out = Output()
    assert play.main(["--opponent", "random", "--seed", "1"], input_fn=Script(["QUIT"]), output=out) == 0
    assert "you quit the game" in out.text
    assert "the whole table:" in out.text

    out = Output()
    assert play.main(["--opponent", "random", "--seed", "1"], input_fn=Script(), output=out) == play.EXIT_EOF
    assert "input ended" in out.text
    assert "Traceback" not in out.text


def test_play_unknown_bot():
    out = Output()
    assert play.main(["--opponent", "nosuchbot"], input_fn=Script(), output=out) == play.EXIT_USAGE
    assert "unknown bot 'nosuchbot'" in out.text


def test_player_view_hides_the_opponent_hand():
    state = new_game(seed=4)
    text = play.render_player_view(PlayerView(state, 0), ("you", "bot"))
    shown = set(re.findall(r"\b[A2-7JQK][CDHS]\b", text))
    hidden = {CARD_NAMES[c] for c in cards_of(state.hands[1])}
    assert not shown & hidden
    assert {CARD_NAMES[c] for c in cards_of(state.hands[0])} <= shown
    assert "bot hand   10 cards (hidden)" in text
    assert "stock      19 cards" in text


def test_parse_choice():
    legal = [DISCARD_BASE + 5, DISCARD_BASE + 26]  # discard 6C, discard 7H
    assert play.parse_choice("2", legal) == DISCARD_BASE + 26
    assert play.parse_choice("  Discard   6c ", legal) == DISCARD_BASE + 5
    assert play.parse_choice("7h", legal) == DISCARD_BASE + 26  # a card alone
    assert play.parse_choice("HELP", legal) == "help"
    assert play.parse_choice("q", legal) == "quit"
    assert play.parse_choice("take", [TAKE, REFUSE]) == TAKE
    for bad, message in [("3", "no move number 3"), ("KS", "no legal move uses KS"), ("take", "not a legal move")]:
        with pytest.raises(ValueError, match=message):
            play.parse_choice(bad, legal)


# --------------------------------------------------------------------------- replay
@pytest.fixture(scope="module")
def records() -> list[dict]:
    out = []
    for g in range(3):
        hands, stock = deal_for_seed(100 + g)
        bots = [make_agent("random", seed=1), make_agent("random", seed=2)]
        rec = play_game(bots, hands=hands, stock=stock, first=g % 2, rules=Rules(forcing=g == 2), seed=g)
        data = rec.to_dict()
        data.update(game=g, pair=0, deal=100 + g, specs=["random", "random"])  # extra keys are tolerated
        out.append(data)
    return out


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run_replay(argv, **kw):
    out, err = Output(), Output()
    rc = replay.main(argv, output=out, errors=err, **kw)
    return rc, out.text, err.text


def test_replay_list_and_game(tmp_path, records):
    path = _write(tmp_path / "games.jsonl", [json.dumps(r) for r in records])
    rc, out, err = _run_replay([str(tmp_path), "--list"])  # a folder works too
    assert rc == 0 and not err
    assert out.splitlines()[0].split() == ["game", "line", "players", "first", "result", "moves"]
    assert len(out.splitlines()) == 4
    assert f"{records[1]['moves']}" in out.splitlines()[2]

    rc, out, err = _run_replay([str(path), "--game", "1", "--no-pause"])
    assert rc == 0 and not err
    assert "deal:" in out
    n = records[1]["moves"]
    assert f"move {n}/{n}: {records[1]['actions'][-1]}" in out
    assert out.count("face-up:") == n + 1  # the table after the deal and after every move
    assert "warning" not in out


def test_replay_pauses_when_interactive(tmp_path, records):
    path = _write(tmp_path / "games.jsonl", [json.dumps(r) for r in records])
    script = Script(["", "", "q"])
    rc, out, _ = _run_replay([str(path), "--game", "0"], input_fn=script, interactive=True)
    assert rc == 0
    assert "move 2/" in out and "move 3/" not in out
    assert out.rstrip().endswith("stopped")
    rc, out, _ = _run_replay([str(path), "--game", "0", "--no-pause"], input_fn=Script(), interactive=True)
    assert rc == 0 and "end:" in out


def test_replay_corrupt_lines_are_skipped(tmp_path, records):
    bad_fields = {k: v for k, v in records[0].items() if k != "stock"}
    lines = [json.dumps(records[0]), "{not json", json.dumps(bad_fields), "", json.dumps(records[1])]
    path = _write(tmp_path / "games.jsonl", lines)
    rc, out, err = _run_replay([str(path), "--list"])
    assert rc == 0
    assert "line 2: corrupt, skipped (not valid JSON" in err
    assert "line 3: corrupt, skipped (missing field(s) stock)" in err
    assert len(out.splitlines()) == 3  # header + two good games
    rc, out, err = _run_replay([str(path), "--game", "1", "--no-pause"])
    assert rc == 0 and "game 1 (line 5)" in out


def test_replay_bad_index_and_missing_file(tmp_path, records):
    path = _write(tmp_path / "games.jsonl", [json.dumps(r) for r in records])
    rc, out, err = _run_replay([str(path), "--game", "7"])
    assert rc == 1
    assert "no game 7" in err and "valid game indexes are 0 to 2" in err
    rc, out, err = _run_replay([str(tmp_path / "nope.jsonl"), "--list"])
    assert rc == 1 and "cannot read" in err


def test_replay_tampered_actions(tmp_path, records):
    illegal = json.loads(json.dumps(records[0]))
    illegal["actions"][0] = "finish"  # the first decision is take or refuse
    unknown = json.loads(json.dumps(records[0]))
    unknown["actions"][2] = "discard 9Z"
    extra = json.loads(json.dumps(records[0]))
    extra["actions"].append("take")
    path = _write(tmp_path / "games.jsonl", [json.dumps(r) for r in (illegal, unknown, extra)])

    rc, out, err = _run_replay([str(path), "--game", "0", "--no-pause"])
    assert rc == 1 and not out
    assert "move 1: action 'finish'" in err and "is illegal here; legal moves:" in err
    rc, out, err = _run_replay([str(path), "--game", "1", "--no-pause"])
    assert rc == 1 and "move 3: 'discard 9Z' is not an action" in err
    n = len(extra["actions"])
    rc, out, err = _run_replay([str(path), "--game", "2", "--no-pause"])
    assert rc == 1 and f"move {n}: action 'take' comes after the end of the game" in err


def test_replay_warns_when_the_recorded_winner_disagrees(tmp_path, records):
    wrong = dict(records[0], winner=0 if records[0]["winner"] is None else None)
    path = _write(tmp_path / "games.jsonl", [json.dumps(wrong)])
    rc, out, _ = _run_replay([str(path), "--game", "0", "--no-pause"])
    assert rc == 0 and "warning: the record says" in out


def test_replay_uses_evaluate_indexes_and_seat_labels(tmp_path, records):
    lines = []
    for index, rec in zip((5, 2, 9), records, strict=True):  # evaluate.py writes games as they finish
        lines.append(json.dumps(dict(rec, index=index, seats=["random", "random#2"])))
    path = _write(tmp_path / "games.jsonl", lines)
    rc, out, _ = _run_replay([str(path), "--list"])
    assert rc == 0
    assert [row.split()[0] for row in out.splitlines()[1:]] == ["2", "5", "9"]
    assert "random vs random#2" in out
    rc, out, _ = _run_replay([str(path), "--game", "9", "--no-pause"])
    assert rc == 0 and "game 9 (line 3): p0 random vs p1 random#2" in out
    rc, _, err = _run_replay([str(path), "--game", "3"])
    assert rc == 1 and "valid game indexes are 2, 5, 9" in err
    assert replay.ranges_text([4, 0, 1, 2, 7, 8]) == "0 to 2, 4, 7 to 8"


def test_the_rules_ship_with_the_package():
    # before: README, play help and the stake column pointed at ../shared/RULES.md, which a
    # clone or an installed package does not have
    out = []
    assert play.main(["--rules"], input_fn=lambda _: "quit", output=out.append) == 0
    text = out[0]
    for n, title in enumerate(("The pack", "Combinations", "The deal", "Play", "How a game ends", "Stakes"), 1):
        assert f"## {n}. {title}" in text
    assert "forcing" in text and "(RULES.md section" not in text
    assert "--rules" in play.HELP_TEXT


def test_replay_writes_a_video_of_the_game(tmp_path, records):
    pil = pytest.importorskip("PIL.Image")
    from conquian_env.image import render_rgb

    path = _write(tmp_path / "games.jsonl", [json.dumps(r) for r in records])
    gif = tmp_path / "game1.gif"
    rc, out, err = _run_replay([str(path), "--game", "1", "--video", str(gif), "--fps", "4"])
    assert rc == 0 and not err and f"{records[1]['moves'] + 1} frames" in out
    with pil.open(gif) as im:
        assert im.n_frames == records[1]["moves"] + 1
        im.seek(im.n_frames - 1)
        last = np.asarray(im.convert("RGB"))
    game = RecordedGame(index=1, line=2, data=records[1])
    expected = render_rgb(replay_states(game)[0][-1], game.names)
    assert last.shape == expected.shape
    assert np.abs(last.astype(int) - expected.astype(int)).mean() < 8  # GIF palette quantisation only
    rc, _, err = _run_replay([str(path), "--game", "1", "--video", str(gif), "--fps", "0"])
    assert rc == replay.EXIT_PROBLEM and "fps must be positive" in err


@pytest.mark.parametrize("seat", [0, 1])
def test_play_save_writes_a_replayable_record_and_auto_pass_skips_forced_moves(tmp_path, seat):
    saved = tmp_path / "mine.jsonl"
    out = Output()
    script = Script(rule=lambda: "1")
    argv = ["--opponent", "greedy", "--seed", "4", "--seat", str(seat), "--auto-pass", "--save", str(saved)]
    assert play.main(argv, input_fn=script, output=out) == play.EXIT_OK
    assert "(only one move:" in out.text
    record = json.loads(saved.read_text().splitlines()[0])
    states, _ = replay_states(RecordedGame(index=0, line=1, data=record))
    final = states[-1]
    assert final.is_terminal() and record["moves"] == len(record["actions"])
    assert record["winner"] == (final.winner if final.winner >= 0 else None)
    assert record["players"][seat] == "you" and record["failure"] is None
    # the person was asked exactly at their decisions with a real choice: more than one legal
    # move, or a meld under way, which can always be taken back (the take or the last card)
    real_choices = sum(
        1
        for st in states[:-1]
        if st.player == seat
        and not st.is_terminal()
        and (len(st.legal_actions()) > 1 or (st.phase == MELD and (st.chosen or not st.forced)))
    )
    assert script.prompts == real_choices
    rc, text, err = _run_replay([str(saved), "--game", "0", "--no-pause"])
    assert rc == 0 and not err and "deal:" in text


def test_a_meld_is_collected_and_can_be_taken_back_before_it_is_played(tmp_path):
    # seed 3: AD is turned to you, and AC AH AS could join it
    saved = tmp_path / "m.jsonl"
    answers = ["take", "meld AC", "back", "back", "back", "take", "ac", "1", "finish", "quit"]
    out = Output()
    rc = play.main(["--opponent", "random", "--seed", "3", "--save", str(saved)], input_fn=Script(answers), output=out)
    assert rc == play.EXIT_OK
    text = out.text
    assert "laying down AD + AC (not played yet)" in text
    assert "you take back AC" in text and "you take back the take" in text
    assert "nothing to take back" in text
    assert "back) take back AH" in text  # offered while the meld is under way
    assert "finish lays down [AC AD AH]" in text
    record = json.loads(saved.read_text())
    # only the confirmed meld was played; what was taken back never reached the game
    assert record["actions"] == ["take", "meld AC", "meld AH", "finish"]
    assert record["failure"]["kind"] == "quit" and record["decisions"][0] == 5  # 4 moves and the quit
    assert "p0 you melded" not in text and "you finished melding AD; your meld: [AC AD AH]" in text


def test_play_save_records_a_quit_as_a_forfeit(tmp_path):
    saved = tmp_path / "q.jsonl"
    answers = iter(["1", "quit"])
    out = Output()
    rc = play.main(
        ["--opponent", "random", "--seed", "2", "--save", str(saved)], input_fn=lambda _: next(answers), output=out
    )
    assert rc == play.EXIT_OK
    record = json.loads(saved.read_text())
    assert record["failure"]["kind"] == "quit" and record["failure"]["seat"] == 0 and record["winner"] == 1
    replay_states(RecordedGame(index=0, line=1, data=record))  # the moves made replay


# --------------------------------------------------------------------------- the person is a player
def test_the_person_is_an_agent_played_by_the_one_game_loop():
    assert issubclass(play.HumanAgent, Agent)
    out = Output()
    human = play.HumanAgent(Script(rule=lambda: "1"), out, names=("you", "random"))
    hands, stock = deal_for_seed(3)
    record = play_game([human, make_agent("random", seed=1)], hands=hands, stock=stock, seed=3)
    assert record.players == ["you", "random"] and record.failure is None
    assert record.decisions[0] > 0 and "--- your move (move 1) ---" in out.text
    replay_states(RecordedGame(index=0, line=1, data=record.to_dict()))  # a valid record

    # quitting is a resignation: the game loop records the forfeit like any other
    quitter = play.HumanAgent(Script(["quit"]), Output())
    record = play_game([make_agent("random", seed=1), quitter], hands=hands, stock=stock, first=1)
    assert record.failure == {"seat": 1, "kind": "quit", "message": "the person stopped the game"}
    assert record.winner == 0 and record.moves == 0 and not quitter.ended_by_eof
    eof = play.HumanAgent(Script(), Output())
    record = play_game([eof, make_agent("random", seed=1)], hands=hands, stock=stock)
    assert record.failure["kind"] == "quit" and eof.ended_by_eof


def test_the_human_view_shows_only_what_the_player_view_holds():
    # the person sees the table through the same PlayerView as any bot
    state = new_game(seed=6)
    view = PlayerView(state, state.player)
    assert play.render_player_view(view, ("you", "bot")) == play.render_player_view(
        PlayerView(state.determinize(state.player, np.random.default_rng(0)), state.player), ("you", "bot")
    )


def test_a_bot_that_gives_up_loses_by_quit_in_the_front_end(tmp_path, monkeypatch):
    class Quitter(Agent):
        name = "quitter"

        def act(self, observation, action_mask, view):
            raise Resign("no thanks")

    monkeypatch.setattr(human_game, "make_agent", lambda spec, seed=None: Quitter())
    out = Output()
    rc = play.main(["--opponent", "x", "--seed", "1", "--first", "bot"], input_fn=Script(), output=out)
    assert rc == play.EXIT_OK and "the bot gave up (no thanks): you win" in out.text


@pytest.mark.parametrize("module", ["conquian_arena.play", "conquian_arena.replay"])
def test_the_command_lines_run_as_modules_and_console_scripts(module, tmp_path):
    script = Path(sys.executable).parent / ("conquian-" + module.rsplit(".", 1)[1])
    commands = [[sys.executable, "-m", module, "--help"]]
    if script.exists():  # installed (pip install -e .): the console script is there too
        commands.append([str(script), "--help"])
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "usage:" in done.stdout


def test_the_terminal_view_lists_the_opponents_discards_and_refusals():
    import random as _random

    from conquian_arena.play import render_player_view
    from conquian_env.cards import cards_str
    from conquian_env.game import new_game
    from conquian_env.view import PlayerView

    rng = _random.Random(4)
    for seed in range(50):  # random play until the bot (seat 1) has discarded and refused
        state = new_game(seed=seed)
        while not state.is_terminal() and not (state.discards[1] and state.refusals[1]):
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])
        if not state.is_terminal():
            break
    assert state.discards[1] and state.refusals[1]
    text = render_player_view(PlayerView(state, 0), ("you", "bot"))
    assert f"bot discarded {cards_str(state.discards[1])}" in " ".join(text.split())
    assert f"bot refused {cards_str(state.refusals[1])}" in " ".join(text.split())
    assert "you discarded" not in text  # the viewer's own are not the point


def test_the_deal_seed_is_told_only_after_the_game():
    # before: it was printed first, and the seed gives away the opponent's hand and the stock
    lines: list[str] = []
    answers = iter(["quit"])
    play.main(["--opponent", "greedy", "--seed", "77"], input_fn=lambda prompt: next(answers), output=lines.append)
    text = "\n".join(lines)
    assert "deal seed 77" in text
    assert text.index("deal seed 77") > text.index("you quit the game")


def test_web_port_must_be_a_port():
    with pytest.raises(SystemExit):
        play._parser().parse_args(["--web", "--port", "70000"])
    assert play._parser().parse_args(["--web", "--port", "0"]).port == 0


def test_replay_shows_control_characters_of_a_record_instead_of_sending_them(tmp_path, records):
    # before: --list and --game printed name fields raw: an escape sequence in a record retitled
    # the terminal window (OSC 0) and cleared the screen (CSI 2J)
    evil = dict(records[0])
    evil["players"] = ["\x1b]0;pwned\x07eve", "\x1b[2J\x1b[Hmallory\u202e"]
    evil["failure"] = {"seat": 1, "kind": "crash\x1b[31m", "message": "boom\x1b[2J\r\nmore"}
    labelled = dict(records[1], seats=["\x1b[5mblink", "ok"])
    path = _write(tmp_path / "games.jsonl", [json.dumps(evil), json.dumps(labelled)])
    for argv in ([str(path), "--list"], [str(path), "--game", "0", "--no-pause"], [str(path), "--game", "1"]):
        rc, out, err = _run_replay(argv, interactive=False)
        shown = out + err
        assert rc == 0 and shown
        assert not any(c in shown for c in "\x1b\x07\r\u202e"), argv
    rc, out, _ = _run_replay([str(path), "--list"])
    assert "\\x1b]0;pwned\\x07eve" in out and "\\u202e" in out and "\\x1b[5mblink" in out
    rc, out, _ = _run_replay([str(path), "--game", "0", "--no-pause"], interactive=False)
    assert "boom\\x1b[2J\\r" in out and "crash\\x1b[31m" in out


def test_a_deeply_nested_line_is_skipped_by_the_viewer(tmp_path, records):
    # before: json's RecursionError escaped load_records and the viewer crashed
    path = _write(tmp_path / "games.jsonl", ["[" * 3000 + "]" * 3000, json.dumps(records[0])])
    rc, out, err = _run_replay([str(path), "--list"])
    assert rc == 0 and "line 1: corrupt, skipped (nested too deeply)" in err
    assert len(out.splitlines()) == 2


# --------------------------------------------------------------------------- the arena's own shape
ARENA = Path(play.__file__).resolve().parent


def _arena_imports() -> dict[str, list[tuple[str, str]]]:
    """Each conquian_arena module's imports of conquian_arena modules, lazy ones included:
    ``{module: [(imported module, name taken or "")]}``, from the source (nothing is run)."""
    import ast

    modules = {path.stem for path in ARENA.glob("*.py")}
    found: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(ARENA.glob("*.py")):
        edges = found.setdefault(path.stem, [])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level == 1 or base == "conquian_arena" or base.startswith("conquian_arena."):
                    base = base.removeprefix("conquian_arena").lstrip(".") if node.level == 0 else base
                    for alias in node.names:
                        if not base and alias.name in modules:  # from . import worker
                            edges.append((alias.name, ""))
                        elif base:  # from .worker import play_task
                            edges.append((base.split(".")[0], alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("conquian_arena."):
                        edges.append((alias.name.split(".")[1], ""))
    return found


def test_the_arena_modules_import_each_other_without_a_circle():
    # before: pages -> play -> webplay -> pages, and ray_runner <-> tournament
    graph = {m: sorted({target for target, _ in edges} - {"__init__"}) for m, edges in _arena_imports().items()}
    graph.pop("__init__")
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("an import circle: " + " -> ".join([*path[path.index(module) :], module]))
        if module in done:
            return
        for target in graph.get(module, []):
            visit(target, [*path, module])
        done.add(module)

    for module in graph:
        visit(module, [])
    # the layers: the person's pieces below the front ends, one worker below both tournament runners
    assert "play" not in graph["pages"] and "play" not in graph["replay"] and "play" not in graph["webplay"]
    assert {"narration", "human", "human_game"} <= set(graph["webgame"]) & set(graph["play"])
    assert "webgame" in graph["webplay"] and "webplay" not in graph["webgame"]  # the server above its game
    assert "worker" in graph["tournament"] and "worker" in graph["ray_runner"]
    assert "tournament" not in graph["ray_runner"]


def test_no_arena_module_takes_a_private_name_of_another():
    # before: webplay imported play's _source_text and _tell_forfeit; ray_runner used
    # tournament._WORKER and tournament._init_worker
    import ast

    private = [
        f"{module} imports {target}.{name}"
        for module, edges in _arena_imports().items()
        for target, name in edges
        if name.startswith("_") and not name.startswith("__")
    ]
    for path in sorted(ARENA.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module
            for alias in node.names
        }
        private += [
            f"{path.stem} uses {node.value.id}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ]
    assert private == []


def test_the_page_assets_are_package_data_and_every_page_finds_its_own():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    from conquian_arena import pages

    patterns = tomllib.loads((ARENA.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = sorted(p.name for p in (ARENA / "assets").iterdir())
    assert files and all(any(Path(f"assets/{f}").match(p) for p in patterns["conquian_arena"]) for f in files)
    for template in ("replay.html", "play.html"):
        for name in re.findall(r"\{\{> ([^}]+)\}\}", pages.asset(template)):
            assert name in files, (template, name)
    with pytest.raises(ValueError, match="plain file name"):
        pages.asset("../pages.py")
    with pytest.raises(ValueError, match="missing \\['token'\\]"):
        pages.page("play.html")
    # a value is put in as it is, and not read again for fields
    assert '<script type="application/json" id="token">{{title}}</script>' in pages.page("play.html", token="{{title}}")


def test_a_bad_seed_is_a_clear_error_not_a_traceback():
    # before: --seed -1 escaped as numpy's ValueError from deep in the deal (with greedy), or
    # was blamed on the bot ("cannot build the bot 'random'")
    for bot in ("greedy", "random"):
        out = Output()
        assert play.main(["--opponent", bot, "--seed", "-1"], input_fn=Script(), output=out) == play.EXIT_USAGE
        assert out.text.strip() == "the seed must be a non-negative integer, got -1"


def test_play_save_makes_the_folder_of_its_file(tmp_path):
    # as --web always did: a --save path in a folder not made yet is made, not refused
    saved = tmp_path / "new" / "folder" / "games.jsonl"
    rc = play.main(
        ["--opponent", "random", "--seed", "2", "--save", str(saved)], input_fn=Script(["quit"]), output=Output()
    )
    assert rc == play.EXIT_OK and json.loads(saved.read_text())["failure"]["kind"] == "quit"
