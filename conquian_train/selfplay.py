"""Pure self-play on the batched engine's SB3 ``VecEnv``: both seats played by the live learner.

::

    from sb3_contrib import MaskablePPO
    from conquian_env.sb3 import ConquianVecEnv
    from conquian_train.selfplay import SelfPlay
    model = MaskablePPO("MlpPolicy", ConquianVecEnv(256, seed=0))
    model.learn(1_000_000, callback=SelfPlay())

:class:`SelfPlay` is a callback for ``learn``: at the start of training the opponent of every game
of the :class:`conquian_env.sb3.ConquianVecEnv` becomes the learner itself (:class:`LearnerOpponent`).
(Before training had one package these lived in :mod:`conquian_env.sb3`.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.extras import missing
from conquian_env.sb3 import ConquianVecEnv

try:
    from stable_baselines3.common.callbacks import BaseCallback
except ImportError as err:
    raise missing(err, "conquian_train.selfplay") from None


class LearnerOpponent:
    """The learner's own (Maskable)PPO policy as the opponent: both seats played by the learner.

    It reads the live model, so the opponent always plays the current weights (they change
    only between rollouts), sampling its moves as the learner does.  Only the learner
    seat's decisions are training data.  Built by :class:`SelfPlay`.
    """

    name = "self"

    def __init__(self, model: Any, encoder: Any, deterministic: bool = False):
        self.model = model
        self.encoder = encoder
        self.deterministic = deterministic

    def act_batch(self, games: Any, rows: np.ndarray) -> np.ndarray:
        players = games.players[rows]  # the opponent's seat in each of its games (none is over)
        obs = self.encoder(games, rows, players)
        _, masks = games.observe_rows(rows, players, masks_only=True)
        actions, _ = self.model.predict(obs, action_masks=masks.astype(bool), deterministic=self.deterministic)
        return np.asarray(actions, dtype=np.int64)


class SelfPlay(BaseCallback):
    """Pure self-play for MaskablePPO on a :class:`ConquianVecEnv`: at the start of training
    the opponent becomes the learner itself (:class:`LearnerOpponent`)::

        model = MaskablePPO("MlpPolicy", ConquianVecEnv(256, seed=0))
        model.learn(1_000_000, callback=SelfPlay())
    """

    def _on_training_start(self) -> None:
        venv = self.training_env.unwrapped if hasattr(self.training_env, "unwrapped") else self.training_env
        if not isinstance(venv, ConquianVecEnv):
            raise ValueError(f"SelfPlay needs a ConquianVecEnv (optionally wrapped), got {type(venv).__name__}")
        venv.set_opponent(LearnerOpponent(self.model, venv.core.encoder))
        # SB3 dealt the first games before this callback ran: deal again, learner in both seats
        self.model._last_obs = self.training_env.reset()
        self.model._last_episode_starts = np.ones(self.training_env.num_envs, dtype=bool)

    def _on_step(self) -> bool:
        return True
