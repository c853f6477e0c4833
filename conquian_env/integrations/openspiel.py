"""Conquian as an OpenSpiel Python game: ``pyspiel.load_game("python_conquian")``.

Needs ``open_spiel`` (``pip install -e ".[openspiel]"``).  Importing this module registers
the game; the rules are :class:`~conquian_env.game.GameState`'s, unchanged (every state
after the deal wraps one)::

    import numpy as np
    import pyspiel
    import conquian_env.integrations.openspiel  # registers "python_conquian"

    game = pyspiel.load_game("python_conquian")                 # or load_game(rules=FORCING)
    pyspiel.random_sim_test(game, num_sims=10, serialize=False, verbose=False)
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(np.random.choice(outcomes, p=probs)))
        else:
            state.apply_action(state.legal_actions()[0])

    # OpenSpiel's ISMCTS, ready for evaluate_bots: agents.openspiel_bot.ismcts_bot

What OpenSpiel gets:

==========================  ==============================================================
game type                   sequential, explicit stochastic, imperfect information,
                            zero-sum, terminal rewards, 2 players; one bool parameter
                            per field of conquian_env.rules.Rules (default false, as
                            before: the variant of RULES.md section 7)
chance                      the shuffle: the first 40 moves deal the cards one at a time,
                            each uniform over the cards not dealt yet: moves 0-19 to the
                            hands (even moves to player 0, odd to player 1), moves 20-39
                            the stock, top first.  The stock order is thus fixed at the
                            start, as with a real deck, and seen card by card as it is
                            turned.  After the deal there are no chance nodes.
actions                     our 85 action ids (:mod:`conquian_env.actions`); chance
                            outcomes are card indexes 0..39 (``"deal 7H"``)
returns                     +1 / -1 for a win, 0 / 0 for a draw, at the end only
players                     player 0 plays first (turns the first stock card)
max_game_length             162 decisions (an upper bound from the rules: 20 stock cards
                            with at most 4 offer decisions each, 20 hand cards that
                            leave the hand, a discard costing at most 3 decisions, and
                            at most 22 finished melds)
observation_tensor          our observation, ``observation.encode(state, player)`` as
                            float32 (``OBS_SIZE`` values: the pieces of
                            :data:`conquian_env.layout.OBSERVATION`, the table in
                            :mod:`conquian_env.observation`).
                            It is the player's whole view of the position, not of the
                            past: the order of refusals, discards and laid cards is lost.
information_state_tensor    the observation, then 7 x 40 event times (736 values): for
                            each card, when (history length after the move / 202) it was
                            dealt to this player, turned from the stock, discarded, refused
                            by this player, refused by the opponent, taken (or forced), laid
                            from a hand; 0 = never.  With the planes of the observation
                            these give the order of every public move: the tensor is
                            perfect recall (tests/test_openspiel.py checks it against the
                            information-state string).
information_state_string    the player's own history: the cards dealt to them in order,
                            then every move and every turned card, e.g. ``"p0 deal AC ...
                            | turn 5S | p0 refuse | p1 take | p1 meld 5C ..."``
observation_string          the named parts of the observation (``observation.decode``)
==========================  ==============================================================

During the deal the observation has the cards dealt so far to this player, both hand
sizes, the stock dealt so far and the variant bit; its phase part is all zero.

:meth:`ConquianState.resample_from_infostate` (which OpenSpiel's Python ``ISMCTSBot``
calls) re-deals the cards the player cannot see with
:meth:`~conquian_env.game.GameState.determinize` and replays the same moves on that deal,
so the result has a real history and the same information state for the player.
:meth:`ConquianGame.state_from_position` starts a state from any ``GameState`` (e.g. a
determinization of what one of our bots sees): its history begins at that position (no
deal moves), and its information state is the observation of the position followed by the
moves since.  ``agents.openspiel_bot`` plays our bots in OpenSpiel and OpenSpiel's bots
in our arena.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from ..extras import missing

try:
    import pyspiel
except ImportError as err:
    raise missing(err, "conquian_env.integrations.openspiel") from None

from ..actions import DISCARD_BASE, FORCE, NUM_ACTIONS, REFUSE, TAKE, action_to_str
from ..cards import CARD_NAMES, NUM_CARDS, cards_of
from ..game import GAME_OVER, HAND_SIZE, STOCK_SIZE, GameState, new_game
from ..observation import OBS_AT, OBS_SIZE, bits_to_array, decode, observation_bits, rules_bits
from ..rules import STANDARD, Rules, resolve

__all__ = [
    "DEAL_LENGTH",
    "EVENT_NAMES",
    "GAME_NAME",
    "INFO_STATE_SIZE",
    "MAX_DECISIONS",
    "ConquianGame",
    "ConquianObserver",
    "ConquianState",
    "game_state_of",
    "load_game",
]

GAME_NAME = "python_conquian"
#: chance moves at the start: 2 hands of 10, then the 20 stock cards top first
DEAL_LENGTH = 2 * HAND_SIZE + STOCK_SIZE
#: most decisions in one game (see the module docstring for the bound)
MAX_DECISIONS = 162
#: longest history: the deal and every decision; event times are divided by it
MAX_HISTORY = DEAL_LENGTH + MAX_DECISIONS
#: rows of the event-time part of the information-state tensor, from the player's side
EVENT_NAMES = ("dealt", "turned", "discarded", "refused_by_me", "refused_by_opponent", "taken", "laid")
INFO_STATE_SIZE = OBS_SIZE + len(EVENT_NAMES) * NUM_CARDS

# rows of _Core.times: absolute seats (the tensor swaps the refusal rows for player 1)
_TURNED, _DISCARDED, _REFUSED_0, _REFUSED_1, _TAKEN, _LAID = range(6)

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Conquian (conquian_env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=STANDARD.to_dict(),  # one parameter per rule field
)
_GAME_INFO = pyspiel.GameInfo(
    num_distinct_actions=NUM_ACTIONS,
    max_chance_outcomes=NUM_CARDS,
    num_players=2,
    min_utility=-1.0,
    max_utility=1.0,
    utility_sum=0.0,
    max_game_length=MAX_DECISIONS,
)


class ConquianGame(pyspiel.Game):
    """The OpenSpiel game; ``params``: the fields of :class:`~conquian_env.rules.Rules`
    (``Rules.to_dict()``), each a bool, off when left out; the game's rules are ``rules``."""

    def __init__(self, params: dict[str, Any] | None = None):
        self.rules = Rules.from_dict(dict(params or {}), f"{GAME_NAME} parameters")
        super().__init__(_GAME_TYPE, _GAME_INFO, self.rules.to_dict())

    def new_initial_state(self) -> ConquianState:
        """The start of a game: the first chance node of the deal."""
        return ConquianState(self)

    def state_from_position(self, position: GameState) -> ConquianState:
        """A state that starts at ``position`` (a full :class:`GameState`, copied).

        Its history holds only the moves made from there on; each player's information
        state starts with their observation of ``position``.  The variant must match.
        """
        if not isinstance(position, GameState):
            raise TypeError(f"position must be a conquian_env.game.GameState, got {type(position).__name__}")
        if position.rules != self.rules:
            raise ValueError(f"the position has rules {position.rules}, this game {self.rules}")
        state = ConquianState(self)
        state._c = _Core.at_position(position.clone())
        return state

    def make_py_observer(self, iig_obs_type: Any = None, params: dict[str, Any] | None = None) -> ConquianObserver:
        if isinstance(iig_obs_type, dict):  # OpenSpiel passes only the params when no type is asked for
            iig_obs_type, params = None, iig_obs_type
        return ConquianObserver(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params)


