"""The card head of a self-play network (``--head cards``): the torch network that trains it and the numpy
bot that plays it give the same logits on real positions, only hand cards are scored, the model file and
the pool's snapshots keep it, a run trains, resumes exactly and plays with it, and a tampered file is
refused by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("numba")
train = pytest.importorskip("train")

from agents.model_files import ModelFileError  # noqa: E402
from agents.networks.batched import BatchPolicy, policy_inputs  # noqa: E402
from agents.networks.card_head import HEAD_ARRAYS, CardHead, card_planes  # noqa: E402
from agents.networks.ppo import NumpyPolicy  # noqa: E402
from agents.networks.selfplay import read_selfplay, save_selfplay  # noqa: E402
from agents.registry import make_agent  # noqa: E402
from conquian_env.actions import DISCARD_BASE, MELD_BASE, NUM_ACTIONS  # noqa: E402
from conquian_env.cards import NUM_CARDS  # noqa: E402
from conquian_env.model_layouts import FEATURE_SETS  # noqa: E402
from conquian_env.vector import VectorGame  # noqa: E402
from conquian_train.learner import Network  # noqa: E402
from conquian_train.policy_files import load_snapshots, save_snapshots  # noqa: E402
from tests.test_selfplay import tiny  # noqa: E402


def positions(features: str, games: int = 64, steps: int = 30, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Vectors and masks of the movers of random games, every phase (the batched engine's, as the bot reads them)."""
    g = VectorGame(games, seed=seed)
    rng = np.random.default_rng(seed)
    xs, ms = [], []
    for _ in range(steps):
        obs, masks = policy_inputs(g, np.arange(games), features)
        xs.append(obs.copy())
        ms.append(masks.astype(bool))
        g.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
    return np.concatenate(xs), np.concatenate(ms)


def headed_network(features: str, hidden: tuple[int, ...] = (32, 16), seed: int = 0) -> Network:
    torch.manual_seed(seed)
    net = Network(hidden, sees_all=False, inputs=FEATURE_SETS[features].size, head="cards", features=features)
    with torch.no_grad():  # a head that matters (it starts near zero)
        for p in net.cards.out.parameters():
            p.normal_(0, 0.5)
    return net


def numpy_policy(net: Network, features: str) -> NumpyPolicy:
    layers = net.actor_layers()
    named = [(w, b, "ReLU" if i < len(layers) - 1 else "Identity") for i, (w, b) in enumerate(layers)]
    head = CardHead(net.head_arrays(), features, card_planes(features), layers[-1][0].shape[1])
    return NumpyPolicy(named, features, head=head)


@pytest.mark.parametrize("features", ["potential", "raw"])
def test_the_numpy_bot_computes_the_torch_network_s_logits(features):
    x, _ = positions(features)
    net = headed_network(features)
    with torch.no_grad():
        want = net(torch.from_numpy(x).float())[0].numpy()
        plain = net.policy(net.trunk(torch.from_numpy(x).float())).numpy()
    policy = numpy_policy(net, features)
    got = policy.logits(x)
    assert np.abs(got - want).max() < 1e-5
    assert np.abs(policy.logits(x[7]) - want[7]).max() < 1e-5  # one vector, as the per-game bot asks
    # the head changed exactly the hand cards' meld and discard logits
    hand = x[:, FEATURE_SETS[features].layout.offsets["own_hand"] :][:, :40] > 0
    changed = np.abs(want - plain) > 1e-7
    assert not changed[:, 80:].any()
    assert not (changed[:, :40] & ~hand).any() and not (changed[:, DISCARD_BASE : DISCARD_BASE + 40] & ~hand).any()
    assert changed[:, DISCARD_BASE : DISCARD_BASE + 40][hand].mean() > 0.99


