"""Bots in any language (``exec:PATH``): decisions per second through the protocol, and a
tournament against a program that fails at random.

1. An instantly answering program (a few lines of Python that reply with the first legal id)
   plays ``--games`` whole games against greedy through the one game loop: decisions per
   second of the program's seat, protocol and game included, and the mean round trip of
   one decision.  The JavaScript reference bot (examples/exec_bot.js) the same, when node is
   installed.
2. ``--faulty`` games of a tournament between greedy and a program that, at each decision,
   exits, hangs, answers garbage or an illegal id with a small chance each: every game must
   be recorded, each forfeit with its reason, and the tournament must end.

Prints RESULT lines::

    python benchmarks/bench_exec.py                 # 200 games, then 100 faulty ones
    python benchmarks/bench_exec.py --games 50 --faulty 0
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from agents.greedy.greedy import GreedyAgent
from agents.registry import make_agent
from conquian_arena.match import deal_for_seed, play_game

ROOT = Path(__file__).resolve().parent.parent

INSTANT = """
import sys
for line in sys.stdin:
    if line.startswith('{"type":"act"'):
        at = line.index('"legal":[') + 9
        sys.stdout.write(line[at : line.index("]", at)].split(",")[0] + "\\n")
        sys.stdout.flush()
"""

FAULTY = """
import json, random, sys, time
rng = random.Random(0)
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        rng = random.Random(msg["seed"])
    if msg["type"] != "act":
        continue
    roll = rng.random()
    if roll < 0.005:
        sys.exit(1)                                  # crash
    elif roll < 0.010:
        time.sleep(3600)                             # hang
    elif roll < 0.015:
        print("I pass", flush=True)                  # garbage
    elif roll < 0.020:
        print(99, flush=True)                        # an id that is no action
    else:
        print(rng.choice(msg["legal"]), flush=True)
"""


def write_program(folder: Path, name: str, body: str) -> str:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return str(path)


def decisions_per_second(spec: str, games: int) -> tuple[float, float, int]:
    bot, greedy = make_agent(spec, 1), GreedyAgent()
    decisions, spent = 0, 0.0
    start = time.perf_counter()
    for game in range(games):
        hands, stock = deal_for_seed(game)
        seat = game % 2
        record = play_game([bot, greedy] if seat == 0 else [greedy, bot], hands=hands, stock=stock, seed=game)
        if record.failure is not None:
            raise SystemExit(f"{spec}: game {game} failed: {record.failure}")
        decisions += record.decisions[seat]
        spent += record.think_time[seat]
    wall = time.perf_counter() - start
    bot.close()
    return decisions / wall, 1e6 * spent / decisions, decisions


def faulty_tournament(folder: Path, games: int, time_limit: float) -> None:
    from conquian_arena.tournament import run_tournament

    program = write_program(folder, "faulty.py", FAULTY)
    out = folder / "faulty"
    start = time.perf_counter()
    run_tournament([f"exec:{program},time={time_limit:g}", "greedy"], games=games, seed=0, out=out, jobs=1,
                   bootstrap=100, plot=False, progress=False)  # fmt: skip
    wall = time.perf_counter() - start
    lines = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    reasons: collections.Counter[str] = collections.Counter()
    for line in lines:
        failure = line["failure"]
        if failure is None:
            reasons["played out"] += 1
        elif not failure.get("message"):
            reasons["NO REASON"] += 1
        else:
            head = failure["message"].split(":")[0]
            reasons[f"{failure['kind']}: {head}" if " " not in head else failure["kind"]] += 1
    shown = ", ".join(f"{what} {n}" for what, n in sorted(reasons.items()))
    print(f"RESULT faulty program against greedy: {len(lines)} of {games} games recorded in {wall:.1f} s ({shown})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="games of each instant program against greedy")
    parser.add_argument("--faulty", type=int, default=100, help="games of the faulty program's tournament (0: none)")
    parser.add_argument("--time", type=float, default=0.2, help="seconds per decision of the faulty program")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        programs = [("instant Python program", write_program(folder, "instant.py", INSTANT))]
        if shutil.which("node"):
            programs.append(("JavaScript reference bot", str(ROOT / "examples" / "exec_bot.js")))
        for what, path in programs:
            rate, round_trip, decisions = decisions_per_second(f"exec:{path}", args.games)
            print(f"RESULT exec {what}: {rate:,.0f} decisions/s over {decisions} decisions "
                  f"({round_trip:.0f} us a decision through the protocol, games against greedy included)")  # fmt: skip
        if args.faulty:
            faulty_tournament(folder, args.faulty, args.time)


if __name__ == "__main__":
    main()