class _Core:
    """Everything a state holds, in one object that copies fast (OpenSpiel deep-copies it on clone)."""

    __slots__ = ("deal", "left", "gs", "times", "tokens", "n", "legal")

    deal: list[int]  # chance outcomes so far (all 40 once dealt; empty for a state from a position)
    left: list[int]  # the cards not dealt yet, ascending
    gs: GameState | None  # None during the deal
    times: np.ndarray  # (6, 40) int16 history lengths of the public events, 0 = never
    tokens: list[list[str]]  # each player's information-state string, in pieces
    n: int  # moves so far (the history length)
    legal: list[int] | None  # cached legal actions of the decision node

    @classmethod
    def dealing(cls) -> _Core:
        c = cls.__new__(cls)
        c.deal, c.left, c.gs, c.n, c.legal = [], list(range(NUM_CARDS)), None, 0, None
        c.times = np.zeros((6, NUM_CARDS), np.int16)
        c.tokens = [["p0"], ["p1"]]
        return c

    @classmethod
    def at_position(cls, gs: GameState) -> _Core:
        c = cls.dealing()
        c.left, c.gs = [], gs
        c.tokens = [[f"p{p} from [{_observation_text(gs, p)}]"] for p in (0, 1)]
        return c

    def __deepcopy__(self, memo: dict[int, Any]) -> _Core:
        c = _Core.__new__(_Core)
        c.deal = self.deal[:]
        c.left = self.left[:]
        c.gs = None if self.gs is None else self.gs.clone()
        c.times = self.times.copy()
        c.tokens = [self.tokens[0][:], self.tokens[1][:]]
        c.n = self.n
        c.legal = self.legal
        return c


