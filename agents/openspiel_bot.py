"""Our bots in OpenSpiel and OpenSpiel's bots in our arena (needs ``open_spiel``).

* :class:`AgentBot`: any :class:`~agents.base.Agent` (or bot spec, ``"greedy"``) as a
  ``pyspiel.Bot`` for ``python_conquian`` (:mod:`conquian_env.integrations.openspiel`),
  e.g. in OpenSpiel's ``evaluate_bots``::

      from open_spiel.python.algorithms.evaluate_bots import evaluate_bots
      from conquian_env.integrations.openspiel import load_game
      game = load_game()
      bots = [AgentBot("greedy", player=0, seed=1), ismcts_bot(game, seed=2, simulations=50)]
      evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(3))

  It gives the agent exactly what our game loop would: ``encode``, ``action_mask`` and a
  :class:`~conquian_env.view.PlayerView` of the position.

* :class:`OpenSpielAgent`: a ``pyspiel.Bot`` (built per game by a factory) as an
  :class:`~agents.base.Agent` for :func:`conquian_arena.match.play_game` and tournaments.
  The bot never sees the real hidden cards: it gets a state started from a determinization
  of the player's view (``game.state_from_position``), whose information state is that
  player's observation.  Two ready ones, usable as bot specs:
  ``python:agents.openspiel_bot:OpenSpielISMCTSAgent,simulations=100`` (OpenSpiel's
  ISMCTS with random rollouts) and ``python:agents.openspiel_bot:OpenSpielRandomAgent``.

* :func:`ismcts_bot`: OpenSpiel's own ISMCTS as a seeded ``pyspiel.Bot`` for ``evaluate_bots``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from conquian_env.extras import missing

try:
    import pyspiel
except ImportError as err:
    raise missing(err, "agents.openspiel_bot") from None

from conquian_env.integrations.openspiel import ConquianGame, game_state_of, load_game
from conquian_env.observation import action_mask, encode
from conquian_env.rules import Rules
from conquian_env.seeding import mixed_seed_31
from conquian_env.view import PlayerView

from .base import Agent

__all__ = ["AgentBot", "OpenSpielAgent", "OpenSpielISMCTSAgent", "OpenSpielRandomAgent", "ismcts_bot"]

#: builds the OpenSpiel bot for one game: (game, seat, seed) -> bot
BotFactory = Callable[[ConquianGame, int, "int | None"], pyspiel.Bot]


def ismcts_bot(
    game: pyspiel.Game,
    *,
    seed: int | None = None,
    simulations: int = 100,
    rollouts: int = 1,
    uct_c: float = 2.0,
) -> pyspiel.Bot:
    """OpenSpiel's Python ``ISMCTSBot`` with random-rollout evaluation, seeded and usable in ``evaluate_bots``.

    Two things the stock bot lacks for this: ``restart_at`` (``evaluate_bots`` calls it; the
    bot keeps nothing between searches, so it only resets) and a seeded re-deal (its own
    resampler draws from an unseeded sampler; here the bot's ``RandomState`` seeds it).
    """
    from open_spiel.python.algorithms import ismcts, mcts

    class _ISMCTSBot(ismcts.ISMCTSBot):
        def restart_at(self, state: pyspiel.State) -> None:
            self.reset()

        def restart(self) -> None:
            self.reset()

    rs = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=rollouts, random_state=np.random.RandomState(rs.randint(2**31)))
    bot = _ISMCTSBot(game, evaluator, uct_c, simulations, random_state=rs)
    bot.set_resampler(lambda state, player: state.resample_from_infostate(player, rs.uniform))
    return bot


class AgentBot(pyspiel.Bot):
    """One of our agents as an OpenSpiel bot in seat ``player``.

    ``agent``: an :class:`Agent` or a spec for :func:`agents.registry.make_agent`.  Before
    each game (``restart_at``/``restart``) the agent is reset with the seat and a seed drawn
    from ``seed``, so the same ``seed`` replays the same games.
    """

    def __init__(self, agent: Agent | str, player: int, seed: int | None = None):
        pyspiel.Bot.__init__(self)
        if isinstance(agent, str):
            from .registry import make_agent

            agent = make_agent(agent)
        if not isinstance(agent, Agent):
            raise TypeError(f"agent must be an agents.base.Agent or a bot spec string, got {type(agent).__name__}")
        if player not in (0, 1):
            raise ValueError(f"player must be 0 or 1, got {player!r}")
        self.agent = agent
        self.player = player
        self._seeds = np.random.default_rng(seed)
        self._ready = False

    def restart_at(self, state: pyspiel.State) -> None:
        self.agent.reset(self.player, int(self._seeds.integers(2**31)))
        self._ready = True

    def restart(self) -> None:
        self.restart_at(None)

    def inform_action(self, state: pyspiel.State, player_id: int, action: int) -> None:
        """Nothing to do: the agent reads the position it is given."""

    def step(self, state: pyspiel.State) -> int:
        gs = game_state_of(state)
        if gs.player != self.player or gs.is_terminal():
            raise ValueError(f"AgentBot for player {self.player} asked to move when player {state.current_player()} is")
        if not self._ready:
            self.restart_at(state)
        view = PlayerView(gs, self.player)
        return int(self.agent.act(encode(gs, self.player), action_mask(gs, self.player), view))


class OpenSpielAgent(Agent):
    """An OpenSpiel bot as one of our agents.

    ``make_bot(game, seat, seed)`` builds the bot for each game (``reset`` passes the seat
    and the game's seed).  At each decision the bot gets a fresh ``python_conquian`` state
    started at a determinization of the view, sampled with the game's seed.
    """

    name = "openspiel"

    def __init__(self, make_bot: BotFactory, name: str | None = None, seed: int | None = None):
        if not callable(make_bot):
            raise TypeError(f"make_bot must be a callable (game, seat, seed) -> pyspiel.Bot, got {make_bot!r}")
        self.make_bot = make_bot
        if name is not None:
            self.name = name
        self.seed = seed
        self._player = 0
        self._game_seed: int | None = seed
        self._rng = random.Random(seed)
        self._bot: pyspiel.Bot | None = None
        self._rules: Rules | None = None

    def reset(self, player: int, seed: int | None = None) -> None:
        self._player = player
        if seed is not None and self.seed is not None:  # both: the game's seed mixed with the bot's own
            seed = mixed_seed_31(seed, self.seed)
        self._game_seed = self.seed if seed is None else seed
        self._rng = random.Random(self._game_seed)
        self._bot = None

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        if self._bot is None or self._rules != view.rules:
            self._rules = view.rules
            self._game = load_game(view.rules)
            self._bot = self.make_bot(self._game, view.player, self._game_seed)
        state = self._game.state_from_position(view.determinize(self._rng))
        return int(self._bot.step(state))


class OpenSpielISMCTSAgent(OpenSpielAgent):
    """OpenSpiel's ISMCTS (:func:`ismcts_bot`) as an agent."""

    name = "openspiel-ismcts"

    def __init__(self, simulations: int = 100, rollouts: int = 1, uct_c: float = 2.0, seed: int | None = None):
        for key, value in (("simulations", simulations), ("rollouts", rollouts)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
        if isinstance(uct_c, bool) or not isinstance(uct_c, (int, float)) or uct_c < 0:
            raise ValueError(f"uct_c must be a non-negative number, got {uct_c!r}")

        def make(game: ConquianGame, player: int, seed: int | None) -> pyspiel.Bot:
            return ismcts_bot(game, seed=seed, simulations=simulations, rollouts=rollouts, uct_c=float(uct_c))

        super().__init__(make, seed=seed)


class OpenSpielRandomAgent(OpenSpielAgent):
    """OpenSpiel's uniform random bot (``pyspiel.make_uniform_random_bot``) as an agent."""

    name = "openspiel-random"

    def __init__(self, seed: int | None = None):
        def make(game: ConquianGame, player: int, seed: int | None) -> pyspiel.Bot:
            return pyspiel.make_uniform_random_bot(player, 0 if seed is None else seed)

        super().__init__(make, seed=seed)
