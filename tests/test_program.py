"""Bots in any language (``exec:PATH``, agents/program.py): the protocol end to end with the
JavaScript reference bot and with programs that crash, hang, write garbage, answer illegal ids
or never read; the clean environment and own folder; the view sent never holds a hidden card."""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agents.base import PlayerView
from agents.greedy.greedy import GreedyAgent
from agents.program import CLEAN_PATH, ProgramAgent, act_message, view_fields
from agents.registry import SpecError, make_agent, runs_code
from conquian_arena.match import deal_for_seed, play_game
from conquian_arena.record import RecordedGame, replay_states, result_problem
from conquian_env.cards import CARD_NAMES
from conquian_env.game import new_game
from conquian_env.observation import OBS_LAYOUT, action_mask, decode, encode
from conquian_env.rules import Rules

from .conftest import act, permute_hidden

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "examples" / "exec_bot.js"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="the reference bot needs node")


def program(tmp_path: Path, body: str, name: str = "bot.py") -> str:
    """An executable Python program in ``tmp_path`` (this Python on its #! line, stdlib only):
    ``body`` runs for each line read, with ``msg`` the parsed object and ``answer(x)`` to reply."""
    path = tmp_path / name
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, time\n"
        "def answer(x):\n"
        "    sys.stdout.write(str(x) + '\\n'); sys.stdout.flush()\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n" + "".join(f"    {row}\n" for row in body.strip().splitlines())
    )
    path.chmod(0o755)
    return str(path)


FIRST_LEGAL = "if msg['type'] == 'act': answer(msg['legal'][0])"


def play(bot, opponent=None, games: int = 1, offset: int = 0) -> list:
    """``games`` games of ``bot`` (seat 0 in even games, seat 1 in odd ones) against ``opponent``."""
    opponent = opponent or GreedyAgent()
    records = []
    for i in range(games):
        hands, stock = deal_for_seed(offset + i)
        seats = [bot, opponent] if i % 2 == 0 else [opponent, bot]
        records.append((i % 2, play_game(seats, hands=hands, stock=stock, seed=offset + i)))
    return records


def replays_cleanly(record) -> bool:
    game = RecordedGame(index=0, line=1, data=json.loads(json.dumps(record.to_dict(), default=str)))
    states, _ = replay_states(game)
    return result_problem(game, states[-1]) is None


# ------------------------------------------------------------------ the reference bot


@needs_node
def test_the_reference_bot_plays_whole_games_and_beats_random():
    bot = make_agent(f"exec:{REFERENCE},seed=1")
    try:
        records = play(bot, make_agent("random", 0), games=12)
    finally:
        bot.close()
    assert all(r.failure is None and replays_cleanly(r) for _, r in records)
    assert all(r.players[seat] == "exec:exec_bot.js" for seat, r in records)
    wins = sum(r.winner == seat for seat, r in records)
    assert wins >= 8, wins  # its simple rules beat uniform play


@needs_node
def test_the_reference_bot_plays_a_tournament_from_the_command_line(tmp_path):
    from conquian_arena.tournament import main

    out = tmp_path / "t"
    code = main([f"exec:{REFERENCE}", "random", "--games", "4", "--seed", "3", "--out", str(out), "-j", "1",
                 "--no-plot"])  # fmt: skip
    assert code == 0
    lines = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and all(line["failure"] is None for line in lines)
    assert {label for line in lines for label in line["seats"]} == {"exec:exec_bot.js", "random"}  # short labels


def test_the_same_seed_plays_the_same_games(tmp_path):
    # a program that plays at random from the start line's seed: its games depend on the seeds alone
    path = program(
        tmp_path,
        """
if msg['type'] == 'start': import random; rng = random.Random(msg['seed'])
if msg['type'] == 'act': answer(rng.choice(msg['legal']))
""",
    )
    runs = []
    for _ in range(2):
        bot = make_agent(f"exec:{path},seed=4")
        runs.append([r.actions for _, r in play(bot, games=3)])
        bot.close()
    other = make_agent(f"exec:{path},seed=5")
    assert runs[0] == runs[1] and [r.actions for _, r in play(other, games=3)] != runs[0]
    other.close()


# ------------------------------------------------------------------ failing programs


