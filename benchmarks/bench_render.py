"""Frames per second of the rgb_array render mode (Pillow): is it fast enough to record every step?

Plays random games through the AEC env with ``render_mode="rgb_array"`` and times
``render()`` alone (the game steps are not counted).  Prints one RESULT line.
"""

from __future__ import annotations

import time

import numpy as np

import conquian_env


def main(frames: int = 1500) -> None:
    env = conquian_env.env(render_mode="rgb_array")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    spent, n = 0.0, 0
    while n < frames:
        if env.unwrapped.game.is_terminal():
            env.reset()
        t = time.perf_counter()
        frame = env.render()
        spent += time.perf_counter() - t
        n += 1
        legal = env.unwrapped.legal_actions()
        env.step(int(legal[rng.integers(len(legal))]))
    h, w, _ = frame.shape
    print(f"RESULT rgb_array render: {n / spent:,.0f} frames/s ({w}x{h}, {1000 * spent / n:.2f} ms per frame)")


if __name__ == "__main__":
    main()
