"""PPO with action masks on the JAX engine, PureJaxRL style: environment, opponent, network
and update in one ``jax.jit``.

    pip install -e ".[jax]"                            # JAX, Pgx and optax
    python examples/jax_ppo.py                         # 1024 games, about 6.5M decisions
    python examples/jax_ppo.py --num-envs 65536 --updates 200    # on an accelerator
    python examples/jax_ppo.py --opponent greedy       # against the greedy bot

The learner plays seat 0 of every game (``first="random"``: it moves first in half of
them) against ``--opponent``: ``random`` (a uniformly random legal action) or ``greedy``
(:func:`agents.greedy.greedy_jax.greedy_actions`, the decisions of ``agents.greedy.greedy.GreedyAgent``,
computed only in the games where the opponent is to move).  Every step of the rollout is one
decision in every game, the learner's (sampled from the masked policy) or the opponent's;
only the learner's decisions are trained on.  Their advantages (GAE) link each learner
decision to the next one of the same game, folding in the reward and the end of a game
met on the opponent's decisions between them.  The network is a plain-JAX MLP on the
observation (``env.observation_shape``: the pieces of ``conquian_env.layout.OBSERVATION``),
with a policy head (one logit per action, ``env.num_actions``, illegal ones masked out) and a
value head; optax's Adam updates it.

Each call of ``train_chunk`` runs ``--chunk`` updates (rollout, GAE, epochs of
minibatch updates) inside one jit; the script prints, after each chunk, the learner's
result against the opponent over the games that finished in it (the shares of wins, draws and
losses, the share of the decided games won, ``won/dec``, and the mean reward), the wall time, and
the environment decisions per second.  Against ``random`` most games are draws (random draws 92%
of its games against random), so the mean reward moves little: read ``won/dec``, or train with
``--opponent greedy``, against which a learner's progress shows in every column.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, NamedTuple

from conquian_env.extras import one_line
from conquian_env.rules import add_arguments as add_rule_arguments

with one_line("examples/jax_ppo.py"):  # JAX, Pgx and optax: the 'jax' extra
    import jax
    import jax.numpy as jnp
    import optax
    from pgx.experimental import auto_reset

    from agents.greedy.greedy_jax import greedy_actions
    from conquian_env.jax import Conquian

LEARNER = 0
OPPONENTS = ("random", "greedy")


def init_params(key: jax.Array, sizes: list[int]) -> list[dict[str, jax.Array]]:
    params = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        key, sub = jax.random.split(key)
        scale = 0.01 if i == len(sizes) - 2 else jnp.sqrt(2.0 / n_in)
        params.append({"w": jax.random.normal(sub, (n_in, n_out)) * scale, "b": jnp.zeros(n_out)})
    return params


def mlp(params: list[dict[str, jax.Array]], x: jax.Array) -> jax.Array:
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def policy(params: dict[str, Any], obs: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Masked log-probabilities (one per action) and value of observations (bools, ``OBS_SIZE``)."""
    x = obs.astype(jnp.float32)
    logits = mlp(params["pi"], x)
    logits = jnp.where(mask, logits, -1e9)
    return jax.nn.log_softmax(logits), mlp(params["v"], x)[..., 0]