class ConquianState(pyspiel.State):
    """An OpenSpiel state: the deal as chance nodes, then a :class:`GameState`."""

    def __init__(self, game: ConquianGame):
        super().__init__(game)
        self._rules = game.rules
        self._c = _Core.dealing()

    @property
    def game_state(self) -> GameState | None:
        """The wrapped engine state (both hands and the stock: not for a player); None during the deal."""
        return self._c.gs

    # ------------------------------------------------------------------ OpenSpiel API
    def current_player(self) -> int:
        gs = self._c.gs
        if gs is None:
            return pyspiel.PlayerId.CHANCE
        if gs.phase == GAME_OVER:
            return pyspiel.PlayerId.TERMINAL
        return gs.player

    def _legal_actions(self, player: int) -> list[int]:
        c = self._c
        if c.legal is None:
            c.legal = c.gs.legal_actions()
        return c.legal

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The cards left to deal, each equally likely.  Only the deal has chance nodes: elsewhere
        a ``ValueError``, as OpenSpiel's own Python games raise."""
        gs = self._c.gs
        if gs is not None:
            where = "a terminal state" if gs.phase == GAME_OVER else f"a decision of player {gs.player}"
            raise ValueError(
                f"chance_outcomes() called on a non-chance state ({where}): "
                f"only the deal, the first {DEAL_LENGTH} moves, has chance nodes"
            )
        cards = self._c.left
        p = 1.0 / len(cards)
        return [(card, p) for card in cards]

    def _apply_action(self, action: int) -> None:
        c = self._c
        c.n += 1
        if c.gs is None:
            self._deal(c, action)
            return
        gs = c.gs
        p = gs.player
        face, turned = gs.face_up, gs.stock_pos
        gs.apply(action)  # the one judgement of legality (raises IllegalActionError)
        c.legal = None
        times = c.times
        if action == REFUSE:
            times[_REFUSED_0 + p, face] = c.n
        elif action == TAKE or action == FORCE:
            times[_TAKEN, face] = c.n
        elif action < NUM_CARDS:
            times[_LAID, action] = c.n
        elif action < DISCARD_BASE + NUM_CARDS:
            times[_DISCARDED, action - DISCARD_BASE] = c.n
        move = f"p{p} {action_to_str(action)}"
        for tokens in c.tokens:
            tokens.append(move)
        if gs.stock_pos != turned:
            self._turned(c, gs.face_up)

    def _deal(self, c: _Core, card: int) -> None:
        if not (type(card) is int or isinstance(card, np.integer)) or not 0 <= card < NUM_CARDS:
            raise ValueError(f"a deal outcome is a card index 0..{NUM_CARDS - 1}, got {card!r}")
        card = int(card)
        if card not in c.left:
            raise ValueError(f"card {CARD_NAMES[card]} is already dealt; {len(c.left)} cards are left to deal")
        i = len(c.deal)
        c.deal.append(card)
        c.left.remove(card)
        if i < 2 * HAND_SIZE:
            c.tokens[i % 2].append(f"deal {CARD_NAMES[card]}")
        if len(c.deal) == DEAL_LENGTH:
            hands = [c.deal[0 : 2 * HAND_SIZE : 2], c.deal[1 : 2 * HAND_SIZE : 2]]
            c.gs = new_game(hands=hands, stock=c.deal[2 * HAND_SIZE :], first=0, rules=self._rules)
            self._turned(c, c.gs.face_up)

    @staticmethod
    def _turned(c: _Core, card: int) -> None:
        c.times[_TURNED, card] = c.n
        for tokens in c.tokens:
            tokens.append(f"| turn {CARD_NAMES[card]} |")

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {CARD_NAMES[action]}"
        return action_to_str(action)

    def is_terminal(self) -> bool:
        gs = self._c.gs
        return gs is not None and gs.phase == GAME_OVER

    def returns(self) -> list[float]:
        gs = self._c.gs
        if gs is None:
            return [0.0, 0.0]
        r0, r1 = gs.returns()
        return [float(r0), float(r1)]

    def __str__(self) -> str:
        c = self._c
        if c.gs is None:
            return f"dealing, {len(c.deal)} of {DEAL_LENGTH} cards dealt: " + " ".join(CARD_NAMES[x] for x in c.deal)
        return repr(c.gs.to_dict())

    # ------------------------------------------------------------------ search support
    def resample_from_infostate(self, player_id: int, probability_sampler: Callable[[], float]) -> ConquianState:
        """A state with the same information state for ``player_id``, the cards they cannot see re-dealt.

        ``probability_sampler()`` returns uniform floats in [0, 1) (OpenSpiel's
        ``UniformProbabilitySampler``, or e.g. ``numpy.random.RandomState(seed).uniform``
        for a reproducible search); it seeds the re-deal.
        """
        if player_id not in (0, 1):
            raise ValueError(f"player_id must be 0 or 1, got {player_id!r}")
        rng = random.Random(int(probability_sampler() * 2**53))
        c = self._c
        game = self.get_game()
        if c.gs is None:  # during the deal: re-deal what the player has not been dealt
            own = [(i, x) for i, x in enumerate(c.deal) if i < 2 * HAND_SIZE and i % 2 == player_id]
            others = [x for i, x in enumerate(c.deal) if not (i < 2 * HAND_SIZE and i % 2 == player_id)]
            pool = others + c.left
            rng.shuffle(pool)
            deal = pool[: len(c.deal) - len(own)]
            for i, x in own:
                deal.insert(i, x)
            return _replay(game, deal, [])
        world = c.gs.determinize(player_id, rng)
        if not c.deal:  # a state from a position: its information state is kept as text
            state = game.state_from_position(world)
            state._c.times = c.times.copy()
            state._c.n = c.n
            state._c.tokens[player_id] = c.tokens[player_id][:]
            return state
        opp = 1 - player_id
        # the opponent's dealt hand in this world: what they hold now plus what left their hand (public)
        laid = sum(1 << x for x in range(NUM_CARDS) if c.times[_LAID, x])
        opp_hand = cards_of(world.hands[opp] | laid & world.melds[opp] | world.discards[opp])
        if len(opp_hand) != HAND_SIZE:  # cannot happen: every card that leaves a hand is laid or discarded
            raise RuntimeError(f"re-dealt opponent hand has {len(opp_hand)} cards")
        rng.shuffle(opp_hand)
        deal = c.deal[:]
        deal[opp : 2 * HAND_SIZE : 2] = opp_hand
        deal[2 * HAND_SIZE :] = world.stock
        return _replay(game, deal, [a for a in self.history()[DEAL_LENGTH:]])