def test_a_crashing_program_loses_with_its_exit_and_last_words_and_is_restarted(tmp_path):
    counter = tmp_path / "starts"
    path = program(
        tmp_path,
        f"""
if msg['type'] == 'start': open({str(counter)!r}, 'a').write('x')
if msg['type'] == 'act' and msg['view']['stock_size'] <= 15: sys.stderr.write('out of luck\\n'); sys.exit(3)
if msg['type'] == 'act': answer(msg['legal'][-1])
""",
    )
    bot = make_agent(f"exec:{path}")
    records = play(bot, games=3)
    for seat, record in records:
        assert record.failure is not None and record.failure["seat"] == seat and record.failure["kind"] == "crash"
        assert record.failure["message"].startswith("exited: the program ended (with code 3)")
        assert "out of luck" in record.failure["message"]
        assert record.winner == 1 - seat and replays_cleanly(record)
    assert counter.read_text() == "xxx"  # started afresh for each game
    assert bot.running is None  # stopped after its failure


def test_a_program_that_exits_after_answering_loses_and_is_not_restarted_in_the_game(tmp_path):
    counter = tmp_path / "starts"
    path = program(
        tmp_path,
        f"""
if msg['type'] == 'start': open({str(counter)!r}, 'a').write('x')
if msg['type'] == 'act': answer(msg['legal'][0])
if msg['type'] == 'act' and msg['view']['stock_size'] <= 17: sys.exit(4)
""",
    )
    bot = make_agent(f"exec:{path}")
    for seat, record in play(bot, games=2):
        assert record.failure["seat"] == seat and record.failure["kind"] == "crash", record.failure
        assert record.failure["message"].startswith("exited: the program ended (with code 4)")
    assert counter.read_text() == "xx"  # one start per game: never restarted in the middle of one
    bot.close()


def test_a_hanging_program_loses_on_time_and_the_next_game_goes_on(tmp_path):
    path = program(
        tmp_path,
        """
if msg['type'] == 'act' and msg['view']['stock_size'] < 14: time.sleep(60)
if msg['type'] == 'act': answer(msg['legal'][0])
""",
    )
    bot = make_agent(f"exec:{path},time=0.3")
    start = time.monotonic()
    records = play(bot, games=2)
    assert time.monotonic() - start < 10
    for seat, record in records:
        assert record.failure == {"seat": seat, "kind": "crash", "message": "timeout: no answer within 0.3 s"}
        assert record.max_think[seat] < 2
    bot.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_program_is_stopped_with_what_it_started(tmp_path):
    # a shell script that starts the bot without exec: the bot is its child, and hangs
    child = program(tmp_path, "if msg['type'] == 'act': open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)")
    pid_file = tmp_path / "pid"
    script = tmp_path / "wrapper.sh"
    script.write_text(f"#!/bin/sh\n{child} {pid_file}\n")
    script.chmod(0o755)
    bot = make_agent(f"exec:{script},time=0.5")
    ((seat, record),) = play(bot)
    assert record.failure["message"].startswith("timeout")
    pid = int(pid_file.read_text())
    for _ in range(50):
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists() or stat.read_text().rpartition(")")[2].split()[0] in ("Z", "X"):
            break  # gone, or dead and waiting for its new parent to reap it
        time.sleep(0.1)
    else:
        raise AssertionError(f"the script's child {pid} outlived the program")


@pytest.mark.parametrize(
    "answer, message",
    [("'hello'", "garbage: the answer 'hello' is no action id"), ("'{\"move\": 3}'", "garbage: the answer"),
     ("'17.5'", "garbage"), ("'true'", "garbage"), ("'x' * 70000", "garbage: an answer line longer than")],
)  # fmt: skip
def test_a_program_answering_garbage_loses_the_game(tmp_path, answer, message):
    path = program(tmp_path, f"if msg['type'] == 'act': answer({answer})")
    bot = make_agent(f"exec:{path}")
    ((seat, record),) = play(bot)
    assert record.failure["seat"] == seat and record.failure["kind"] == "illegal", record.failure
    assert record.failure["message"].startswith(message) and record.actions == [] or seat == 1
    bot.close()


