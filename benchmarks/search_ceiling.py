"""The search's ceiling, a MEASUREMENT TOOL ONLY: the compiled search told the opponent's true
hidden hand (it reads ``view._state``: it cheats, is never a shipped bot and is not in the
registry), and a diagnosis of what the honest search loses against it.

    # strength, duplicate deals (conquian-evaluate's deal and game seeds), one line per game,
    # resumable; BOT: a registry spec, or ceiling[:key=value,...] (the cheating search)
    python benchmarks/search_ceiling.py play ceiling greedy --deals 200 --seed 4242 --out results/ceil.jsonl

    # diagnosis: positions where the honest search decides in real games against greedy; the honest
    # search's choice and the ceiling's at the same budget, both valued by the ceiling at a big budget
    python benchmarks/search_ceiling.py diagnose --games 60 --seed 515 --out results/diag.csv

``ceiling`` deals the opponent's true hand in every determinization (odds +inf for the held cards,
0 for the rest: :func:`agents.search.belief_kernels.deal_from_belief` puts exactly those cards in the hand)
and the stock in a uniform random order; everything else is the search's (race, greedy playouts).
The numbers are in ``docs/experiments/valueA/README.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from numba import njit  # noqa: E402

from agents.greedy.greedy_kernels import greedy_action  # noqa: E402
from agents.registry import make_agent  # noqa: E402
from agents.search import _search_kernels as K  # noqa: E402
from agents.search.belief_kernels import deal_from_belief  # noqa: E402
from agents.search.pimc import BeliefSearchAgent, view_row  # noqa: E402
from conquian_arena.match import deal_for_seed, play_game  # noqa: E402
from conquian_arena.schedule import deal_seed, game_seed  # noqa: E402
from conquian_arena.stats import t_interval  # noqa: E402
from conquian_env import kernels as E  # noqa: E402
from conquian_env.game import DISCARD, MELD, OFFER  # noqa: E402
from conquian_env.kernels import H0, NUM_COLUMNS, PLAYER, compute_legal  # noqa: E402
from conquian_env.view import PlayerView  # noqa: E402


class CeilingSearch(BeliefSearchAgent):
    """The compiled search told the opponent's true hand (a measurement, never a bot: it reads
    the hidden state); the stock order is still dealt at random. Knobs: the search's."""

    name = "ceiling"

    def __init__(self, time=None, iterations=None, z=3.0, seed=None):
        super().__init__(time=time, iterations=iterations, z=z, tries=1, seed=seed)

    def search(self, view: PlayerView) -> int:
        self._view = view
        return super().search(view)

    def deal_odds(self, row: np.ndarray, pool: np.ndarray, n_opp: int) -> np.ndarray:
        held = self._view._state.hands[1 - self._view.player]  # the cheat
        return np.array([np.inf if held >> int(c) & 1 else 0.0 for c in pool])


@njit(cache=False)
def history_mismatches(rows, gone, actions, opp, hands, out):
    """For each candidate hidden hand ``hands[n]``: how many of the opponent's recorded decisions
    (``rows[k]``: the full row before it, whose opponent hand is replaced by ``gone[k] | hand``, the
    cards that have left its hand since being public; ``actions[k]``: what it played) greedy's rules
    would have played otherwise (offers: take or refuse; discards: the card)."""
    S = np.zeros((1, NUM_COLUMNS), dtype=np.int64)
    for n in range(hands.shape[0]):
        bad = 0
        for k in range(rows.shape[0]):
            for c in range(NUM_COLUMNS):
                S[0, c] = rows[k, c]
            S[0, H0 + opp] = gone[k] | hands[n]
            compute_legal(S, 0)
            a = greedy_action(S, 0)
            if a != actions[k]:
                bad += 1
        out[n] = bad


@njit(cache=False)
def draw_hands(view, pool, odds, n_opp, seed, count):
    info = np.zeros(8, dtype=np.int64)
    info[0] = seed | 1
    out = np.empty(NUM_COLUMNS, dtype=np.int64)
    hands = np.empty(count, dtype=np.int64)
    opp = 1 - view[PLAYER]
    for n in range(count):
        deal_from_belief(view, pool, odds, n_opp, info, 0, out)
        hands[n] = out[H0 + opp] & ~view[H0 + opp]
    return hands


