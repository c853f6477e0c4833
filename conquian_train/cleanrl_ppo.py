"""Masked PPO on Conquian in one file, in the style of CleanRL's ``ppo.py``.

Run: ``python -m conquian_train.cleanrl_ppo --total-steps 200000 --opponent random`` (shipped in
the package; ``python examples/cleanrl_ppo.py`` in the repository is the same; needs torch and
numba: ``pip install "conquian-env[train]"``).  ``--help`` lists every hyperparameter; to change
the loop itself, copy this file (``python -c "import conquian_train.cleanrl_ppo as m; print(m.__file__)"``).

Read it top to bottom: the settings (one dataclass, every field a command-line option),
the agent (an actor and a critic; illegal logits set to -inf before the categorical), the
evaluation, then the loop: collect ``num_steps`` steps in ``num_envs`` games, GAE, a few
epochs of the clipped objective, evaluate every ``eval_every`` steps.

The environment is the registered id's vector entry point,
``gymnasium.make_vec("conquian_env/Conquian-v0", num_envs,
vectorization_mode="vector_entry_point", opponent=...)``: ``ConquianVectorEnv`` on the
batched engine, the learner in one seat of each game (drawn per deal), the opponent's moves
played in batch between the learner's decisions.  The masks are ``infos["action_mask"]``.
A finished game is dealt anew in the same step (Gymnasium's same-step autoreset: the
returned observation is the new deal's, ``terminated`` marks the last step of the old one,
whose outcome is in ``infos["final_info"]["result"]``); games end only by terminating, so
GAE never bootstraps past an episode.  The same ``--seed`` gives the same run (torch on
``--torch-threads`` threads, default 1, the batched kernels on one core unless
``--parallel``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from conquian_env.extras import one_line


@dataclass
class Args:
    seed: int = 0
    """seed of the run: torch, the minibatch shuffles, the deals, the seats and the opponent's random numbers"""
    total_steps: int = 200_000
    """learner decisions to collect in all (a whole number of rollouts is run: at least this many)"""
    opponent: str = "random"
    """the bot in the other seat while training (a bot spec: random, greedy, ...)"""
    eval_opponent: str = "greedy"
    """the bot the evaluation plays (random draws 92% of its games against random: a score there barely moves)"""
    observation: str = "raw"
    """what the learner sees: raw (the env's observation, conquian_env.layout.OBSERVATION) or meld (the meld features,
    conquian_env.layout.MELD_FEATURES)"""
    num_envs: int = 64
    """games played in lockstep"""
    num_steps: int = 64
    """steps per game in each rollout (a rollout is num_envs * num_steps decisions)"""
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the run"""
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    """stop an update's epochs early past this approximate KL (None: never)"""
    hidden: int = 128
    """units in each of the two hidden layers of the actor and of the critic"""
    eval_every: int = 50_000
    """evaluate every this many steps (and at the end; 0: only at the end)"""
    eval_games: int = 200
    """games per evaluation: the first game of each of eval_games envs, on the same deals every time"""
    eval_seed: int = 10_000
    """seed of the evaluation's deals, seats and opponent (never used for training)"""
    torch_threads: int = 1
    """torch's threads (more than one makes small networks slower on small machines)"""
    parallel: bool = False
    """run the batched engine's kernels on all cores"""


