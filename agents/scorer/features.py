"""Meld-aware input features for learned policies (the ``"meld"`` feature set).

The environment's observation (:mod:`conquian_env.observation`) is the raw table: which
cards are where.  A small network has to learn from scratch which cards make sets and
runs, which fit a meld on the table, and which are still live.  Published work on
rummy-family games gets much further with a policy network that is *given* those facts,
so a trained agent here sees the raw observation followed by these features, all
computed from what the player can see (never the opponent's hand or the stock order):

=====  ======  =====================================================================
slot   length  contents (float32, in [0, 1] unless said)
=====  ======  =====================================================================
0      O       the raw observation (``O`` slots: :data:`conquian_env.observation.OBS_SIZE`)
O      40      live cards: not seen by the player (opponent's hidden hand or stock)
O+40   40      cards that fit the player's own meld with no hand card
O+80   40      cards that fit the opponent's meld with no hand card
O+120  40      quality of each hand card (the greedy evaluation, 1 = in or fits a meld)
O+160  40      cards not held that make a 3-card set or run with two hand cards (1), or
               with one hand card and one live card (0.5)
O+200  40      winning cards: live cards that would let hand + meld split into melds
O+240  40      discard phase: ``1 + (v - best) / 4`` (clipped at 0) for each hand card,
               where ``v`` is the greedy evaluation after discarding it
O+280  40      meld phase: the hand cards of the greedy lay-down plan still to lay
O+320  85      the greedy bot's choice in this position, one-hot (zero when not to move)
O+405  4       offer phase: greedy's (value of taking - value of keeping) / 4 clipped to
               [-1, 1]; take possible; hand evaluation / 20; winning cards / 10
=====  ======  =====================================================================

The vector has ``O + 409`` slots (:data:`FEATURE_SIZE`).  The pieces are declared once, in
:data:`conquian_env.layout.MELD_FEATURES` (the table above is kept equal to it by
``tests/test_layout.py``).  :class:`FeatureEncoder` computes
the vector of one seat from that seat's :class:`~conquian_env.view.PlayerView`
(``encode(view)``), reading nothing the view does not expose; it keeps the greedy bot's
lay-down plan across the decisions of a meld, so call :meth:`FeatureEncoder.reset` at each
new game.  :class:`FeatureObservation` wraps :class:`conquian_env.wrappers.SingleAgentEnv`
so that its observations are these vectors; the ``ppo`` bot builds the same features for a model trained with them.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from conquian_env.actions import TAKE
from conquian_env.cards import cards_of
from conquian_env.game import DISCARD, MELD, OFFER
from conquian_env.layout import MELD_FEATURES, OBSERVATION
from conquian_env.observation import OBS_SIZE
from conquian_env.potential import potential_masks
from conquian_env.view import PlayerView

from ..greedy.greedy import (
    GreedyAgent,
    card_quality,
    discard_values,
    plan_take,
    position_value,
    refusing_feeds_opponent,
    take_margin,
)

#: (name, start, length) of each block after the raw observation: the pieces of
#: :data:`conquian_env.layout.MELD_FEATURES` after those of the observation, where they are declared
FEATURE_LAYOUT: tuple[tuple[str, int, int], ...] = tuple(
    (name, start, size) for name, start, size, _ in MELD_FEATURES.rows()[len(OBSERVATION.pieces) :]
)
FEATURE_SIZE = MELD_FEATURES.size

# start slot of each piece of the meld features, by name (the encoder below writes at these, nothing else)
_AT = MELD_FEATURES.offsets
_LIVE = _AT["live"]
_FIT_OWN = _AT["fits_own_meld"]
_FIT_OPP = _AT["fits_opponent_meld"]
_QUALITY = _AT["hand_quality"]
_COMBINES = _AT["combines_with_hand"]
_OUTS = _AT["winning_cards"]
_DISCARD = _AT["discard_value"]
_PLAN = _AT["lay_plan"]
_GREEDY = _AT["greedy_action"]
_SCALARS = _AT["scalars"]


class FeatureEncoder:
    """Builds the ``"meld"`` feature vector of one player (see the module docstring)."""

    def __init__(self) -> None:
        self._greedy = GreedyAgent()

    def reset(self) -> None:
        self._greedy.reset(0)

    def encode(self, view: PlayerView) -> np.ndarray:
        """The feature vector of ``view``'s player, computed from the view alone.

        Everything read comes through the :class:`~conquian_env.view.PlayerView`: the
        player's observation, hand and melds, the public cards, the unseen cards and (when
        it is their move) the legal moves; never the opponent's hand or the stock order.
        """
        if not isinstance(view, PlayerView):
            raise TypeError(f"FeatureEncoder.encode needs a PlayerView, got {type(view).__name__}")
        out = np.zeros(FEATURE_SIZE, dtype=np.float32)
        out[:OBS_SIZE] = view.observation()
        hand, meld, opp_meld = view.hand, view.meld, view.opponent_meld
        opp_size = view.opponent_hand_size
        live = view.unseen()
        live, fits_own, fits_opp, _, _, combines, near, outs, *_ = potential_masks(hand, meld, opp_meld, live)
        out[_LIVE + np.asarray(cards_of(live), dtype=np.intp)] = 1.0
        out[_FIT_OWN + np.asarray(cards_of(fits_own), dtype=np.intp)] = 1.0
        out[_FIT_OPP + np.asarray(cards_of(fits_opp), dtype=np.intp)] = 1.0
        for c in cards_of(hand):
            out[_QUALITY + c] = card_quality(c, hand, meld, live)
        out[_COMBINES + np.asarray(cards_of(combines), dtype=np.intp)] = 1.0
        out[_COMBINES + np.asarray(cards_of(near), dtype=np.intp)] = 0.5
        out[_OUTS + np.asarray(cards_of(outs), dtype=np.intp)] = 1.0
        value = position_value(hand, meld, live)
        phase = view.phase
        take_edge, can_take = 0.0, 0.0
        if view.my_turn:
            legal = view.legal_action_mask()
            if phase == DISCARD and hand:
                values = discard_values(hand, meld, live, opp_meld, opp_size)
                best = max(v for _, v in values)
                for c, v in values:
                    out[_DISCARD + c] = max(0.0, 1.0 + (v - best) / 4.0)
            elif phase == MELD:
                lay, _, _ = plan_take(hand, meld, view.face_up, view.chosen, live, opp_meld, opp_size)
                for c in cards_of(lay & ~view.chosen):
                    out[_PLAN + c] = 1.0
            elif phase == OFFER and legal >> TAKE & 1:
                can_take = 1.0
                feeds = refusing_feeds_opponent(view)
                margin, _ = take_margin(hand, meld, view.face_up, live, opp_meld, opp_size, feeds)
                take_edge = 1.0 if margin == float("inf") else float(np.clip(margin / 4.0, -1.0, 1.0))
            out[_GREEDY + self._greedy.choose(view)] = 1.0
        out[_SCALARS] = take_edge
        out[_SCALARS + 1] = can_take
        out[_SCALARS + 2] = min(value, 20.0) / 20.0
        out[_SCALARS + 3] = min(outs.bit_count(), 10) / 10.0
        return out


class FeatureObservation(gymnasium.Wrapper):
    """:class:`~conquian_env.wrappers.SingleAgentEnv` with ``"meld"`` feature observations.

    ``observation_space`` is ``Box(-1, 1, (FEATURE_SIZE,), float32)``; everything else
    (``action_masks()``, rewards, infos) is the wrapped env's.
    """

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.observation_space = spaces.Box(-1.0, 1.0, (FEATURE_SIZE,), np.float32)
        self._encoder = FeatureEncoder()

    def _features(self) -> np.ndarray:
        inner = self.env.unwrapped
        return self._encoder.encode(PlayerView(inner.game, inner.seat))

    def reset(self, **kwargs):
        _, info = self.env.reset(**kwargs)
        self._encoder.reset()
        return self._features(), info

    def step(self, action):
        _, reward, terminated, truncated, info = self.env.step(action)
        return self._features(), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()