def test_a_program_answering_an_illegal_id_loses_as_any_bot_does(tmp_path):
    path = program(tmp_path, "if msg['type'] == 'act': answer(json.dumps({'action': 84 if 84 not in msg['legal'] "
                             "else 0}))")  # fmt: skip
    bot = make_agent(f"exec:{path}")
    for seat, record in play(bot, games=2):
        assert record.failure["seat"] == seat and record.failure["kind"] == "illegal"
        assert "84" in record.failure["message"] and replays_cleanly(record)
    bot.close()


def test_a_program_that_never_reads_its_input_cannot_block_the_arena(tmp_path):
    path = tmp_path / "deaf.py"  # refuses every card without reading a line: the pipe to it fills up
    path.write_text(f"#!{sys.executable}\nimport sys\nwhile True:\n    sys.stdout.write('81\\n')\n")
    path.chmod(0o755)
    bot = make_agent(f"exec:{path},time=0.3")
    start = time.monotonic()
    records = play(bot, games=6)
    assert time.monotonic() - start < 20
    failures = [r.failure for _, r in records if r.failure is not None]
    assert {"seat": 0, "kind": "crash", "message": "timeout: the program read none of its input for 0.3 s"} in [
        {**f, "seat": 0} for f in failures]  # fmt: skip
    bot.close()


def test_a_program_that_cannot_start_loses_at_the_start(tmp_path):
    path = tmp_path / "no_shebang"
    path.write_text("this is no program\n")
    path.chmod(0o755)
    bot = make_agent(f"exec:{path}")
    ((seat, record),) = play(bot)
    assert record.failure["seat"] == seat and record.failure["kind"] == "crash" and record.actions == []
    assert record.failure["message"].startswith("start: the program")


def test_faulty_programs_never_stop_a_tournament_and_every_loss_has_its_reason(tmp_path):
    from conquian_arena.tournament import run_tournament

    path = program(
        tmp_path,
        """
if msg['type'] == 'start': import random; rng = random.Random(msg['seed'])
if msg['type'] == 'act': roll = rng.random()
if msg['type'] == 'act' and roll < 0.02: sys.exit(1)
if msg['type'] == 'act' and roll < 0.04: time.sleep(30)
if msg['type'] == 'act' and roll < 0.06: answer('nonsense')
if msg['type'] == 'act' and roll < 0.08: answer(99)
if msg['type'] == 'act': answer(rng.choice(msg['legal']))
""",
    )
    start = time.monotonic()
    run_tournament([f"exec:{path},time=0.2", "greedy"], games=16, seed=5, out=tmp_path / "t", jobs=1,
                   bootstrap=20, plot=False, progress=False)  # fmt: skip
    assert time.monotonic() - start < 120
    lines = [json.loads(line) for line in (tmp_path / "t" / "games.jsonl").read_text().splitlines()]
    assert len(lines) == 16
    reasons = set()
    for line in lines:
        failure = line["failure"]
        if failure is not None:
            assert failure["kind"] in ("crash", "illegal") and failure["message"]
            reasons.add(failure["message"].split(":")[0] if failure["kind"] == "crash" else failure["kind"])
    assert len(reasons) >= 2, reasons


# ------------------------------------------------------------------ what the program gets


def test_the_program_runs_in_a_clean_environment_and_its_own_folder(tmp_path):
    report = tmp_path / "report.json"
    path = program(
        tmp_path,
        f"""
if msg['type'] == 'start': open({str(report)!r}, 'w').write(json.dumps([dict(os.environ), os.getcwd()]))
if msg['type'] == 'act': answer(msg['legal'][0])
""",
    )
    os.environ["CONQUIAN_SECRET"] = "must not leak"
    try:
        bot = make_agent(f"exec:{path}")
        play(bot)
    finally:
        del os.environ["CONQUIAN_SECRET"]
    environment, folder = json.loads(report.read_text())
    environment.pop("LC_CTYPE", None)  # Python may set it for itself
    assert environment == {"PATH": CLEAN_PATH, "HOME": folder, "TMPDIR": folder, "LANG": "C.UTF-8"}
    assert Path(folder).is_dir() and Path(folder) != Path.cwd()
    bot.close()
    assert not Path(folder).exists()  # its folder goes with it


