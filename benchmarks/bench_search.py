"""The compiled search (spec ``pimc``) against the Python search (``ismcts-py``).

    python benchmarks/bench_search.py [--positions 30] [--iterations 500]
    python benchmarks/bench_search.py --strength 5,20,50,200,1000 --games 2000 --seed 7001 [-j 2]

Speed (default), on one core, both searches on the same positions (decisions with a
choice, from greedy self-play) at the same number of iterations (one iteration = one
determinization played out to the end of the game):

(a) iterations per second of the compiled search (with its race, and with ``z=0``: every
    action on every deal) and of the Python search, and their ratio;
(b) the time budget: with ``time=T`` the time each decision took (mean, 99th percentile,
    max, and the largest overshoot of the budget), for T = 5, 20, 50 ms.

Strength (``--strength MS,...``): for each budget in milliseconds a gauntlet of the
compiled search against ``greedy`` on duplicate deals (``conquian-evaluate``'s schedule,
``--seed``), with the score, its 95% interval, and the time per searched decision; the
results folders go under ``results/bench_search/`` (a rerun resumes them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.greedy.greedy import GreedyAgent  # noqa: E402
from agents.search.ismcts import ISMCTSAgent  # noqa: E402
from agents.search.pimc import PIMCAgent  # noqa: E402
from conquian_env.actions import str_to_action  # noqa: E402
from conquian_env.game import MELD, new_game  # noqa: E402
from conquian_env.observation import action_mask, encode  # noqa: E402
from conquian_env.rules import rules_of_record  # noqa: E402
from conquian_env.view import PlayerView  # noqa: E402


def positions(count: int, seed: int = 1000) -> list:
    """Decisions with a choice (take/refuse, discard, force) from greedy self-play, spread over the game."""
    greedy = GreedyAgent()
    found = []
    s = seed
    while len(found) < 4 * count:
        state = new_game(seed=s)
        s += 1
        while not state.is_terminal():
            view = PlayerView(state, state.player)
            mask = view.legal_action_mask()
            if state.phase != MELD and mask & (mask - 1):
                found.append(state.clone())
            state.apply(greedy.choose(view))
    return found[:: len(found) // count][:count]


def decide(bot, state) -> float:
    p = state.player
    t = time.perf_counter()
    bot.act(encode(state, p), action_mask(state, p), PlayerView(state, p))
    return time.perf_counter() - t


def iteration_rate(bot, states) -> tuple[float, float]:
    """Iterations per second over ``states`` and seconds per decision."""
    bot.reset(0, seed=1)
    decide(bot, states[0])  # warm
    spent = 0.0
    iterations = 0
    for state in states:
        spent += decide(bot, state)
        iterations += bot.last_iterations
    return iterations / spent, spent / len(states)


def speed(args: argparse.Namespace) -> None:
    states = positions(args.positions)
    n = args.iterations
    print(f"{len(states)} positions, {n} iterations per decision, one core\n")
    rows = [
        ("compiled (pimc, race z=3)", PIMCAgent(iterations=n, seed=1)),
        ("compiled, z=0 (every action every deal)", PIMCAgent(iterations=n, z=0, seed=1)),
        ("python (ismcts-py)", ISMCTSAgent(iterations=n, seed=1)),
    ]
    rates = {}
    print(f"{'search':<42} {'iterations/s':>13} {'ms/decision':>12}")
    for name, bot in rows:
        rate, per = iteration_rate(bot, states)
        rates[name] = rate
        print(f"{name:<42} {rate:>13,.0f} {per * 1e3:>12.1f}")
    python = rates["python (ismcts-py)"]
    print(
        f"\nratio compiled / python: {rates[rows[0][0]] / python:.1f}x (race), {rates[rows[1][0]] / python:.1f}x (z=0)"
    )

    print(
        f"\n{'time budget':<12} {'mean ms':>8} {'p99 ms':>8} {'max ms':>8} {'worst overshoot ms':>19} {'playouts':>9}"
    )
    for budget in (0.005, 0.02, 0.05):
        bot = PIMCAgent(time=budget, seed=2)
        bot.reset(0, seed=2)
        decide(bot, states[0])
        spent, playouts = [], []
        for state in states * max(1, 60 // len(states)):
            spent.append(decide(bot, state))
            playouts.append(bot.last_iterations)
        spent_ms = np.array(spent) * 1e3
        print(
            f"{budget * 1e3:>5.0f} ms   {spent_ms.mean():>8.2f} {np.percentile(spent_ms, 99):>8.2f} "
            f"{spent_ms.max():>8.2f} {spent_ms.max() - budget * 1e3:>19.2f} {np.mean(playouts):>9.0f}"
        )


def strength(args: argparse.Namespace) -> None:
    from conquian_arena.tournament import run_tournament

    budgets = [float(x) for x in args.strength.split(",")]
    print(f"compiled search against greedy, duplicate deals, seed {args.seed}, {args.games} games per budget\n")
    print(f"{'budget':>8} {'games':>6} {'score [95% CI]':>24} {'ms/searched decision':>21} {'max ms':>8} {'wall s':>7}")
    for ms in budgets:
        spec = f"pimc:time={ms / 1e3:g}"
        out = Path(args.out) / f"vs_greedy_t{ms:g}ms_g{args.games}_s{args.seed}"
        started = time.perf_counter()
        # the gauntlet bot plays each bot of the list: greedy alone (not a copy of itself)
        summary = run_tournament(
            ["greedy"], gauntlet=spec, games=args.games, seed=args.seed, jobs=args.jobs, out=str(out),
            plot=False, html=False, progress=False,
        )  # fmt: skip
        wall = time.perf_counter() - started
        (pair,) = summary["pairs"]
        searched = searched_decision_times(out / "games.jsonl", spec)
        lo, hi = pair["score_low"], pair["score_high"]
        print(
            f"{ms:>6g}ms {pair['games']:>6} {pair['score']:>8.3f} [{lo:.3f}, {hi:.3f}]  "
            f"{searched[0]:>21.1f} {searched[1]:>8.1f} {wall:>7.0f}"
        )


def searched_decision_times(path: Path, spec: str) -> tuple[float, float]:
    """Mean milliseconds per searched decision of ``spec`` (its think time over its decisions
    with a choice outside a meld, found by replaying each game; the others take
    microseconds) and its longest decision in milliseconds."""
    think, searched, longest = 0.0, 0, 0.0
    for line in path.read_text().splitlines():
        game = json.loads(line)
        seat = game["seats"].index(spec)
        think += game["think_time"][seat]
        longest = max(longest, game["max_think"][seat])
        state = new_game(hands=game["hands"], stock=game["stock"], first=game["first"], rules=rules_of_record(game))
        for action in game["actions"]:
            mask = state.legal_action_mask()
            if state.player == seat and state.phase != MELD and mask & (mask - 1):
                searched += 1
            state.apply(str_to_action(action))
    return think / max(searched, 1) * 1e3, longest * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=30)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--strength", default=None, help="budgets in ms, e.g. 5,20,50,200,1000")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7001)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default="results/bench_search")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores\n")
    if args.strength:
        strength(args)
    else:
        speed(args)


if __name__ == "__main__":
    main()
