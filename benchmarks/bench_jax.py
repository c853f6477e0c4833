"""Speed of the JAX engine (conquian_env.jax), with the numba engine measured in the same run.

    python benchmarks/bench_jax.py                       # CPU: batch 1k, 8k, 64k, numba beside it
    python benchmarks/bench_jax.py --gpu --ppo           # accelerator: batch 8k .. 1M, no numba, and PPO
    python benchmarks/bench_jax.py --greedy --sizes 1024,8192   # the greedy bot, numba's beside it
    python benchmarks/bench_jax.py --gpu --ppo --ppo-opponent greedy --greedy
    python benchmarks/bench_jax.py --sizes 8192,1048576 --steps 200 --no-numba

Prints, for N games stepped together:

(a) JAX: random legal play with masks and observations, the whole loop in one
    ``jax.jit`` (``lax.scan`` of ``--steps`` steps of ``jax.vmap(auto_reset(env.step,
    env.init))``, actions drawn from the legal mask by ``pgx.experimental.act_randomly``):
    decisions/s, on whatever backend JAX picked (``JAX_PLATFORMS=cpu`` forces the CPU);
(b) numba (``conquian_env.vector.VectorGame``, CPU only): the same random play with
    observations and masks (``step(random_actions())``), and the raw engine without
    observations (``play_random``, all in compiled code), decisions/s;
(c) with ``--ppo``: the PPO example (``examples/jax_ppo.py``, needs optax) end to end,
    environment decisions/s of whole updates (rollout against ``--ppo-opponent``, random
    or greedy, GAE, 4 epochs of 8 minibatches), ``--ppo-steps`` decisions per game per
    update, by batch size.
(e) with ``--greedy``: the greedy bot in JAX (``agents.greedy.greedy_jax.greedy_actions``, jitted)
    deciding for every game of a batch, greedy decisions/s, on the positions of 10
    snapshots of games played by greedy against greedy (every 6 decisions from the deal;
    harder than random play's positions), next to the numba kernel
    (``agents.greedy.greedy_kernels.greedy_actions_serial``, one core) on the numba engine's
    positions of the same kind.
(d) with ``--layout``: the card-set layout of the meld search's hot part (72 set choices
    taken out, run coverage of the rest, required cards covered, union of the melds) on
    two ``uint32`` words (the engine's layout) and on ``(40,)`` bool vectors, searches/s
    at the first batch size, after checking that both give the same answers.

Each figure is the best of ``--repeats`` runs after a warm-up call (compilation is not
timed; it is printed).  A decision is one ``step`` of one game: all of them are counted,
including the steps that finish a game and deal the next one.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CPU_SIZES = "1024,8192,65536"
GPU_SIZES = "8192,65536,262144,1048576"


def jax_random_play(n: int, steps: int, repeats: int, rules: Any) -> tuple[float, float]:
    """(decisions/s, compile seconds) of jitted random play in ``n`` games."""
    import jax
    from pgx.experimental import act_randomly, auto_reset

    from conquian_env.jax import Conquian

    env = Conquian(rules=rules)
    step = jax.vmap(auto_reset(env.step, env.init))

    @jax.jit
    def run(state, key):
        def body(carry, _):
            state, key = carry
            key, k_act, k_reset = jax.random.split(key, 3)
            action = act_randomly(k_act, state.legal_action_mask)
            state = step(state, action, jax.random.split(k_reset, n))
            return (state, key), None

        (state, key), _ = jax.lax.scan(body, (state, key), None, length=steps)
        return state, key

    key = jax.random.PRNGKey(0)
    state = jax.jit(jax.vmap(env.init))(jax.random.split(key, n))
    t = time.perf_counter()
    state, key = run(state, key)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - t
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        state, key = run(state, key)
        jax.block_until_ready(state)
        best = max(best, n * steps / (time.perf_counter() - t))
    return best, compile_s


def numba_rates(n: int, steps: int, repeats: int, rules: Any) -> tuple[float, float]:
    """(decisions/s with observations and masks, raw decisions/s) of the numba engine."""
    import numpy as np

    from conquian_env.vector import VectorGame

    games = VectorGame(n, seed=0, rules=rules)
    rng = np.random.default_rng(0)
    games.step(games.random_actions(rng))  # compiled (numba caches on disk): warms only
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(steps):
            games.step(games.random_actions(rng))
        best = max(best, n * steps / (time.perf_counter() - t))
    raw = VectorGame(n, seed=0, rules=rules, observations=False)
    raw.play_random(2)
    raw_best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        raw.play_random(steps)
        raw_best = max(raw_best, n * steps / (time.perf_counter() - t))
    return best, raw_best


def ppo_rate(n: int, steps: int, repeats: int, rules: Any, opponent: str = "random") -> tuple[float, float]:
    """(decisions/s end to end, compile seconds) of PPO updates (examples/jax_ppo.py) on ``n`` games."""
    import argparse

    import jax

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from jax_ppo import make_train

    args = argparse.Namespace(
        num_envs=n, num_steps=steps, chunk=2, epochs=4, minibatches=8, hidden=256, lr=3e-4, gamma=0.99,
        lam=0.95, clip=0.2, ent=0.01, vf=0.5, rules=rules, opponent=opponent,
    )  # fmt: skip
    init, train_chunk = make_train(args)
    params, opt_state, state = init(jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(1)
    t = time.perf_counter()
    out = train_chunk(params, opt_state, state, key)
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - t
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        out = train_chunk(*out[:4])
        jax.block_until_ready(out)
        best = max(best, n * steps * args.chunk / (time.perf_counter() - t))
    return best, compile_s


def greedy_rates(n: int, repeats: int, with_numba: bool) -> tuple[float, float, float]:
    """(JAX greedy decisions/s, compile seconds, numba serial greedy decisions/s or nan)."""
    import jax
    import numpy as np
    from pgx.experimental import auto_reset

    from agents.greedy.greedy_jax import greedy_actions
    from conquian_env.jax import Conquian

    env = Conquian(first="random")
    step = jax.jit(jax.vmap(auto_reset(env.step, env.init)))
    choose = jax.jit(greedy_actions)
    state = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(0), n))
    t = time.perf_counter()
    jax.block_until_ready(choose(state))
    compile_s = time.perf_counter() - t
    snapshots = []
    key = jax.random.PRNGKey(1)
    for k in range(60):  # greedy against greedy; a finished game is dealt anew (auto_reset)
        key, sub = jax.random.split(key)
        state = step(state, choose(state), jax.random.split(sub, n))
        if k % 6 == 5:
            snapshots.append(state)
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        for snap in snapshots:
            jax.block_until_ready(choose(snap))
        best = max(best, n * len(snapshots) / (time.perf_counter() - t))
    numba = float("nan")
    if with_numba:
        from agents.greedy import greedy_kernels as GK
        from conquian_env.vector import VectorGame

        games = VectorGame(n, seed=0, first="alternate")
        rows, out = np.arange(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        GK.greedy_actions_serial(games.state, rows, out)  # compiled (cached on disk)
        positions = []
        for k in range(60):
            games.step(GK.greedy_actions(games))
            if k % 6 == 5:
                positions.append(np.ascontiguousarray(games.state))
        for _ in range(repeats):
            t = time.perf_counter()
            for position in positions:
                GK.greedy_actions_serial(position, rows, out)
            numba = max(0.0 if numba != numba else numba, n * len(positions) / (time.perf_counter() - t))
    return best, compile_s, numba


def layout_rates(n: int, repeats: int) -> tuple[float, float]:
    """(searches/s on words, on bool vectors) of the meld search's hot part, random pools."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from conquian_env.jax.melds import long_blocks

    rng = np.random.default_rng(0)
    cards = np.stack([rng.permutation(40)[:11] for _ in range(n)])
    rows = np.arange(n)[:, None]
    req_b, opt_b = np.zeros((n, 40), bool), np.zeros((n, 40), bool)
    req_b[rows, cards[:, :4]] = True
    opt_b[rows, cards[:, 4:]] = True
    sets_b = rng.random((n, 72, 40)) < 0.05

    def to_words(b: np.ndarray) -> np.ndarray:
        return (b.reshape(b.shape[:-1] + (2, 20)) * (1 << np.arange(20))).sum(-1).astype(np.uint32)

    def words(req, opt, sets):
        runs = long_blocks((req | opt) & ~sets)
        ok = jnp.all((req & ~sets & ~runs) == 0, -1)
        melds = jnp.where(ok[:, None], (sets | runs) & opt, jnp.uint32(0))
        return ok.any(), jax.lax.reduce(melds, jnp.uint32(0), jax.lax.bitwise_or, (0,))

    def bools(req, opt, sets):
        rest = ((req | opt) & ~sets).reshape(72, 4, 10)
        start = jnp.concatenate([rest[..., :-2] & rest[..., 1:-1] & rest[..., 2:], jnp.zeros((72, 4, 2), bool)], -1)
        runs = (start | jnp.roll(start, 1, -1) | jnp.roll(start, 2, -1)).reshape(72, 40)
        ok = jnp.all(~(req & ~sets & ~runs), -1)
        return ok.any(), (ok[:, None] & (sets | runs) & opt).any(0)

    rates = []
    answers = []
    for fn, args in ((words, (to_words(req_b), to_words(opt_b), to_words(sets_b))), (bools, (req_b, opt_b, sets_b))):
        run = jax.jit(jax.vmap(fn))
        args = [jnp.asarray(a) for a in args]
        answers.append(jax.device_get(run(*args)))
        best = 0.0
        for _ in range(repeats):
            t = time.perf_counter()
            jax.block_until_ready(run(*args))
            best = max(best, n / (time.perf_counter() - t))
        rates.append(best)
    (ok_w, play_w), (ok_b, play_b) = answers
    if not (np.array_equal(ok_w, ok_b) and np.array_equal(to_words(play_b), play_w)):
        raise AssertionError("the two layouts disagree: the comparison is void")
    return rates[0], rates[1]