def test_the_start_act_and_end_lines_hold_what_the_protocol_page_tables(tmp_path):
    log = tmp_path / "log.jsonl"
    path = program(
        tmp_path,
        f"""
open({str(log)!r}, 'a').write(json.dumps(msg) + '\\n')
{FIRST_LEGAL}
""",
    )
    bot = make_agent(f"exec:{path},time=2,seed=7")
    ((seat, record),) = play(bot)
    bot.close()
    messages = [json.loads(line) for line in log.read_text().splitlines()]
    start, *acts, end = messages
    assert start["type"] == "start" and start["protocol"] == 1 and start["seat"] == seat and start["time"] == 2
    assert 0 <= start["seed"] < 2**53 and start["cards"] == list(CARD_NAMES) and len(start["actions"]) == 85
    assert [m["type"] for m in acts] == ["act"] * record.decisions[seat]
    result = "draw" if record.winner is None else "win" if record.winner == seat else "loss"
    assert end == {"type": "end", "seat": seat, "winner": record.winner, "result": result}
    # every field sent is in a field table of docs/exec.md, and the tables name no field that is not
    assert sent_fields([start, *acts, end]) | {"action", "failure"} == tabled_fields()  # (those two: below)


def sent_fields(messages) -> set:
    return {key for m in messages for key in (*m, *m.get("view", ()))}


def tabled_fields() -> set:
    """The first column of every table of docs/exec.md headed ``| field | value |``."""
    fields, inside = set(), False
    for row in (ROOT / "docs" / "exec.md").read_text().splitlines():
        if row.startswith("| field | value |"):
            inside = True
        elif not row.startswith("|"):
            inside = False
        elif inside and row.startswith("| `"):
            fields.add(row.split("|")[1].strip().strip("`"))
    return fields


def test_an_illegal_answer_reaches_the_end_line(tmp_path):
    log = tmp_path / "log.jsonl"
    path = program(
        tmp_path,
        f"""
open({str(log)!r}, 'a').write(line)
if msg['type'] == 'act': answer(99)
""",
    )
    opponent = make_agent(f"exec:{path}")
    bot = make_agent(f"exec:{program(tmp_path, FIRST_LEGAL, name='fine.py')}")
    record = play_game([bot, opponent], hands=deal_for_seed(0)[0], stock=deal_for_seed(0)[1], seed=0)
    bot.close()
    opponent.close()
    assert record.failure is not None and record.failure["seat"] == 1
    ends = [json.loads(line) for line in log.read_text().splitlines() if '"type":"end"' in line]
    # an illegal id is the game's to judge: the program is not stopped, and its end line says why it lost
    assert ends == [{"type": "end", "seat": 1, "winner": 0, "result": "loss", "failure": record.failure}]
    assert sent_fields(ends) <= tabled_fields()


def test_the_view_is_the_observation_by_name():
    hands, stock = deal_for_seed(3)
    state = new_game(hands=hands, stock=stock)
    bots = [GreedyAgent(), GreedyAgent()]
    while not state.is_terminal():
        for player in (0, 1):
            obs = encode(state, player)
            view, named = view_fields(obs), decode(obs)
            assert list(view) == [name for name, *_ in OBS_LAYOUT]
            for name, value in named.items():
                shown = [CARD_NAMES[c] for c in view[name]] if isinstance(view[name], list) else view[name]
                assert shown == value, name
        state.apply(act(bots[state.player], state))


def _decisions_sent(tmp_path, states_by_trial) -> list[list[str]]:
    """The act lines a recording program received for each trial's positions."""
    lines = []
    for trial, states in enumerate(states_by_trial):
        log = tmp_path / f"sent{trial}.jsonl"
        path = program(tmp_path, f"""
open({str(log)!r}, 'a').write(line)
{FIRST_LEGAL}
""", name=f"recorder{trial}.py")  # fmt: skip
        bot = make_agent(f"exec:{path}")
        for state in states:
            bot.reset(state.player, seed=1)
            act(bot, state)
        bot.close()
        lines.append([line for line in log.read_text().splitlines() if '"type":"act"' in line])
    return lines


def _positions(games: int) -> list:
    states = []
    for seed in range(games):
        hands, stock = deal_for_seed(100 + seed)
        state = new_game(hands=hands, stock=stock, rules=Rules(forcing=seed % 2 == 1))
        bots = [GreedyAgent(), GreedyAgent()]
        while not state.is_terminal():
            if state.hands[1 - state.player] & ~state.chosen and state.stock_pos < 20:
                states.append(state.clone())
            state.apply(act(bots[state.player], state))
    return states