def parse_args(argv: list[str] | None = None) -> Args:
    """``Args`` from the command line: every field is ``--field-name``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    docs = _field_docs()
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        help_text = f"{docs.get(f.name, '')} (default {default})".strip()
        if f.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=help_text)
        elif f.name == "target_kl":
            parser.add_argument(flag, type=float, default=default, help=help_text)
        else:
            parser.add_argument(flag, type=type(default), default=default, help=help_text)
    return Args(**vars(parser.parse_args(argv)))


def _field_docs() -> dict[str, str]:
    """The string under each field of ``Args`` (as CleanRL's tyro shows them)."""
    import ast
    import inspect

    body = ast.parse(inspect.getsource(Args)).body[0].body
    docs = {}
    for stmt, nxt in zip(body, body[1:], strict=False):
        if isinstance(stmt, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[stmt.target.id] = nxt.value.value
    return docs


def check_args(args: Args) -> None:
    """Refuse settings that cannot run, naming them."""
    for name in ("total_steps", "num_envs", "num_steps", "num_minibatches", "update_epochs", "hidden", "eval_games"):
        value = getattr(args, name)
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if args.eval_every < 0:
        raise ValueError(f"eval_every must be 0 (only at the end) or a positive number of steps, got {args.eval_every}")
    if (args.num_envs * args.num_steps) % args.num_minibatches:
        raise ValueError(
            f"num_envs * num_steps ({args.num_envs * args.num_steps}) must be a multiple of "
            f"num_minibatches ({args.num_minibatches})"
        )
    if args.observation not in ("raw", "meld"):
        raise ValueError(f"observation must be 'raw' or 'meld', got {args.observation!r}")
    if args.torch_threads < 1:
        raise ValueError(f"torch_threads must be at least 1, got {args.torch_threads}")


def make_envs(args: Args, num_envs: int, seed: int, opponent: str | None = None):
    import gymnasium

    import conquian_env  # registers conquian_env/Conquian-v0

    return gymnasium.make_vec(
        conquian_env.GYM_ENV_ID,
        num_envs,
        vectorization_mode="vector_entry_point",
        opponent=args.opponent if opponent is None else opponent,
        observation=args.observation,
        seed=seed,
        parallel=args.parallel,
    )


def build_agent(obs_size: int, num_actions: int, hidden: int):
    import torch
    from torch import nn

    def layer(n_in: int, n_out: int, std: float = 2**0.5) -> nn.Linear:
        lin = nn.Linear(n_in, n_out)
        nn.init.orthogonal_(lin.weight, std)
        nn.init.constant_(lin.bias, 0.0)
        return lin

    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.critic = nn.Sequential(
                layer(obs_size, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, 1, 1.0)
            )
            self.actor = nn.Sequential(
                layer(obs_size, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, num_actions, 0.01)
            )

        def get_value(self, x: torch.Tensor) -> torch.Tensor:
            return self.critic(x).squeeze(-1)

        def masked_logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            """The actor's logits with every illegal action at -inf: it is never drawn."""
            return self.actor(x).masked_fill(~mask, float("-inf"))

        def get_action_and_value(self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
            dist = torch.distributions.Categorical(logits=self.masked_logits(x, mask))
            if action is None:
                action = dist.sample()
            # torch's entropy clamps the -inf logits to the lowest float: illegal actions add 0
            return action, dist.log_prob(action), dist.entropy(), self.get_value(x)

    return Agent()


def evaluate(agent, args: Args) -> dict:
    """The greedy policy (argmax of the masked logits) in the first game of each of
    ``eval_games`` envs against ``args.eval_opponent``, on the deals of ``eval_seed``: wins, draws,
    losses (from ``final_info["result"]``), the score (win 1, draw 0.5, loss 0), the share of the
    decided games won and the illegal moves."""
    import torch

    envs = make_envs(args, args.eval_games, args.eval_seed, args.eval_opponent)
    obs, infos = envs.reset(seed=args.eval_seed)
    results = np.full(args.eval_games, None, dtype=object)
    illegal = 0
    while any(r is None for r in results):
        with torch.no_grad():
            logits = agent.masked_logits(torch.as_tensor(obs, dtype=torch.float32), _mask(infos))
        obs, _, terminated, _, infos = envs.step(logits.argmax(-1).numpy())
        if terminated.any():
            final = infos["final_info"]
            for i in np.flatnonzero(terminated):
                if results[i] is None:  # only each env's first game: later ones are biased towards short games
                    results[i] = final["result"][i]
                    illegal += int(final.get("illegal_action", np.zeros(args.eval_games, bool))[i])
    envs.close()
    counts = {k: int(sum(r == k for r in results)) for k in ("win", "draw", "loss")}
    score = (counts["win"] + 0.5 * counts["draw"]) / args.eval_games
    decided = counts["win"] + counts["loss"]
    return {"score": score, **counts, "decided_won": counts["win"] / decided if decided else float("nan"),
            "illegal": illegal}  # fmt: skip


def _mask(infos: dict):
    import torch

    return torch.as_tensor(infos["action_mask"].astype(bool))


def _unplayed(infos: dict) -> int:
    """How many deals ended before the learner's first decision (dealt anew: not episodes)."""
    if "unplayed_results" not in infos:
        return 0
    return sum(len(r) for r in infos["unplayed_results"][infos["_unplayed_results"]])


def gae(rewards, values, dones, next_value, next_done, gamma: float, lam: float):
    """Generalized advantage estimates of a rollout (``(steps, envs)`` tensors; ``next_value`` and
    ``next_done`` those after its last step)."""
    import torch

    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros(rewards.shape[1])
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal, nextvalues = 1.0 - next_done, next_value
        else:
            nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
        advantages[t] = lastgaelam
    return advantages


def ppo_update(agent, optimizer, batch: tuple, args: Args, rng: np.random.Generator, minibatch_size: int) -> dict:
    """The clipped objective, ``args.update_epochs`` epochs of minibatches over a rollout's ``batch``
    (observations, masks, actions, log-probabilities, advantages, returns, values; flat); the last
    minibatch's losses."""
    import torch
    from torch import nn

    b_obs, b_masks, b_actions, b_logprobs, b_advantages, b_returns, b_values = batch
    batch_size = len(b_actions)
    clipfracs = []
    for _epoch in range(args.update_epochs):
        b_inds = rng.permutation(batch_size)
        for begin in range(0, batch_size, minibatch_size):
            mb = torch.as_tensor(b_inds[begin : begin + minibatch_size])
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_masks[mb], b_actions[mb])
            logratio = newlogprob - b_logprobs[mb]
            ratio = logratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
            mb_adv = b_advantages[mb]
            if args.norm_adv:
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
            clipped_ratio = torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
            pg_loss = torch.max(-mb_adv * ratio, -mb_adv * clipped_ratio).mean()
            if args.clip_vloss:
                v_unclipped = (newvalue - b_returns[mb]) ** 2
                v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - b_returns[mb]) ** 2).mean()
            else:
                v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
            entropy_loss = entropy.mean()
            loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            optimizer.step()
        if args.target_kl is not None and approx_kl > args.target_kl:
            break
    var_y = b_returns.var()
    explained_var = float("nan") if var_y == 0 else float(1 - (b_returns - b_values).var() / var_y)
    return {
        "policy_loss": pg_loss.item(),
        "value_loss": v_loss.item(),
        "entropy": entropy_loss.item(),
        "approx_kl": approx_kl.item(),
        "clipfrac": float(np.mean(clipfracs)),
        "explained_variance": explained_var,
    }


