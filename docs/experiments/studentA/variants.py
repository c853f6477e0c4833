"""The fits of docs/experiments/studentA: the action scorer fitted offline on an expert-iteration
run's labels with other losses, temperatures, weights, sizes and inputs (issue 28).

    python docs/experiments/studentA/variants.py belief runs/lab28
    python docs/experiments/studentA/variants.py fit runs/lab28 '{"ce256": {"hidden": [256, 256]}}'
    BELIEF=1 python docs/experiments/studentA/variants.py fit runs/lab28 '{"bce256": {"hidden": [256, 256]}}'

``belief RUN`` replays the run's round-0 games (:func:`conquian_train.exit.play_games`, checked row
by row against each shard) and stores the shipped belief model's probability of each card being
in the opponent's hand at every recorded decision (``RUN/belief/*.npy``).  ``fit RUN[,RUN...]
JSON`` fits one scorer per entry (knobs: ``hidden``, ``loss`` 'ce' / 'reg' / 'ce+reg', ``t``,
``weight`` 'none' / 'spread', ``epochs``, ``lr``) and prints its regret on the held-out games
(game id divisible by 5) by the labels, beside greedy's; a scorer of the standard inputs is saved
as ``runs/studentA/NAME.npz`` (``scorer:PATH`` plays it).  With ``BELIEF=1`` every candidate gains
7 inputs: the belief of its card, of its run neighbours at -2, -1, +1, +2, of the rank's other
three cards summed, and the expected hidden-hand size / 10 (no bot reads these: regret only).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from agents.scorer import ActionScorer, candidate_features
from conquian_env.actions import DISCARD_BASE, TAKE
from conquian_env.observation import OBS_AT
from conquian_train.imitation import ImitationData
from conquian_train.scorer_fit import regret, scorer_network, scorer_positions


def load(folders: str) -> ImitationData:
    paths = [p for f in folders.split(",") for p in sorted(Path(f, "labels").glob("r00_*.npz"))]
    return ImitationData.concatenate([ImitationData.load(p, "meld")[0] for p in paths])


def belief(folder: Path) -> None:
    from agents.belief import load_belief
    from agents.greedy import GreedyAgent
    from conquian_train import recipes
    from conquian_train.exit import MAY_CHANGE, ExItConfig, play_games

    config, _ = recipes.config_from_args(ExItConfig, {"resume": str(folder)}, MAY_CHANGE)
    model, out = load_belief(), folder / "belief"
    out.mkdir(exist_ok=True)
    for k, path in enumerate(sorted((folder / "labels").glob("r00_*.npz"))):
        data, _ = ImitationData.load(path, "meld")
        rows, _ = play_games(GreedyAgent(), config, 0, k)
        if not np.array_equal(np.asarray([r[0] for r in rows], np.float16), data.obs):
            raise SystemExit(f"the games replayed for {path} are not its games")
        np.save(out / f"{path.stem}.npy", np.asarray([model.probabilities(r[2]) for r in rows], np.float32))


def belief_inputs(folders: str, data: ImitationData) -> np.ndarray:
    """The 7 belief inputs of every candidate of :func:`scorer_positions` (same rows, same order)."""
    probs = np.concatenate([np.load(p) for f in folders.split(",") for p in sorted(Path(f, "belief").glob("*.npy"))])
    q = data.q.astype(np.float32)
    searched = np.flatnonzero(~np.isnan(q).all(axis=1))
    _, valid, actions = candidate_features(data.obs[searched].astype(np.float32), data.masks[searched])
    keep = valid.sum(axis=1) > 1
    rows, actions = searched[keep], actions[keep]
    b = probs[rows].reshape(-1, 4, 10)
    face = data.obs[rows, OBS_AT["face_up"] : OBS_AT["face_up"] + 40].astype(np.float32).argmax(axis=1)
    discard = (actions >= DISCARD_BASE) & (actions < DISCARD_BASE + 40)
    card = np.where(discard, actions - DISCARD_BASE, np.where(actions == TAKE, face[:, None], -1))
    ok = card >= 0
    suit, rank = np.maximum(card, 0) // 10, np.maximum(card, 0) % 10
    at = np.arange(len(rows))[:, None]
    extra = np.zeros((*card.shape, 7), np.float32)
    extra[..., 0] = b[at, suit, rank] * ok
    for j, step in enumerate((-2, -1, 1, 2)):
        r = rank + step
        extra[..., 1 + j] = b[at, suit, np.clip(r, 0, 9)] * (ok & (r >= 0) & (r < 10))
    extra[..., 5] = (b[at, :, rank].sum(axis=-1) - b[at, suit, rank]) * ok
    extra[..., 6] = probs[rows].sum(axis=1)[:, None] / 10.0
    if os.environ.get("DANGER"):  # the chance the opponent holds two cards that make a set or run with it
        from agents.greedy import PARTNERS

        pairs = [[[i for i in range(40) if m >> i & 1] for m in PARTNERS[c]] for c in range(40)]
        p = probs[rows]
        danger = np.zeros((len(rows), 40), np.float32)
        for c in range(40):
            none = np.ones(len(rows), np.float32)
            for a, b2 in pairs[c]:
                none *= 1.0 - p[:, a] * p[:, b2]
            danger[:, c] = 1.0 - none
        extra = np.concatenate([extra, (danger[at, np.maximum(card, 0)] * ok)[..., None]], axis=-1)
    return extra


def global_inputs(data: ImitationData) -> np.ndarray:
    """The 18 card channels of :func:`agents.scorer.candidate_features` for all 40 cards (720 values),
    the same for every candidate of a position (same rows as :func:`scorer_positions`)."""
    from agents.scorer import CARD_BLOCKS, FEATURE_AT

    q = data.q.astype(np.float32)
    searched = np.flatnonzero(~np.isnan(q).all(axis=1))
    _, valid, _ = candidate_features(data.obs[searched].astype(np.float32), data.masks[searched])
    rows = searched[valid.sum(axis=1) > 1]
    f = data.obs[rows].astype(np.float32)
    planes = np.concatenate([f[:, : CARD_BLOCKS * 40], f[:, FEATURE_AT["live"] : FEATURE_AT["lay_plan"] + 40]], axis=1)
    return np.broadcast_to(planes[:, None, :], (len(rows), valid.shape[1], planes.shape[1])).astype(np.float32)


def fit(pos: dict, hidden=(128, 128), loss="ce", epochs=10, lr=1e-3, t=0.05, weight="none", seed=0, batch=256):
    import torch

    held = pos["game"] % 5 == 0
    train_idx, test_idx = np.flatnonzero(~held), np.flatnonzero(held)
    net = scorer_network((pos["x"].shape[-1], *hidden, 1), seed)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * (len(train_idx) // batch + 1))
    x, valid, q = (torch.from_numpy(pos[k]) for k in ("x", "valid", "q"))

    def measure(idx: np.ndarray) -> float:
        with torch.no_grad():
            s = np.concatenate([net(x[idx[i : i + 8192]]).squeeze(-1).numpy() for i in range(0, len(idx), 8192)])
        return regret(s, pos["valid"][idx], pos["q"][idx])

    greedy = regret(np.eye(x.shape[1], dtype=np.float32)[pos["greedy"][test_idx]], pos["valid"][test_idx],
                    pos["q"][test_idx])  # fmt: skip
    best, kept, rng = np.inf, None, np.random.default_rng(seed)
    for epoch in range(epochs):
        t0, order = time.perf_counter(), rng.permutation(train_idx)
        for i in range(0, len(order), batch):
            b = torch.from_numpy(order[i : i + batch])
            v, qb, s = valid[b], q[b], net(x[b]).squeeze(-1)
            total = torch.zeros(len(b))
            if "ce" in loss:
                target = torch.softmax((qb / t).masked_fill(~v, -1e9), dim=1)
                total = total - (target * torch.log_softmax(s.masked_fill(~v, -1e9), dim=1)).sum(dim=1)
            if "reg" in loss:
                vf = v.float()
                n = vf.sum(1, keepdim=True)
                centred = (s - (s * vf).sum(1, keepdim=True) / n) - (qb - (qb * vf).sum(1, keepdim=True) / n)
                total = total + (centred**2 * vf).sum(1) / n.squeeze(1) * 100.0
            if weight == "spread":
                spread = qb.masked_fill(~v, -1e9).max(1).values - qb.masked_fill(~v, 1e9).min(1).values
                total = total * spread / spread.mean().clamp_min(1e-6)
            opt.zero_grad()
            total.mean().backward()
            opt.step()
            sched.step()
        held_regret = measure(test_idx)
        if held_regret < best:
            best = held_regret
            linears = [m for m in net if hasattr(m, "weight")]
            kept = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in linears]
        print(f"  epoch {epoch}: held-out regret {held_regret:.5f} (greedy {greedy:.5f}) "
              f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    return kept, best, greedy


def main(argv: list[str]) -> int:
    if argv[:1] == ["belief"] and len(argv) == 2:
        belief(Path(argv[1]))
        return 0
    if argv[:1] != ["fit"] or len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(2)
    data = load(argv[1])
    pos = scorer_positions(data)
    if os.environ.get("BELIEF"):
        pos["x"] = np.concatenate([pos["x"], belief_inputs(argv[1], data)], axis=2)
    if os.environ.get("GLOBAL"):  # every candidate also sees the whole table: all 18 channels of all 40 cards
        pos["x"] = np.concatenate([pos["x"], global_inputs(data)], axis=2)
    print(f"{len(pos['q'])} positions, {pos['x'].shape[-1]} inputs a candidate", flush=True)
    Path("runs/studentA").mkdir(parents=True, exist_ok=True)
    for name, knobs in json.loads(argv[2]).items():
        knobs = {k: tuple(v) if k == "hidden" else v for k, v in knobs.items()}
        layers, best, greedy = fit(pos, **knobs)
        if not (os.environ.get("BELIEF") or os.environ.get("GLOBAL")):
            ActionScorer(layers).save(f"runs/studentA/{name}.npz")
        print(f"RESULT {name} held-out regret {best:.5f} greedy {greedy:.5f} ratio {best / greedy:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
