"""Imitation learning for a policy: a teacher's decisions as a data set, and the loss that fits them.

::

    recorder = RecordingAgent(make_agent("greedy"), features="meld")   # plays the teacher's moves
    ...  # play games with it (conquian_arena.match.play_game); after each: recorder.rows
    data = ImitationData.from_decisions(decisions, features="meld")
    rows = fit_imitation(model.policy, data, config.imitation(), seed=0)   # SB3 MaskablePPO policy

**Recording** (:class:`RecordingAgent`): at each decision the teacher's choice is kept
with the position as the policy sees it (the raw observation or the ``"meld"`` features),
the legal-action mask and, for a searching teacher (one with ``last_scores``, e.g.
``rollout``), its value of every legal action.  Without a ``student`` the teacher's moves are
played (behaviour cloning); with one the student's moves are played and the teacher only
labels the positions the student reaches (DAgger, Ross et al. 2011).

**The data set** (:class:`ImitationData`, saved as ``bc_data.npz``: plain arrays, read with
``allow_pickle=False``): ``obs``, ``masks``, ``actions`` (the teacher's), ``returns`` (the
game's result for the recorded seat, +1 / 0 / -1), ``q`` (the teacher's action values, NaN
where it gave none) and ``game`` (which game a row came from: held-out rows are whole games).

**The loss** (:func:`fit_imitation`): cross-entropy on the masked logits towards the
teacher's action, label-smoothed over the legal actions; where the teacher gave action values
(and ``temperature`` > 0) a least-squares fit of the centred logits, times ``temperature``, to
the centred values; plus ``value_coef`` times the value head's squared error on the result.  Each epoch reports
its loss and held-out accuracy and regret (the score lost by the policy's choices by the
teacher's values).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, PlayerView
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.actions import NUM_ACTIONS
from conquian_env.game import PHASE_NAMES
from conquian_env.rules import Rules
from conquian_env.seeding import stream_rng

from .seeding import IMITATION_SPLIT

#: the phases in which a player decides (the observation's phase plane starts with them, in this order)
DECISION_PHASES = PHASE_NAMES[:4]
#: the columns of :class:`ImitationData`, in the order of a saved data set
COLUMNS = ("obs", "masks", "actions", "returns", "q", "game")


class RecordingAgent(Agent):
    """Records ``teacher``'s choice at every decision, as seen through the policy's input (``features``).

    Without a ``student`` the teacher's moves are played (behaviour cloning); with one the
    student's moves are played and the teacher only labels the positions the student
    reaches (DAgger).  ``rows`` holds the decisions of the current game:
    ``(obs, mask, action, q)``, ``q`` the teacher's action values or None.
    """

    def __init__(self, teacher: Agent, features: str, student: Agent | None = None):
        self.teacher = teacher
        self.student = student
        self.name = teacher.name if student is None else student.name
        self.encoder = None
        if features == "meld":
            from agents.scorer.features import FeatureEncoder

            self.encoder = FeatureEncoder()
        self.rows: list[tuple[np.ndarray, np.ndarray, int, np.ndarray | None]] = []

    def reset(self, player: int, seed: int | None = None) -> None:
        self.rows = []
        if self.encoder is not None:
            self.encoder.reset()
        self.teacher.reset(player, seed)
        if self.student is not None:
            self.student.reset(player, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        label = self.teacher.act(observation, action_mask, view)
        obs = observation if self.encoder is None else self.encoder.encode(view)
        scores = getattr(self.teacher, "last_scores", None)  # a searching teacher's action values
        q = None
        if scores:
            q = np.full(NUM_ACTIONS, np.nan, np.float32)
            for a, v in scores.items():
                q[a] = v
        self.rows.append((obs, np.asarray(action_mask, dtype=bool), int(label), q))
        return label if self.student is None else self.student.act(observation, action_mask, view)


def play_recorded(
    recorder: Agent, opponents: Mapping[str, Agent], specs: Sequence[str], games: range,
    game_seed: Callable[[int], int], rules: Rules, what: str,
) -> Iterator[tuple[int, str, float]]:  # fmt: skip
    """Play ``recorder`` (a bot that keeps its game's decisions in ``rows``) in the games ``games``: game
    ``g`` against ``opponents[specs[g % len(specs)]]``, in seat ``(g // len(specs)) % 2``, dealt and
    seeded by ``game_seed(g)``.  After each game yields ``(g, its opponent's spec, the result)``
    (1 a win of the recorder, 0 a draw, -1 a loss) while ``recorder.rows`` holds that game's
    decisions; a failed game raises ``RuntimeError`` naming ``what`` and ``g``."""
    for g in games:
        spec, seat = specs[g % len(specs)], (g // len(specs)) % 2
        seed = game_seed(g)
        hands, stock = deal_for_seed(seed)
        players = [recorder, opponents[spec]] if seat == 0 else [opponents[spec], recorder]
        record = play_game(players, hands=hands, stock=stock, seed=seed, rules=rules)
        if record.failure is not None:
            raise RuntimeError(f"{what} {g} failed: {record.failure}")
        yield g, spec, 0.0 if record.winner is None else (1.0 if record.winner == seat else -1.0)


@dataclass
class ImitationData:
    """Recorded decisions, one row each (see the module docstring for the columns)."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    q: np.ndarray
    game: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    @classmethod
    def from_decisions(
        cls, decisions: list[tuple[np.ndarray, np.ndarray, int, float, np.ndarray | None, int]], features: str
    ) -> ImitationData:
        """Rows ``(obs, mask, action, result, q or None, game id)``; ``obs`` stored compactly for ``features``."""
        no_q = np.full(NUM_ACTIONS, np.nan, np.float32)
        return cls(
            obs=np.asarray([d[0] for d in decisions], np.float16 if features == "meld" else np.int8),
            masks=np.asarray([d[1] for d in decisions], bool),
            actions=np.asarray([d[2] for d in decisions], np.int64),
            returns=np.asarray([d[3] for d in decisions], np.float32),
            q=np.asarray([no_q if d[4] is None else d[4] for d in decisions], np.float16).reshape(-1, NUM_ACTIONS),
            game=np.asarray([d[5] for d in decisions], np.int64),
        )

    @classmethod
    def concatenate(cls, parts: list[ImitationData]) -> ImitationData:
        return cls(**{k: np.concatenate([getattr(p, k) for p in parts]) for k in COLUMNS})

    def save(self, path: str | Path, meta: dict[str, Any]) -> None:
        """Write ``bc_data.npz``: the columns and ``meta`` (teacher, features, opponents) as JSON text."""
        np.savez(path, meta=json.dumps(meta), **{k: getattr(self, k) for k in COLUMNS})

    @classmethod
    def load(cls, path: str | Path, features: str) -> tuple[ImitationData, dict[str, Any]]:
        """A data set :meth:`save` wrote, and its meta; it must hold ``features``.  No pickles are read."""
        loaded = np.load(path, allow_pickle=False)
        meta = json.loads(str(loaded["meta"]))
        if meta.get("features") != features:
            raise ValueError(f"--bc-data {path} holds {meta.get('features')!r} features, not {features!r}")
        columns = {k: loaded[k] for k in ("obs", "masks", "actions", "returns")}
        n = len(columns["actions"])
        columns["q"] = loaded["q"] if "q" in loaded else np.full((n, NUM_ACTIONS), np.nan, np.float16)
        columns["game"] = loaded["game"] if "game" in loaded else np.arange(n)  # from before game ids: a row a game
        return cls(**columns), meta


@dataclass(frozen=True)
class ImitationSettings:
    """The settings of :func:`fit_imitation`, from a recipe's knobs (the ``ppo`` recipe's ``bc_*``,
    ``exit``'s fit), which give the defaults and check the ranges: epochs, Adam's learning rate,
    label smoothing over the legal actions, the temperature of a searching teacher's values (0:
    hard labels) and the value head's loss weight."""

    epochs: int
    lr: float
    smoothing: float
    temperature: float
    value_coef: float
    #: keep the weights of the epoch with the lowest held-out regret (a searching teacher's
    #: values), not the last epoch's: more passes over few noisy labels overfit them
    best_epoch: bool = False

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def _greedy_choice(obs: np.ndarray) -> np.ndarray:
    """Greedy's action in each row of ``"meld"`` features (they carry it as a one-hot plane)."""
    from agents.scorer.features import FEATURE_LAYOUT

    at = dict((n, s) for n, s, _ in FEATURE_LAYOUT)["greedy_action"]
    return obs[:, at : at + NUM_ACTIONS].astype(np.float32).argmax(axis=1)


def fit_imitation(
    policy: Any,
    data: ImitationData,
    settings: ImitationSettings,
    seed: int,
    stage: str,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Train the SB3 (Maskable)ActorCriticPolicy ``policy`` on ``data``; one report row per epoch.

    ``seed`` draws the held-out games and the minibatches; ``stage`` names the rows (``bc``,
    ``dagger1``, ...) and ``log`` gets a line per epoch.
    """
    import torch

    from agents.networks.ppo import features_for_size

    s = settings
    meld = features_for_size(data.obs.shape[1]) == "meld"
    obs, masks, actions, returns = data.obs, data.masks, data.actions, data.returns
    q = data.q.astype(np.float32)
    q_raw = q.copy()  # the regret diagnostics use the teacher's values as they are
    has_q = ~np.isnan(q).all(axis=1)
    use_soft = has_q if s.temperature > 0 else np.zeros_like(has_q)
    q_filled = np.nan_to_num(q, nan=0.0)
    rng = stream_rng(seed, IMITATION_SPLIT, len(actions))
    # hold out whole games (rows of one game are alike: a row split would flatter the fit)
    game_ids = np.unique(data.game)
    if len(game_ids) >= 2:
        held = np.isin(data.game, rng.permutation(game_ids)[: max(1, len(game_ids) // 20)])
    else:  # a single game: hold out some of its rows
        held = np.zeros(len(actions), bool)
        held[rng.permutation(len(actions))[: max(1, len(actions) // 20)]] = True
    hold = np.flatnonzero(held)
    train = rng.permutation(np.flatnonzero(~held))
    policy.set_training_mode(True)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr)
    to_t = lambda a: torch.as_tensor(a, device=policy.device)  # noqa: E731
    report = []
    kept: tuple[float, int, dict] | None = None  # (held-out regret, epoch, weights) with best_epoch
    for epoch in range(s.epochs):
        rng.shuffle(train)
        losses = []
        for i in range(0, len(train), 512):
            idx = train[i : i + 512]
            o = to_t(obs[idx]).float()
            m = to_t(masks[idx])
            log_p = policy.get_distribution(o, action_masks=masks[idx]).distribution.logits  # log-softmax
            nll = -log_p.gather(1, to_t(actions[idx])[:, None]).squeeze(1)
            # label smoothing over the legal actions keeps some exploration for PPO
            smooth = -(log_p * m).sum(1) / m.sum(1)
            hard = (1 - s.smoothing) * nll + s.smoothing * smooth
            # logits regress the teacher's action values: (logit - mean legal logit) * T
            # against (q - mean legal q).  Least squares learns the mean value over
            # similar positions, so the rollouts' noise averages out instead of being
            # imitated; the policy's best action is the best predicted value.
            qa = to_t(q_filled[idx])
            n_legal = m.sum(1, keepdim=True)
            lp = torch.where(m, log_p, torch.zeros_like(log_p))
            lp_c = (lp - lp.sum(1, keepdim=True) / n_legal) * s.temperature
            qa_c = qa - (qa * m).sum(1, keepdim=True) / n_legal
            soft = (((lp_c - qa_c) * m) ** 2).sum(1) / n_legal.squeeze(1) / 0.05**2
            imitation = torch.where(to_t(use_soft[idx]), soft, hard).mean()
            values = policy.predict_values(o).flatten()
            loss = imitation + s.value_coef * torch.nn.functional.mse_loss(values, to_t(returns[idx]))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            opt.step()
            losses.append(loss.item())
        with torch.no_grad():
            o = to_t(obs[hold]).float()
            dist = policy.get_distribution(o, action_masks=masks[hold])
            pred = dist.distribution.probs.argmax(dim=1).cpu().numpy()
            acc = float((pred == actions[hold]).mean())
            # accuracy on the decisions that were real choices
            choice = masks[hold].sum(axis=1) > 1
            acc_choice = float((pred[choice] == actions[hold][choice]).mean()) if choice.any() else math.nan
            # expected score the policy leaves on the table by the teacher's action values
            searched = hold[has_q[hold]]
            regret = greedy_regret = math.nan
            if len(searched):
                qh = np.nan_to_num(q_raw[searched], nan=-1.0)
                best = qh.max(axis=1)
                regret = float((best - qh[np.arange(len(searched)), pred[has_q[hold]]]).mean())
                if meld:
                    g = _greedy_choice(obs[searched])
                    greedy_regret = float((best - qh[np.arange(len(searched)), g]).mean())
        report.append(
            {
                "stage": stage,
                "epoch": epoch + 1,
                "loss": float(np.mean(losses)),
                "holdout_accuracy": acc,
                "holdout_accuracy_real_choices": acc_choice,
                "holdout_regret": regret,
                "holdout_regret_of_greedy": greedy_regret,
            }
        )
        if s.best_epoch and not math.isnan(regret) and (kept is None or regret < kept[0]):
            kept = (regret, epoch + 1, {k: v.detach().clone() for k, v in policy.state_dict().items()})
        log(
            f"{stage} epoch {epoch + 1}: loss {np.mean(losses):.4f}, held-out accuracy {acc:.4f} "
            f"({acc_choice:.4f} on decisions with a choice)"
            + (f", regret {regret:.4f} (greedy {greedy_regret:.4f})" if len(searched) else "")
        )
    if kept is not None and kept[1] != s.epochs:
        policy.load_state_dict(kept[2])
        log(f"{stage}: kept the weights of epoch {kept[1]} (lowest held-out regret, {kept[0]:.4f})")
    for row in report:
        row["kept"] = row["epoch"] == (s.epochs if kept is None else kept[1])
    policy.set_training_mode(False)
    return report


__all__ = [
    "DECISION_PHASES",
    "ImitationData",
    "ImitationSettings",
    "RecordingAgent",
    "fit_imitation",
    "play_recorded",
]