def test_the_head_s_rank_and_suit_vectors_learn_from_each_hand_card_they_score():
    """The head looks each card's rank and suit vectors up as one 40-row table: the gradient each vector gets
    is the sum over the hand cards of its rank (suit) of what that card's first layer passed back."""
    x, _ = positions("potential", games=32, steps=10)
    net = headed_network("potential")
    head = net.cards
    obs = torch.from_numpy(x).float()
    h = net.trunk(obs).detach()
    width = head.mid.in_features
    logits = torch.zeros(len(x), NUM_ACTIONS)
    head(obs, h, logits).pow(2).sum().backward()
    got_rank, got_suit = head.rank.grad.clone(), head.suit.grad.clone()
    # the written-out sum: d(loss)/d(embed) of each (row, hand card), added up by rank and by suit
    head.zero_grad()
    rows, count = obs.shape[0], len(head.planes)
    planes = obs.index_select(1, head.columns).view(rows, count, NUM_CARDS)
    hand = planes[:, head.hand_plane]
    k = int(hand.sum(1).max())
    held, cards = torch.topk(hand, k, dim=1)
    ranks, suits = head.card_rank[cards], head.card_suit[cards]
    embed = (head.rank[ranks] + head.suit[suits]).detach().requires_grad_()  # each card's vector, as a leaf
    xc = torch.gather(planes, 2, cards[:, None, :].expand(-1, count, -1)).transpose(1, 2)
    z = torch.relu(head.card_in(xc) + embed + head.ctx(h)[:, None, :])
    score = head.out(torch.relu(head.mid(z))) * held[..., None]
    meld, discard = slice(MELD_BASE, MELD_BASE + NUM_CARDS), slice(DISCARD_BASE, DISCARD_BASE + NUM_CARDS)
    full = torch.cat([logits[:, meld].scatter_add(1, cards, score[..., 0]),
                      logits[:, discard].scatter_add(1, cards, score[..., 1]), logits[:, DISCARD_BASE + NUM_CARDS :]],
                     dim=1)  # fmt: skip
    full.pow(2).sum().backward()
    want_rank = torch.zeros_like(got_rank).index_add_(0, ranks.reshape(-1), embed.grad.reshape(-1, width))
    want_suit = torch.zeros_like(got_suit).index_add_(0, suits.reshape(-1), embed.grad.reshape(-1, width))
    assert got_rank.abs().sum() > 0 and got_suit.abs().sum() > 0
    assert torch.allclose(got_rank, want_rank, atol=1e-5) and torch.allclose(got_suit, want_suit, atol=1e-5)


def test_the_learner_scores_cards_only_where_a_card_may_be_melded_or_discarded_and_learns_the_same():
    """The learner computes the head for the rows whose legal actions include a meld or a discard (an offer's
    take or refuse is the trunk's alone): the same logits on every legal action as the head over all rows,
    and the same gradients of a loss over them."""
    import dataclasses

    from conquian_train.learner import Learner
    from tests.test_selfplay import SETTINGS

    x, masks = positions("potential", games=64, steps=30, seed=7)
    net = headed_network("potential", hidden=(32, 32), seed=2)
    learner = Learner((32, 32), False, dataclasses.replace(SETTINGS), bf16=False, seed=0, inputs=x.shape[1],
                      head="cards", features="potential")  # fmt: skip
    learner.net = net
    legal = torch.from_numpy(masks)
    rows = learner._head_rows(legal)
    cards = masks[:, : DISCARD_BASE + NUM_CARDS].any(1)
    assert rows.tolist() == np.flatnonzero(cards).tolist() and 0 < len(rows) < len(x)
    assert (masks[~cards][:, DISCARD_BASE + NUM_CARDS :].sum(1) >= 1).all()  # the others: offers
    obs = torch.from_numpy(x).float()
    grads = []
    for head_rows in (None, rows):
        net.zero_grad()
        logits, _ = net(obs, None, head_rows)
        logits = logits.masked_fill(~legal, -1e9)
        torch.log_softmax(logits, 1).masked_fill(~legal, 0).pow(2).sum().backward()
        grads.append((logits.detach(), [p.grad.clone() for p in net.parameters() if p.grad is not None]))
    (full, g_full), (part, g_part) = grads
    assert torch.allclose(full, part, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g_full, g_part, strict=True))
    assert net(obs[~torch.from_numpy(cards)], None, torch.zeros(0, dtype=torch.long))[0].shape[0] == (~cards).sum()


def test_the_sparse_first_layer_computes_the_dense_layer_and_its_gradients():
    """On the CPU in float32 the learner feeds the int8 observation to the first layer as
    ``SparseInputLinear`` (sums of the weight columns of the inputs that are on): the dense layer's outputs
    and weight and bias gradients, for 0/1 rows and for any int8 values, and the same network's logits and
    values as the float path."""
    from conquian_train.learner import Learner, SparseInputLinear
    from tests.test_selfplay import SETTINGS

    x, masks = positions("potential", games=32, steps=20, seed=11)
    x = np.concatenate([x, np.random.default_rng(0).integers(-128, 128, size=(5, x.shape[1]), dtype=np.int8)])
    torch.manual_seed(3)
    layer = torch.nn.Linear(x.shape[1], 24)
    g = torch.randn(len(x), 24)
    got = SparseInputLinear.apply(torch.from_numpy(x), layer.weight, layer.bias)
    (got * g).sum().backward()
    got_w, got_b = layer.weight.grad.clone(), layer.bias.grad.clone()
    layer.zero_grad()
    want = torch.nn.functional.linear(torch.from_numpy(x).float(), layer.weight, layer.bias)
    (want * g).sum().backward()
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-5)
    assert torch.allclose(got_w, layer.weight.grad, atol=1e-4, rtol=1e-5)
    assert torch.allclose(got_b, layer.bias.grad, atol=1e-5)
    net = headed_network("potential", hidden=(32, 32), seed=4)
    with torch.no_grad():
        a = net(torch.from_numpy(x[:-5]).float())
        b = net(torch.from_numpy(x[:-5]))
    assert all(torch.allclose(p, q, atol=1e-5) for p, q in zip(a, b, strict=True))
    assert Learner((8,), False, SETTINGS, bf16=False, seed=0, inputs=x.shape[1]).sparse_inputs
    assert not Learner((8,), False, SETTINGS, bf16=True, seed=0, inputs=x.shape[1]).sparse_inputs