def random_legal(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random legal action per row: one uniform number a row."""
    n = mask.sum(axis=-1)
    k = jnp.floor(jax.random.uniform(key, n.shape) * n).astype(jnp.int32)
    return jnp.argmax(jnp.cumsum(mask, axis=-1) > k[..., None], axis=-1)


class Transition(NamedTuple):
    obs: jax.Array
    mask: jax.Array
    action: jax.Array
    logp: jax.Array
    value: jax.Array
    learner: jax.Array  # the learner made this decision
    reward: jax.Array  # the learner's reward after it
    done: jax.Array  # a game ended with it


def make_train(args: argparse.Namespace):
    env = Conquian(rules=args.rules, first="random")
    n, t_len = args.num_envs, args.num_steps
    step = jax.vmap(auto_reset(env.step, env.init))
    tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(args.lr, eps=1e-5))

    def init(key: jax.Array):
        k_env, k_pi, k_v = jax.random.split(key, 3)
        sizes = [*env.observation_shape, args.hidden, args.hidden]
        params = {"pi": init_params(k_pi, sizes + [env.num_actions]), "v": init_params(k_v, sizes + [1])}
        state = jax.vmap(env.init)(jax.random.split(k_env, n))
        return params, tx.init(params), state

    def rollout(params, state, key):
        def body(carry, _):
            state, key = carry
            key, k_pi, k_opp, k_env = jax.random.split(key, 4)
            logp_all, value = policy(params, state.observation, state.legal_action_mask)
            mine = jax.random.categorical(k_pi, logp_all)
            learner = state.current_player == LEARNER
            if args.opponent == "greedy":
                theirs = greedy_actions(state, ~learner, args.rules)  # (auto_reset keeps `terminated` on a new deal)
            else:
                theirs = random_legal(k_opp, state.legal_action_mask)
            action = jnp.where(learner, mine, theirs)
            logp = jnp.take_along_axis(logp_all, action[:, None], axis=1)[:, 0]
            nxt = step(state, action, jax.random.split(k_env, n))
            tr = Transition(
                state.observation,
                state.legal_action_mask,
                action,
                logp,
                value,
                learner,
                nxt.rewards[:, LEARNER],
                nxt.terminated,
            )
            return (nxt, key), tr

        (state, key), traj = jax.lax.scan(body, (state, key), None, length=t_len)
        _, last_value = policy(params, jax.vmap(env.observe)(state, jnp.full(n, LEARNER)), state.legal_action_mask)
        return state, traj, last_value

    def advantages(traj: Transition, last_value: jax.Array):
        """GAE over the learner's decisions only (see the module docstring)."""

        def back(carry, tr):
            next_value, next_adv, reward, done = carry
            reward = jnp.where(tr.done, tr.reward, reward + tr.reward)
            done = tr.done | done
            live = 1.0 - done.astype(jnp.float32)
            delta = reward + args.gamma * next_value * live - tr.value
            adv = delta + args.gamma * args.lam * live * next_adv
            zero = jnp.zeros_like(reward)
            carry = (
                jnp.where(tr.learner, tr.value, next_value),
                jnp.where(tr.learner, adv, next_adv),
                jnp.where(tr.learner, zero, reward),
                jnp.where(tr.learner, False, done),
            )
            return carry, jnp.where(tr.learner, adv, 0.0)

        zero = jnp.zeros_like(last_value)
        start = (last_value, zero, zero, jnp.zeros(last_value.shape, bool))
        _, adv = jax.lax.scan(back, start, traj, reverse=True)
        return adv, adv + traj.value

    def loss_fn(params, batch):
        tr, adv, target = batch
        w = tr.learner.astype(jnp.float32)
        count = jnp.maximum(w.sum(), 1.0)
        logp_all, value = policy(params, tr.obs, tr.mask)
        logp = jnp.take_along_axis(logp_all, tr.action[:, None], axis=1)[:, 0]
        mean = (adv * w).sum() / count
        std = jnp.sqrt((((adv - mean) ** 2) * w).sum() / count) + 1e-8
        norm = (adv - mean) / std
        ratio = jnp.exp(logp - tr.logp)
        clipped = jnp.clip(ratio, 1 - args.clip, 1 + args.clip)
        pg = -(jnp.minimum(ratio * norm, clipped * norm) * w).sum() / count
        vf = (((value - target) ** 2) * w).sum() / count
        probs = jnp.exp(logp_all)
        entropy = (-(jnp.where(tr.mask, probs * logp_all, 0.0)).sum(-1) * w).sum() / count
        return pg + args.vf * vf - args.ent * entropy

    def update(carry, _):
        params, opt_state, state, key = carry
        key, k_roll, k_perm = jax.random.split(key, 3)
        state, traj, last_value = rollout(params, state, k_roll)
        adv, target = advantages(traj, last_value)
        flat = jax.tree_util.tree_map(lambda x: x.reshape((t_len * n,) + x.shape[2:]), (traj, adv, target))

        def epoch(carry, k):
            params, opt_state = carry
            perm = jax.random.permutation(k, t_len * n).reshape(args.minibatches, -1)

            def minibatch(carry, idx):
                params, opt_state = carry
                batch = jax.tree_util.tree_map(lambda x: x[idx], flat)
                grads = jax.grad(loss_fn)(params, batch)
                updates, opt_state = tx.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), None

            return jax.lax.scan(minibatch, (params, opt_state), perm)[0], None

        (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state), jax.random.split(k_perm, args.epochs))
        ended = traj.done.astype(jnp.float32)
        stats = jnp.stack(
            [
                ended.sum(),
                (ended * (traj.reward > 0)).sum(),
                (ended * (traj.reward == 0)).sum(),
                (ended * (traj.reward < 0)).sum(),
            ]
        )
        return (params, opt_state, state, key), stats

    @jax.jit
    def train_chunk(params, opt_state, state, key):
        (params, opt_state, state, key), stats = jax.lax.scan(
            update, (params, opt_state, state, key), None, length=args.chunk
        )
        return params, opt_state, state, key, stats.sum(axis=0)

    return init, train_chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--num-steps", type=int, default=64, help="decisions per game per rollout")
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=10, help="updates per jitted call (one printed line)")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--lam", type=float, default=0.95)
    parser.add_argument("--clip", type=float, default=0.2)
    parser.add_argument("--ent", type=float, default=0.01)
    parser.add_argument("--vf", type=float, default=0.5)
    add_rule_arguments(parser, dest="rules")  # one flag per rule field (conquian_env.rules)
    parser.add_argument("--opponent", choices=OPPONENTS, default="random", help="the learner's opponent")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name in ("num_envs", "num_steps", "updates", "chunk", "epochs", "minibatches", "hidden"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer")
    if args.num_envs * args.num_steps % args.minibatches:
        parser.error("--num-envs * --num-steps must be a multiple of --minibatches")
    if args.updates % args.chunk:
        parser.error("--updates must be a multiple of --chunk")

    device = jax.devices()[0]
    print(
        f"JAX {jax.__version__} on {device.platform} ({device.device_kind}); "
        f"{args.num_envs} games x {args.num_steps} decisions per update, {args.updates} updates, "
        f"against {args.opponent}"
    )
    init, train_chunk = make_train(args)
    key = jax.random.PRNGKey(args.seed)
    key, sub = jax.random.split(key)
    params, opt_state, state = init(sub)
    per_chunk = args.num_envs * args.num_steps * args.chunk
    start = time.perf_counter()
    steady_time, steady_steps = 0.0, 0
    print(
        f"{'update':>6} {'decisions':>11} {'games':>7} {'win':>6} {'draw':>6} {'loss':>6} {'won/dec':>7} "
        f"{'reward':>7} {'wall s':>7} {'dec/s':>9}"
    )
    for c in range(args.updates // args.chunk):
        t = time.perf_counter()
        params, opt_state, state, key, stats = train_chunk(params, opt_state, state, key)
        games, wins, draws, losses = (float(x) for x in jax.device_get(stats))
        dt = time.perf_counter() - t
        if c:  # the first call compiles
            steady_time += dt
            steady_steps += per_chunk
        g = max(games, 1.0)
        decided = wins / (wins + losses) if wins + losses else float("nan")
        print(
            f"{(c + 1) * args.chunk:6d} {(c + 1) * per_chunk:11d} {int(games):7d} {wins / g:6.3f} {draws / g:6.3f} "
            f"{losses / g:6.3f} {decided:7.3f} {(wins - losses) / g:7.3f} {time.perf_counter() - start:7.1f} "
            f"{per_chunk / dt:9.0f}",
            flush=True,
        )
    total = time.perf_counter() - start
    rate = steady_steps / steady_time if steady_time else float("nan")
    print(f"total wall {total:.1f} s (first chunk includes compilation); steady {rate:,.0f} decisions/s end to end")


if __name__ == "__main__":
    main()