class HistorySearch(BeliefSearchAgent):
    """The search with deals weighted by the opponent's whole recorded history replayed with greedy's
    rules (exact inference against greedy, a model against others): ``particles`` hands drawn from
    the belief, each weighted ``eps ** mismatches``; each deal picks one.  The history (public: the
    opponent's decisions, each with the public position and the cards that have left its hand
    since) comes from the experiment's game loop (``self.history``: (state before, action) pairs)."""

    name = "history"

    def __init__(self, iterations=2000, z=3.0, particles=256, eps=0.05, seed=None):
        super().__init__(iterations=iterations, z=z, tries=1, seed=seed)
        self.particles, self.eps = particles, eps
        self.history = []
        self.record = None

    def search(self, view: PlayerView) -> int:
        me, opp = view.player, 1 - view.player
        row, pool, n_opp = view_row(view)
        with np.errstate(over="ignore"):
            odds = np.exp(self.belief.pool_logits(row, pool, n_opp))
        hands = draw_hands(row, pool, odds, n_opp, self.rng.getrandbits(62) | 1, self.particles)
        decisions = [(b, a) for b, a in self.history if b.player == opp and b.phase in (OFFER, DISCARD)]
        rows = np.zeros((len(decisions), NUM_COLUMNS), dtype=np.int64)
        gone = np.zeros(len(decisions), dtype=np.int64)
        acts = np.zeros(len(decisions), dtype=np.int64)
        true_now = view._state.hands[opp]  # only to compute the public "gone" sets (cards now melded or discarded)
        for k, (b, a) in enumerate(decisions):
            r, _, _ = view_row(PlayerView(b, me))
            r[E.H0 + me] = b.hands[me]
            rows[k] = r
            gone[k] = b.hands[opp] & ~true_now
            acts[k] = a
        bad = np.zeros(len(hands), dtype=np.int64)
        if len(decisions):
            history_mismatches(rows, gone, acts, opp, hands, bad)
        w = self.eps ** (bad - bad.min())
        self.last_mismatch = int(bad.min())
        w /= w.sum()
        if self.record is not None:  # how well each predicts the true hand (log loss per unseen card)
            truth = np.array([true_now >> int(c) & 1 for c in pool], dtype=float)
            p_belief = 1.0 / (1.0 + 1.0 / np.maximum(odds, 1e-300))
            member = (hands[:, None] >> pool[None, :]) & 1
            p_hist = (w[:, None] * member).sum(0)

            def ll(p):
                q = np.clip(p, 1e-4, 1 - 1e-4)
                return float(-np.mean(truth * np.log(q) + (1 - truth) * np.log(1 - q)))

            u = np.full(len(pool), n_opp / len(pool))
            self.record.append((view.move_count, ll(u), ll(p_belief), ll(p_hist), int(bad.min()), len(decisions)))
        search, results = self._new_search(row, pool, n_opp, self.rng.getrandbits(63) | 1)
        info, active = search.info, search.active
        n = int(info[K.I_ACTIONS])
        cum = np.cumsum(w)
        while info[K.I_PLAYOUTS] < self.iterations and active[:n].sum() > 1:
            h = hands[min(np.searchsorted(cum, self.rng.random()), len(hands) - 1)]
            o = np.array([np.inf if h >> int(c) & 1 else 0.0 for c in pool])  # this deal's hand, known
            results = K.run_search(search._replace(odds=o), results, 1)
        return int(K.best_action(info, search.actions, active, search.sums))


def build(spec: str, seed: int | None = None):
    kind, _, rest = spec.partition(":")
    if kind == "history":
        params = {}
        for item in filter(None, rest.split(",")):
            key, _, value = item.partition("=")
            params[key] = float(value) if key in ("eps", "z") else int(value)
        return HistorySearch(seed=seed, **params)
    if kind == "ceiling":
        params = {}
        for item in filter(None, rest.split(",")):
            key, _, value = item.partition("=")
            params[key] = float(value) if key in ("time", "z") else int(value)
        return CeilingSearch(seed=seed, **params)
    return make_agent(spec, seed=seed)


class Timed:
    """Counts the searched decisions of a search bot and their time (its ``search`` wrapped)."""

    def __init__(self, agent):
        self.agent, self.n, self.seconds, self.max = agent, 0, 0.0, 0.0
        if hasattr(agent, "search"):
            inner = agent.search

            def search(view):
                t = time.perf_counter()
                try:
                    return inner(view)
                finally:
                    dt = time.perf_counter() - t
                    self.n += 1
                    self.seconds += dt
                    self.max = max(self.max, dt)

            agent.search = search