def _replay(game: ConquianGame, deal: list[int], moves: list[int]) -> ConquianState:
    state = game.new_initial_state()
    for a in deal:
        state.apply_action(a)
    for a in moves:
        state.apply_action(a)
    return state


def _deal_bits(c: _Core, player: int, rules: Rules) -> int:
    """Observation bits during the deal: own cards so far, hand sizes, stock dealt so far."""
    own = 0
    for i in range(player, min(len(c.deal), 2 * HAND_SIZE), 2):
        own |= 1 << c.deal[i]
    dealt_to_hands = min(len(c.deal), 2 * HAND_SIZE)
    own_size = (dealt_to_hands + 1 - player) // 2
    opp_size = dealt_to_hands - own_size
    stock = max(0, len(c.deal) - 2 * HAND_SIZE)
    bits = (
        own
        | ((1 << stock) - 1) << OBS_AT["stock_size"]
        | 1 << (OBS_AT["own_hand_size"] + own_size)
        | 1 << (OBS_AT["opponent_hand_size"] + opp_size)
        | 1 << OBS_AT["source"]  # no face-up card
    )
    return bits | rules_bits(rules)


def _observation_text(gs: GameState, player: int) -> str:
    parts = []
    for name, value in decode(bits_to_array(observation_bits(gs, player), OBS_SIZE)).items():
        if value in ([], False, "none"):
            continue
        parts.append(f"{name}={' '.join(value)}" if isinstance(value, list) else f"{name}={value}")
    return " ".join(parts)