def test_the_head_in_bfloat16_chooses_the_float32_actions_within_tolerance():
    x, masks = positions("potential", games=128, steps=20, seed=5)
    net = headed_network("potential", hidden=(128, 128), seed=1)
    with torch.no_grad():
        full = net(torch.from_numpy(x).float())[0]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            half = net(torch.from_numpy(x).to(torch.bfloat16))[0].float()
    legal = torch.from_numpy(masks)
    choice = legal.sum(1) > 1
    a, b = (t.masked_fill(~legal, -1e9).argmax(1) for t in (full, half))
    assert (a[choice] == b[choice]).float().mean() >= 0.97


def test_the_model_file_and_the_snapshots_keep_the_head_and_refuse_a_tampered_one(tmp_path):
    features = "potential"
    net = headed_network(features)
    policy = numpy_policy(net, features)
    x, _ = positions(features, games=16, steps=10)
    path = save_selfplay(tmp_path / "m.npz", [(w, b) for w, b, _ in policy.layers], {"frames": 9}, features=features,
                         head=policy.head)  # fmt: skip
    back, meta = read_selfplay(path)
    assert meta["head"] == "cards" and meta["card_planes"] == list(card_planes(features))
    assert np.array_equal(back.logits(x), policy.logits(x))
    save_snapshots(tmp_path / "s.npz", [policy, numpy_policy(headed_network(features, seed=2), features)])
    snaps = load_snapshots(tmp_path / "s.npz", features)
    assert [s.head is not None for s in snaps] == [True, True] and np.array_equal(snaps[0].logits(x), policy.logits(x))

    arrays = dict(np.load(path))
    meta_of = json.loads(str(arrays["meta"]))

    def refused(change, words):
        bad = dict(arrays)
        change(bad)
        np.savez(tmp_path / "bad.npz", **bad)
        with pytest.raises(ModelFileError, match=words):
            read_selfplay(tmp_path / "bad.npz")

    refused(lambda a: a.pop("card_mid_w"), "card head needs")
    refused(lambda a: a.update(card_out_w=np.zeros((3, 64), np.float32)), r"card_out_w has shape \(3, 64\)")
    refused(lambda a: a.update(card_mid_w=np.full((64, 64), np.inf, np.float32)), "card_mid_w holds NaN or infinite")
    refused(lambda a: a.update(card_rank=np.full((10, 64), 5e5, np.float32)), "magnitude")
    refused(lambda a: a.update(meta=np.array(json.dumps({**meta_of, "head": "transformer"}))), "head 'transformer'")
    refused(lambda a: a.update(meta=np.array(json.dumps({**meta_of, "card_planes": ["own_hand", "x_ray"]}))),
            r"planes \['x_ray'\]")  # fmt: skip
    no_head = {k: v for k, v in meta_of.items() if k not in ("head", "card_planes")}
    refused(lambda a: a.update(meta=np.array(json.dumps(no_head))), "names no head")
    refused(lambda a: a.update(card_oops=np.zeros(2, np.float32)), "unexpected archive member 'card_oops.npy'")
    assert sorted(HEAD_ARRAYS) == sorted(k for k in arrays if k.startswith("card_"))


def test_a_run_with_the_card_head_trains_resumes_exactly_and_plays(tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert train.main(tiny(whole, "--head", "cards")) == 0
    assert train.main(tiny(parts, "--head", "cards", "--total-frames", "1500")) == 0
    assert train.main(["selfplay", "--resume", str(parts), "--total-frames", "3000", "--no-progress"]) == 0
    a, b = (np.load(p / "checkpoints" / "latest.npz") for p in (whole, parts))
    assert sorted(a.files) == sorted(b.files) and any("cards." in k for k in a.files)
    assert all(np.array_equal(a[k], b[k]) for k in a.files)
    snaps = load_snapshots(whole / "checkpoints" / "snapshots.npz", "potential")
    assert snaps and all(s.head is not None for s in snaps)
    bot = make_agent(f"selfplay:{whole / 'final.npz'}", 0)
    assert bot.policy.head is not None
    games = VectorGame(32, seed=4)
    batch = BatchPolicy(bot.policy)
    for _ in range(200):  # every move legal, batched
        rows = np.arange(32)
        _, masks = policy_inputs(games, rows, "potential")
        actions = batch.act_batch(games, rows)
        assert masks[rows, actions].all()
        games.step(actions)