def play(args) -> None:
    out = Path(args.out)
    done = {}
    if out.exists():
        for line in out.read_text().splitlines():
            try:
                g = json.loads(line)
                done[(g["deal"], g["swap"])] = g
            except (json.JSONDecodeError, KeyError):
                continue  # a line cut by a kill: its game is played again
    a, b = Timed(build(args.a)), Timed(build(args.b))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        for d in range(args.deals):
            hands, stock = deal_for_seed(deal_seed(args.seed, d))
            for swap in (0, 1):
                if (d, swap) in done:
                    continue
                n0, s0, m0 = a.n, a.seconds, a.max
                a.max = 0.0
                seats = [a.agent, b.agent] if swap == 0 else [b.agent, a.agent]
                hist = []
                for bot in seats:
                    if hasattr(bot, "history"):
                        bot.history = hist

                def on_move(before, action, after, hist=hist):
                    hist.append((before, action))

                rec = play_game(seats, hands=hands, stock=stock, first=0, seed=game_seed(args.seed, d, swap),
                                on_move=on_move)  # fmt: skip
                me = swap  # A's seat
                score = 0.5 if rec.winner is None else float(rec.winner == me)
                g = {"deal": d, "swap": swap, "score": score, "moves": rec.moves, "searched": a.n - n0,
                     "seconds": a.seconds - s0, "max": a.max, "failure": rec.failure}  # fmt: skip
                a.max = max(a.max, m0)
                done[(d, swap)] = g
                f.write(json.dumps(g) + "\n")
                f.flush()
    summarize(done, args.a, args.b)


def inference(args) -> None:
    """Log loss of the opponent's true hand per unseen card, by stage: uniform, the belief, the
    history-weighted particles (exact inference against greedy, up to the particles)."""
    bot = build(args.bot)
    bot.record = []
    greedy = make_agent("greedy")
    for d in range(args.deals):
        hands, stock = deal_for_seed(deal_seed(args.seed, d))
        for swap in (0, 1):
            hist = []
            bot.history = hist
            seats = [bot, greedy] if swap == 0 else [greedy, bot]
            play_game(seats, hands=hands, stock=stock, first=0, seed=game_seed(args.seed, d, swap),
                      on_move=lambda b, a, after, hist=hist: hist.append((b, a)))  # fmt: skip
    r = np.array(bot.record, dtype=float)
    for name, sel in (("early", r[:, 0] < 20), ("mid", (r[:, 0] >= 20) & (r[:, 0] < 45)), ("late", r[:, 0] >= 45),
                      ("all", r[:, 0] >= 0)):  # fmt: skip
        x = r[sel]
        print(f"{name:6} n={len(x):5} uniform={x[:, 1].mean():.4f} belief={x[:, 2].mean():.4f} "
              f"history={x[:, 3].mean():.4f} consistent-particle={np.mean(x[:, 4] == 0):.3f} "
              f"decisions={x[:, 5].mean():.1f}")  # fmt: skip


def summarize(games: dict, a: str, b: str) -> dict:
    deals = sorted({d for d, _ in games})
    per_deal = [np.mean([games[(d, s)]["score"] for s in (0, 1) if (d, s) in games]) for d in deals]
    mean, lo, hi = t_interval(per_deal)
    searched = sum(g["searched"] for g in games.values())
    seconds = sum(g["seconds"] for g in games.values())
    worst = max((g["max"] for g in games.values()), default=0.0)
    res = {"a": a, "b": b, "games": len(games), "score": mean, "lo": lo, "hi": hi,
           "ms_per_searched": 1000 * seconds / max(searched, 1), "max_ms": 1000 * worst,
           "failures": sum(g["failure"] is not None for g in games.values())}  # fmt: skip
    print(json.dumps(res))
    return res


# ------------------------------------------------------------------ diagnosis
def stage(move_count: int) -> str:
    return "early" if move_count < 20 else ("mid" if move_count < 45 else "late")


def kind(view: PlayerView) -> str:
    return {OFFER: "offer", DISCARD: "discard"}.get(view.phase, "force")