def test_the_view_sent_never_holds_a_hidden_card(tmp_path):
    # the permutation check over the JSON sent: the opponent's hidden cards and the stock re-dealt,
    # every act line the program reads is the same, byte for byte
    states = _positions(6)
    rng = random.Random(0)
    variants = [[permute_hidden(s, rng) for s in states] for _ in range(2)]
    moved = sum(v.hands[1 - v.player] != s.hands[1 - s.player] for v, s in zip(variants[0], states, strict=True))
    assert moved > len(states) // 2
    sent = _decisions_sent(tmp_path, [states, *variants])
    assert len(sent[0]) == len(states) > 200
    assert sent[1] == sent[0] and sent[2] == sent[0]


def test_the_permutation_check_catches_a_view_that_peeks(tmp_path, monkeypatch):
    def peeking_act(self, observation, mask, view):  # the opponent's hand added to the view
        line = json.loads(act_message(observation, mask, view.player))
        line["view"]["opponent_hand"] = [c for c in range(40) if view._state.hands[1 - view.player] >> c & 1]
        return int(self._exchange(json.dumps(line, separators=(",", ":")) + "\n", answer=True))

    monkeypatch.setattr(ProgramAgent, "act", peeking_act)
    states = _positions(1)[5:25]
    rng = random.Random(1)
    sent = _decisions_sent(tmp_path, [states, [permute_hidden(s, rng) for s in states]])
    assert len(sent[0]) == 20 and sent[0] != sent[1]


def test_act_message_is_one_line_of_the_legal_ids_and_the_view():
    hands, stock = deal_for_seed(1)
    state = new_game(hands=hands, stock=stock)
    obs, mask = encode(state, 0), action_mask(state, 0)
    line = act_message(obs, mask, 0)
    assert line.endswith("\n") and line.count("\n") == 1
    message = json.loads(line)
    assert message["legal"] == np.flatnonzero(mask).tolist()
    assert message["view"]["own_hand"] == sorted(c for c in range(40) if state.hands[0] >> c & 1)
    assert PlayerView(state, 0).player == message["seat"] == 0


# ------------------------------------------------------------------ specs


def test_exec_specs_are_checked_when_read(tmp_path):
    path = program(tmp_path, FIRST_LEGAL)
    with pytest.raises(SpecError, match=r"an exec bot needs the program to start: exec:PATH"):
        make_agent("exec")
    with pytest.raises(SpecError, match="no program .*nothing-here"):
        make_agent(f"exec:{tmp_path / 'nothing-here'}")
    plain = tmp_path / "plain.py"
    plain.write_text("print(1)\n")
    with pytest.raises(SpecError, match=r"is not executable: make it so \(chmod \+x\)"):
        make_agent(f"exec:{plain}")
    with pytest.raises(SpecError, match=r"time must be a number in \[0.001, 3600\], got 0"):
        make_agent(f"exec:{path},time=0")
    bot = make_agent(f"exec:{path},time=0.5,startup=2,seed=3")
    assert isinstance(bot, ProgramAgent) and (bot.time, bot.startup, bot.seed) == (0.5, 2.0, 3)
    assert bot.running is None  # built, not started: listing a tournament's bots starts nothing
    assert runs_code(f"exec:{path}")  # a spec read from a file may not start a program on its own


def test_folders_left_by_processes_gone_are_swept(tmp_path, monkeypatch):
    # a tournament's pool workers are killed at its end: their programs' folders stayed in the temp folder
    import subprocess
    import tempfile

    import agents.program as program_module

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(program_module, "_swept", False)
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = tmp_path / f"conquian-exec-{gone.pid}-abc"
    alive = tmp_path / f"conquian-exec-{os.getppid()}-def"
    for folder in (stale, alive):
        folder.mkdir()
        (folder / ".stderr").write_text("")
    bot = make_agent(f"exec:{program(tmp_path, FIRST_LEGAL)}")
    play(bot)
    assert not stale.exists() and alive.exists()
    assert [f.name.split("-")[2] for f in tmp_path.glob("conquian-exec-*")].count(str(os.getpid())) == 1  # its own
    bot.close()
    assert not list(tmp_path.glob(f"conquian-exec-{os.getpid()}-*"))