def main(args: Args | None = None, verbose: bool = True) -> dict:
    """Train; returns the statistics (steps per second, losses, evaluations, illegal moves)."""
    import torch
    from torch import optim

    args = args or Args()
    check_args(args)
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = -(-args.total_steps // batch_size)

    envs = make_envs(args, args.num_envs, args.seed)
    obs_size = envs.single_observation_space.shape[0]
    num_actions = envs.single_action_space.n
    agent = build_agent(obs_size, num_actions, args.hidden)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # rollout storage
    obs = torch.zeros((args.num_steps, args.num_envs, obs_size))
    masks = torch.zeros((args.num_steps, args.num_envs, num_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    global_step = 0
    next_eval = args.eval_every or None
    stats: dict = {"evaluations": [], "losses": [], "illegal": 0, "results": {"win": 0, "draw": 0, "loss": 0}}
    stats["unplayed_deals"] = 0  # deals the opponent won before the learner's first decision: no episode
    start = time.perf_counter()
    eval_time = 0.0
    next_obs_np, infos = envs.reset(seed=args.seed)
    stats["unplayed_deals"] += _unplayed(infos)
    next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
    next_mask = _mask(infos)
    next_done = torch.zeros(args.num_envs)

    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * args.learning_rate

        # ---- collect a rollout
        rollout_results = {"win": 0, "draw": 0, "loss": 0}
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            actions[step], logprobs[step], values[step] = action, logprob, value
            next_obs_np, reward, terminated, truncated, infos = envs.step(action.numpy())
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
            next_mask = _mask(infos)
            next_done = torch.as_tensor(np.logical_or(terminated, truncated), dtype=torch.float32)
            if terminated.any():  # same-step autoreset: the finished games' outcomes are in final_info
                final = infos["final_info"]
                for i in np.flatnonzero(infos["_final_info"]):
                    rollout_results[final["result"][i]] += 1
                if "illegal_action" in final:
                    stats["illegal"] += int(final["illegal_action"].sum())
            stats["unplayed_deals"] += _unplayed(infos)

        # ---- GAE (an episode ends only by terminating: nothing to bootstrap at its end)
        with torch.no_grad():
            advantages = gae(rewards, values, dones, agent.get_value(next_obs), next_done, args.gamma, args.gae_lambda)
            returns = advantages + values

        batch = (obs.reshape(-1, obs_size), masks.reshape(-1, num_actions), actions.reshape(-1), logprobs.reshape(-1),
                 advantages.reshape(-1), returns.reshape(-1), values.reshape(-1))  # fmt: skip
        losses = {"step": global_step, **ppo_update(agent, optimizer, batch, args, rng, minibatch_size)}
        stats["losses"].append(losses)
        for k, n in rollout_results.items():
            stats["results"][k] += n
        train_time = time.perf_counter() - start - eval_time
        sps = global_step / train_time
        if verbose:
            print(
                f"step {global_step} SPS {sps:.0f} policy_loss {losses['policy_loss']:.4f} "
                f"value_loss {losses['value_loss']:.4f} entropy {losses['entropy']:.3f} "
                f"approx_kl {losses['approx_kl']:.4f} games W/D/L {'/'.join(str(n) for n in rollout_results.values())}",
                flush=True,
            )

        # ---- periodic evaluation (its time is not counted in SPS)
        if (next_eval is not None and global_step >= next_eval) or iteration == num_iterations:
            t0 = time.perf_counter()
            result = {"step": global_step, **evaluate(agent, args)}
            eval_time += time.perf_counter() - t0
            stats["evaluations"].append(result)
            if next_eval is not None:
                while next_eval <= global_step:
                    next_eval += args.eval_every
            if verbose:
                print(
                    f"eval step {global_step} vs {args.eval_opponent}: W/D/L {result['win']}/{result['draw']}/"
                    f"{result['loss']} in {args.eval_games} games, decided games won {result['decided_won']:.1%}, "
                    f"score {result['score']:.3f} (illegal {result['illegal']})",
                    flush=True,
                )

    envs.close()
    stats.update(
        steps=global_step,
        train_seconds=time.perf_counter() - start - eval_time,
        sps=global_step / (time.perf_counter() - start - eval_time),
    )
    stats["agent"] = agent
    if verbose:
        print(f"done: {global_step} steps, SPS {stats['sps']:.0f}, illegal moves {stats['illegal']}", flush=True)
    return stats


if __name__ == "__main__":
    with one_line("python -m conquian_train.cleanrl_ppo"):
        main(parse_args())