class ConquianObserver:
    """OpenSpiel's PyObserver for Conquian: the observation, or the information state (perfect recall)."""

    def __init__(self, iig_obs_type: Any, params: dict[str, Any] | None):
        if params:
            raise ValueError(f"{GAME_NAME} observers take no parameters, got {params!r}")
        if not iig_obs_type.public_info or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER:
            raise ValueError(
                f"{GAME_NAME} offers the observation and the information state of one player "
                "(public_info=True, private_info=SINGLE_PLAYER); got {iig_obs_type}"
            )
        self.perfect_recall = bool(iig_obs_type.perfect_recall)
        size = INFO_STATE_SIZE if self.perfect_recall else OBS_SIZE
        self.tensor = np.zeros(size, np.float32)
        self.dict = {"observation": self.tensor[:OBS_SIZE]}
        if self.perfect_recall:
            self.dict["event_times"] = self.tensor[OBS_SIZE:].reshape(len(EVENT_NAMES), NUM_CARDS)

    def set_from(self, state: ConquianState, player: int) -> None:
        c = state._c
        bits = _deal_bits(c, player, state._rules) if c.gs is None else observation_bits(c.gs, player)
        self.tensor[:OBS_SIZE] = bits_to_array(bits, OBS_SIZE)
        if not self.perfect_recall:
            return
        events = self.dict["event_times"]
        events[0] = 0.0
        for i in range(player, min(len(c.deal), 2 * HAND_SIZE), 2):
            events[0, c.deal[i]] = i + 1
        t = c.times
        events[1] = t[_TURNED]
        events[2] = t[_DISCARDED]
        events[3] = t[_REFUSED_0 + player]
        events[4] = t[_REFUSED_0 + 1 - player]
        events[5] = t[_TAKEN]
        events[6] = t[_LAID]
        events *= 1.0 / MAX_HISTORY

    def string_from(self, state: ConquianState, player: int) -> str:
        c = state._c
        if self.perfect_recall:
            return " ".join(c.tokens[player])
        if c.gs is None:
            own = [CARD_NAMES[c.deal[i]] for i in range(player, min(len(c.deal), 2 * HAND_SIZE), 2)]
            return f"p{player} dealing: own_hand={' '.join(own)} dealt={len(c.deal)}"
        return f"p{player} {_observation_text(c.gs, player)}"


def game_state_of(state: Any) -> GameState:
    """The :class:`GameState` inside a ``python_conquian`` state (after the deal)."""
    if not isinstance(state, ConquianState):
        raise TypeError(f"expected a {GAME_NAME} state, got {type(state).__name__}")
    if state._c.gs is None:
        raise ValueError("the state is still dealing (a chance node): there is no game position yet")
    return state._c.gs


def load_game(rules: Rules | None = None, **rule_fields: bool) -> ConquianGame:
    """``pyspiel.load_game("python_conquian", rules.to_dict())``; the rule fields work as keyword
    shortcuts, as in ``env()``."""
    return pyspiel.load_game(GAME_NAME, resolve(rules, **rule_fields).to_dict())


pyspiel.register_game(_GAME_TYPE, ConquianGame)