def positions(games: int, seed: int, honest: str):
    """States where the honest search (seat alternating) decided something, in games against greedy."""
    found = []
    bot, greedy = build(honest, seed=1), make_agent("greedy")
    for g in range(games):
        hands, stock = deal_for_seed(deal_seed(seed, g // 2))
        seat = g % 2
        seats = [bot, greedy] if seat == 0 else [greedy, bot]

        def on_move(before, action, after, seat=seat, g=g):
            if before.player == seat and before.phase != MELD:
                v = PlayerView(before, seat)
                mask = v.legal_action_mask()
                if mask & (mask - 1):
                    found.append((g, before, action))

        play_game(seats, hands=hands, stock=stock, first=0, seed=game_seed(seed, g // 2, g % 2), on_move=on_move)
    return found


def diagnose(args) -> None:
    out = Path(args.out)
    done = set()
    if out.exists():
        with out.open() as f:
            done = {(int(r["game"]), int(r["move"])) for r in csv.DictReader(f)}
    found = positions(args.games, args.seed, args.honest)
    print(f"{len(found)} searched positions in {args.games} games", flush=True)
    new = not out.exists()
    fields = ["game", "move", "kind", "stage", "n_actions", "played", "honest", "ceiling", "honest_big",
              "v_played", "v_honest", "v_ceiling", "v_honest_big", "v_best", "best"]  # fmt: skip
    with out.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        if new:
            w.writeheader()
        for k, (g, state, played) in enumerate(found):
            if (g, state.move_count) in done:
                continue
            view = PlayerView(state, state.player)
            n = args.iterations
            honest = build(f"{args.honest_budget}", seed=k)
            ceiling = CeilingSearch(iterations=n, seed=k)
            h = honest.search(view)
            c = ceiling.search(view)
            hb = build(f"search:iterations={args.big}", seed=k).search(view)
            judge = CeilingSearch(iterations=args.big, z=0.0, seed=10_000 + k)
            judge.search(view)
            vals = {a: m for a, (_, m) in judge.last_stats.items()}
            best = max(vals, key=vals.get)
            w.writerow({"game": g, "move": state.move_count, "kind": kind(view), "stage": stage(state.move_count),
                        "n_actions": len(vals), "played": played, "honest": h, "ceiling": c, "honest_big": hb,
                        "v_played": vals[played], "v_honest": vals[h], "v_ceiling": vals[c],
                        "v_honest_big": vals[hb], "v_best": vals[best], "best": best})  # fmt: skip
            f.flush()


def report(args) -> None:
    rows = list(csv.DictReader(open(args.csv)))
    games = len({r["game"] for r in rows})
    print(f"{len(rows)} positions, {games} games")
    for key in ("kind", "stage", None):
        groups = {}
        for r in rows:
            groups.setdefault(r[key] if key else "all", []).append(r)
        for name, rs in sorted(groups.items()):
            diff = np.array([float(r["v_ceiling"]) - float(r["v_honest"]) for r in rs])
            diff_big = np.array([float(r["v_ceiling"]) - float(r["v_honest_big"]) for r in rs])
            regret_c = np.array([float(r["v_best"]) - float(r["v_ceiling"]) for r in rs])
            changed = np.mean([r["honest"] != r["ceiling"] for r in rs])
            se = diff.std(ddof=1) / math.sqrt(len(rs)) if len(rs) > 1 else float("nan")
            print(f"{key or 'all':6} {name:8} n={len(rs):5} changed={changed:.3f} "
                  f"gain/pos={diff.mean():+.4f}±{1.96 * se:.4f} gain/game={diff.sum() / games:+.4f} "
                  f"(vs honest@big {diff_big.sum() / games:+.4f}) "
                  f"ceiling-regret/game={regret_c.sum() / games:+.4f}")  # fmt: skip


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("play")
    q.add_argument("a")
    q.add_argument("b")
    q.add_argument("--deals", type=int, default=200)
    q.add_argument("--seed", type=int, default=4242)
    q.add_argument("--out", required=True)
    q = sub.add_parser("diagnose")
    q.add_argument("--games", type=int, default=40)
    q.add_argument("--seed", type=int, default=515)
    q.add_argument("--honest", default="search:iterations=400")
    q.add_argument("--honest-budget", default="search:iterations=400")
    q.add_argument("--iterations", type=int, default=400)
    q.add_argument("--big", type=int, default=4000)
    q.add_argument("--out", required=True)
    q = sub.add_parser("inference")
    q.add_argument("bot", nargs="?", default="history:particles=1024,eps=0.01,iterations=200")
    q.add_argument("--deals", type=int, default=30)
    q.add_argument("--seed", type=int, default=515)
    q = sub.add_parser("report")
    q.add_argument("csv")
    args = p.parse_args(argv)
    {"play": play, "diagnose": diagnose, "report": report, "inference": inference}[args.cmd](args)


if __name__ == "__main__":
    main()
