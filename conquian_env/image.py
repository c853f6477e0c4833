"""Pictures of the table: the ``"rgb_array"`` render mode (Pillow, a dependency).

:func:`render_rgb` draws a game as an ``(H, W, 3)`` ``uint8`` array: each player's meld
split into its sets and runs, each hand (face up, or as card backs for a hand the
observer may not see), the face-up card and where it came from, the stock, the dead pile
and whose turn it is.  The picture depends only on what it shows: identical states give
identical frames, and with an ``observer`` nothing of the opponent's hand but its size
(or of the stock but its count) is drawn.  Pillow is a dependency of the package, so
every declared render mode works on a plain install.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from .cards import RANKS, SUITS, cards_of
from .game import DISCARDED, GAME_OVER, MELD, PHASE_NAMES, GameState
from .render import meld_groups

#: default frame size (width, height) in pixels
FRAME_SIZE = (960, 600)
CARD_W, CARD_H, GAP = 46, 64, 6
_FELT = (28, 96, 56)
_RED, _BLACK = (200, 30, 40), (20, 20, 20)
_BACK = (40, 70, 150)
_TEXT = (240, 240, 230)


def _pil() -> Any:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as err:  # Pillow is a dependency: only a broken install lacks it
        raise ImportError(
            "render_mode='rgb_array' needs Pillow, a dependency of conquian-env: pip install pillow"
        ) from err
    return Image, ImageDraw, ImageFont


@lru_cache(maxsize=8)
def _font(size: int) -> Any:
    _, _, image_font = _pil()
    try:
        return image_font.load_default(size=size)
    except TypeError:  # Pillow < 10.1: a fixed bitmap font
        return image_font.load_default()


@lru_cache(maxsize=128)
def _card_tile(card: int, dim: bool) -> Any:
    """One card face (cached: a frame is mostly pasted tiles)."""
    image, image_draw, _ = _pil()
    tile = image.new("RGB", (CARD_W, CARD_H), _FELT)
    d = image_draw.Draw(tile)
    d.rounded_rectangle((0, 0, CARD_W - 1, CARD_H - 1), radius=6, fill=(250, 250, 245), outline=(90, 90, 90))
    suit, rank = divmod(card, 10)
    color = _RED if SUITS[suit] in "DH" else _BLACK
    # rank and suit in the top-left corner, readable where cards overlap in a meld
    d.text((5, 2), RANKS[rank], font=_font(22), fill=color)
    d.text((6, 26), SUITS[suit], font=_font(17), fill=color)
    d.text((CARD_W - 18, CARD_H - 24), SUITS[suit], font=_font(17), fill=color)
    if dim:  # cards being laid in the meld in progress
        d.rectangle((0, CARD_H - 6, CARD_W - 1, CARD_H - 1), fill=(240, 190, 40))
    return tile


@lru_cache(maxsize=2)
def _back_tile() -> Any:
    image, image_draw, _ = _pil()
    tile = image.new("RGB", (CARD_W, CARD_H), _FELT)
    d = image_draw.Draw(tile)
    d.rounded_rectangle((0, 0, CARD_W - 1, CARD_H - 1), radius=6, fill=_BACK, outline=(220, 220, 220))
    d.rounded_rectangle((6, 6, CARD_W - 7, CARD_H - 7), radius=4, outline=(150, 170, 230))
    return tile


def render_rgb(
    state: GameState,
    names: tuple[str, str] = ("player_0", "player_1"),
    observer: int | None = None,
    size: tuple[int, int] = FRAME_SIZE,
) -> np.ndarray:
    """The table as an ``(H, W, 3)`` ``uint8`` image (see the module docstring).

    ``observer``: ``None`` draws the referee's view (both hands); ``0`` or ``1`` draws
    the other hand as card backs.  Player 1 sits at the top, player 0 at the bottom.
    """
    image, image_draw, _ = _pil()
    width, height = size
    frame = image.new("RGB", (width, height), _FELT)
    d = image_draw.Draw(frame)
    small, big = _font(16), _font(20)
    chosen = state.chosen if state.phase == MELD else 0
    rows = {1: 12, 0: height - 2 * CARD_H - 52}
    for p, top in rows.items():
        hand = state.hands[p]
        mover = " (to move)" if state.phase != GAME_OVER and state.player == p else ""
        label = f"{names[p]}{mover}: hand {hand.bit_count()}, meld {state.melds[p].bit_count()}"
        d.text((12, top), label, font=big, fill=(255, 235, 120) if mover else _TEXT)
        x, y = 12, top + 26
        visible = observer is None or observer == p
        for c in cards_of(hand):
            tile = _card_tile(c, bool(chosen >> c & 1)) if visible or chosen >> c & 1 else _back_tile()
            frame.paste(tile, (x, y))
            x += CARD_W // 2 + 6 if not visible else CARD_W + 2
        x = max(x + 18, width // 2 - 60)
        for group in meld_groups(state.melds[p]):
            if x + len(group) * (CARD_W // 2) + CARD_W > width:
                x, y = width // 2 - 60, y + CARD_H // 2
            for c in group:
                frame.paste(_card_tile(c, False), (x, y))
                x += CARD_W // 2
            x += CARD_W // 2 + 14
    mid = height // 2 - CARD_H // 2 - 6
    # stock
    if state.stock_left:
        frame.paste(_back_tile(), (12, mid))
    d.text((12, mid + CARD_H + 4), f"stock {state.stock_left}", font=small, fill=_TEXT)
    # face-up card
    fx = 12 + CARD_W + 40
    if state.face_up >= 0:
        frame.paste(_card_tile(state.face_up, False), (fx, mid))
        how = "discarded" if state.source == DISCARDED else "turned"
        extra = ", refused once" if state.passed else ""
        d.text((fx + CARD_W + 10, mid + 8), f"face up: {how} by {names[state.owner]}{extra}", font=small, fill=_TEXT)
    # status line
    if state.phase == GAME_OVER:
        status = "game over: draw" if state.winner < 0 else f"game over: {names[state.winner]} wins"
    else:
        status = f"{names[state.player]} to {PHASE_NAMES[state.phase]}"
    d.text((fx + CARD_W + 10, mid + 32), status, font=big, fill=(255, 235, 120))
    # dead pile, small
    dead = cards_of(state.dead)
    dx = width // 2 + 80
    d.text((dx, mid - 4), f"dead ({len(dead)})", font=small, fill=_TEXT)
    for i, c in enumerate(dead):
        col, row = divmod(i, 2)
        small_tile = _card_tile(c, False).resize((CARD_W * 2 // 3, CARD_H * 2 // 3))
        frame.paste(small_tile, (dx + col * 26, mid + 16 + row * 26))
    return np.asarray(frame, dtype=np.uint8)
