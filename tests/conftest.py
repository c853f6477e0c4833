"""Helpers shared by the test files: the rules the engine comparisons play, moves asked as
the game loop asks them, duplicate deals, stacked deals, positions from greedy self-play,
re-dealt hidden cards, a child Python that cannot import the optional packages, and the
headless browser of the page tests."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.base import PlayerView
from agents.greedy.greedy import GreedyAgent
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.cards import CARD_NAMES
from conquian_env.game import DISCARD, OFFER, new_game
from conquian_env.observation import action_mask, encode
from conquian_env.rules import Rules

#: the rules every engine comparison plays (parametrize with ``ids=str``): the standard game,
#: each field of Rules on alone, and all of them on; a new variant joins with no edit
_FIELDS = Rules.field_names()
RULE_CASES: list[Rules] = list(
    dict.fromkeys([Rules(), *(Rules(**{name: True}) for name in _FIELDS), Rules(**dict.fromkeys(_FIELDS, True))])
)


def act(agent, state):
    """Ask ``agent`` for the move of the player to move in ``state`` (as play_game would)."""
    p = state.player
    return agent.act(encode(state, p), action_mask(state, p), PlayerView(state, p))


def duplicate(bot, opponent, deals, rules=None, offset=0):
    """Play each deal twice, ``bot`` in seat 0 then seat 1, by ``rules`` (None: the standard game);
    returns [(bot's seat, record)]."""
    out = []
    for i in range(deals):
        hands, stock = deal_for_seed(offset + i)
        for seat in (0, 1):
            agents = [bot, opponent] if seat == 0 else [opponent, bot]
            record = play_game(agents, hands=hands, stock=stock, rules=rules, seed=offset + i)
            out.append((seat, record))
    return out


def stacked_deal(hand0: str, hand1: str | None = None, top: str = ""):
    """A stacked deal: the given hands and top of the stock, the other cards after them in order."""
    h0 = hand0.split()
    used = set(h0) | set(top.split())
    if hand1 is None:
        h1 = [c for c in CARD_NAMES if c not in used][:10]
    else:
        h1 = hand1.split()
    used |= set(h1)
    stock = top.split() + [c for c in CARD_NAMES if c not in used]
    return [h0, h1], stock


def mid_game_state(seed: int, moves: int):
    """A position reached by greedy self-play where player to move has a real choice."""
    hands, stock = deal_for_seed(seed)
    state = new_game(hands=hands, stock=stock)
    bots = [GreedyAgent(), GreedyAgent()]
    done = 0
    while not state.is_terminal():
        mask = state.legal_action_mask()
        if done >= moves and mask & (mask - 1) and state.phase in (OFFER, DISCARD):
            return state
        state.apply(act(bots[state.player], state))
        done += 1
    return None


def permute_for(state, observer: int, rng: random.Random):
    """The same position with the cards ``observer`` cannot see (the opponent's hidden hand
    and the stock) re-dealt among themselves."""
    opp = 1 - observer
    hidden = state.hands[opp] & ~state.chosen
    stock_rest = list(state.stock[state.stock_pos :])
    pool = [c for c in range(40) if hidden >> c & 1] + stock_rest
    rng.shuffle(pool)
    n = hidden.bit_count()
    new = state.clone()
    new.hands[opp] = state.hands[opp] & state.chosen | sum(1 << c for c in pool[:n])
    new.stock = state.stock[: state.stock_pos] + tuple(pool[n:])
    new._mask = -1  # test-only surgery: the cached mask is recomputed from the new hands
    return new


def permute_hidden(state, rng: random.Random):
    """:func:`permute_for` the player to move."""
    return permute_for(state, state.player, rng)


def stats_under_permutations(make_bot, state, seed: int, trials: int = 4) -> list:
    """``last_stats`` of a fresh ``make_bot()`` (reset with ``seed``) deciding ``state`` and
    ``trials - 1`` re-deals of its hidden cards: all equal for a bot that sees only its view."""
    rng, stats = random.Random(seed), []
    for trial in range(trials):
        variant = state if trial == 0 else permute_hidden(state, rng)
        bot = make_bot()
        bot.reset(state.player, seed=99)
        act(bot, variant)
        stats.append(bot.last_stats)
    return stats


#: what a child process runs first to be unable to import the top-level packages ``BLOCKED``, as on a
#: plain install (``find_spec`` says they are not installed; an import raises ModuleNotFoundError)
BLOCKER = """
import importlib.abc, importlib.util, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] in BLOCKED else real(name, *a)
"""


@pytest.fixture
def python_without():
    """``python_without(blocked, code, *args, timeout=300)``: run ``code`` in a child Python (in the
    repository root, no stdin, its ``sys.argv`` ``["-c", *args]``) that cannot import the top-level
    packages named in ``blocked`` (comma-separated), as on an install without them."""

    def run(blocked: str, code: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        prelude = f"BLOCKED = {sorted(blocked.split(','))!r}\n{BLOCKER}"
        return subprocess.run(
            [sys.executable, "-c", prelude + code, *args], capture_output=True, text=True, timeout=timeout,
            cwd=Path(__file__).resolve().parent.parent, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    return run


CHROMIUM = os.environ.get("CONQUIAN_CHROMIUM") or next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome", "chrome")) if p), None
)


@pytest.fixture(scope="module")
def browser():
    """The system's Chromium, headless, driven by Playwright; no host but 127.0.0.1 resolves, so a
    page that fetches from the network fails here as it would offline.  Skips without Chromium."""
    if CHROMIUM is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set CONQUIAN_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser driver: pip install playwright")
    with sync_api.sync_playwright() as pw:
        flags = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]  # fmt: skip
        try:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=flags, headless=True)
        except Exception as err:  # e.g. a chromium that cannot start in this sandbox
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {str(err)[:200]}")
        yield chromium
        chromium.close()


class SealedView(PlayerView):
    """A :class:`PlayerView` whose back door is shut: every public attribute and method is
    the real view's, but ``_state`` is None, so a bot or encoder that reaches into the
    game behind the view fails instead of reading it."""

    __slots__ = ("_inner",)

    def __init__(self, inner: PlayerView):
        self._inner = inner
        self._state = None
        self.player = inner.player


def _delegate(name: str, attr) -> object:
    if isinstance(attr, property):
        return property(lambda self: getattr(self._inner, name), doc=attr.__doc__)
    return lambda self, *args, **kwargs: getattr(self._inner, name)(*args, **kwargs)


for _name, _attr in vars(PlayerView).items():
    if not _name.startswith("_") and _name != "player":
        setattr(SealedView, _name, _delegate(_name, _attr))


def shipped_layout(name: str):
    """The layout of the shipped models' feature set ``name`` ("raw" or "meld"), from the frozen
    table (what a model file with no stamp was trained on), not this version's."""
    from conquian_env.layout import Layout
    from conquian_env.model_layouts import FEATURE_SETS, SHIPPED_LAYOUTS, UNSTAMPED_LAYOUTS

    (digest,) = [d for d in UNSTAMPED_LAYOUTS.values() if SHIPPED_LAYOUTS[d][0] == name]
    return Layout(FEATURE_SETS[name].layout.name, SHIPPED_LAYOUTS[digest][1])


def shipped_candidate_size() -> int:
    """The candidate inputs of a scorer file with no stamp (as the shipped scorer is)."""
    from agents.scorer.scorer import PRE_STAMP_LAYOUT, candidate_layout
    from conquian_env.layout import Layout
    from conquian_env.model_layouts import SHIPPED_LAYOUTS

    return candidate_layout(Layout("meld", SHIPPED_LAYOUTS[PRE_STAMP_LAYOUT][1])).size