def _fmt(rate: float) -> str:
    return f"{rate / 1e6:9.2f}M" if rate >= 1e5 else f"{rate / 1e3:9.2f}k"


def main() -> None:
    from conquian_env.rules import add_arguments as add_rule_arguments

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", help=f"batch sizes, comma-separated (default {CPU_SIZES}; with --gpu {GPU_SIZES})")
    parser.add_argument("--gpu", action="store_true", help="accelerator sizes; numba is skipped")
    parser.add_argument("--steps", type=int, default=0, help="steps per timed run (default: about 2M decisions)")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per figure, the best is printed")
    add_rule_arguments(parser, dest="rules")  # one flag per rule field (conquian_env.rules)
    parser.add_argument("--no-numba", action="store_true", help="skip the numba engine")
    parser.add_argument("--layout", action="store_true", help="also words vs bool vectors for the meld search")
    parser.add_argument("--ppo", action="store_true", help="also the PPO example end to end (needs optax)")
    parser.add_argument("--ppo-steps", type=int, default=64, help="PPO rollout length (decisions per game)")
    parser.add_argument("--ppo-opponent", choices=("random", "greedy"), default="random", help="PPO's opponent")
    parser.add_argument("--greedy", action="store_true", help="also the greedy bot in JAX (numba's beside it on CPU)")
    args = parser.parse_args()
    try:
        sizes = [int(s) for s in (args.sizes or (GPU_SIZES if args.gpu else CPU_SIZES)).split(",")]
    except ValueError:
        parser.error(f"--sizes takes positive integers separated by commas, got {args.sizes!r}")
    if any(n < 1 for n in sizes):
        parser.error(f"--sizes takes positive integers, got {args.sizes!r}")
    if args.steps < 0 or args.repeats < 1 or args.ppo_steps < 1:
        parser.error("--steps must be positive (0: automatic), --repeats and --ppo-steps at least 1")

    import jax

    device = jax.devices()[0]
    print(f"JAX {jax.__version__} on {device.platform} ({device.device_kind}); {os.cpu_count()} CPUs")
    print(f"python {platform.python_version()}, {platform.machine()}, rules: {args.rules}")
    with_numba = not args.no_numba and not args.gpu
    header = f"{'games':>9} {'steps':>6} {'JAX dec/s':>11} {'compile':>8}"
    if with_numba:
        header += f" {'numba obs':>11} {'numba raw':>11} {'JAX/numba':>9}"
    print(header)
    for n in sizes:
        steps = args.steps or max(10, min(500, 2_000_000 // n))
        rate, compile_s = jax_random_play(n, steps, args.repeats, args.rules)
        line = f"{n:9d} {steps:6d} {_fmt(rate):>11} {compile_s:7.1f}s"
        if with_numba:
            obs_rate, raw_rate = numba_rates(n, steps, args.repeats, args.rules)
            line += f" {_fmt(obs_rate):>11} {_fmt(raw_rate):>11} {rate / obs_rate:9.2f}"
        print(line, flush=True)
    if args.layout:
        on_words, on_bools = layout_rates(sizes[0], max(args.repeats, 3))
        print(f"meld search hot part, {sizes[0]} searches: two uint32 words {_fmt(on_words)}/s, "
              f"bool vectors {_fmt(on_bools)}/s ({on_words / on_bools:.0f}x)")  # fmt: skip
    if args.greedy:
        print("greedy bot (agents.greedy.greedy_jax.greedy_actions), positions of greedy-against-greedy games")
        print(f"{'games':>9} {'JAX greedy/s':>12} {'compile':>8}" + (f" {'numba 1 core':>12}" if with_numba else ""))
        for n in sizes:
            rate, compile_s, numba = greedy_rates(n, args.repeats, with_numba)
            line = f"{n:9d} {_fmt(rate):>12} {compile_s:7.1f}s"
            print(line + (f" {_fmt(numba):>12}" if with_numba else ""), flush=True)
    if args.ppo:
        print(f"PPO (examples/jax_ppo.py) against {args.ppo_opponent}, {args.ppo_steps} decisions per game per update")
        print(f"{'games':>9} {'PPO dec/s':>11} {'compile':>8}")
        for n in sizes:
            if n * args.ppo_steps % 8:
                print(f"{n:9d} skipped: games x --ppo-steps must be a multiple of 8 minibatches")
                continue
            rate, compile_s = ppo_rate(n, args.ppo_steps, args.repeats, args.rules, args.ppo_opponent)
            print(f"{n:9d} {_fmt(rate):>11} {compile_s:7.1f}s", flush=True)


if __name__ == "__main__":
    main()
