"""A card head that also reads each hand card's neighbours: the planes of the cards of ranks -2, -1, +1, +2 in
its suit (with a flag that the card exists) and the planes of the other three cards of its rank, summed."""
import numpy as np, torch
from torch import nn
from conquian_env.actions import DISCARD_BASE, MELD_BASE
from conquian_env.cards import NUM_CARDS, NUM_RANKS
from conquian_train.learner import CardHeadNet, Network, CARD_HEAD_WIDTH

OFFS = (-2, -1, 1, 2)
NB = np.full((NUM_CARDS, len(OFFS)), NUM_CARDS, dtype=np.int64)  # NUM_CARDS: the zero column
for c in range(NUM_CARDS):
    s, r = divmod(c, NUM_RANKS)
    for j, o in enumerate(OFFS):
        if 0 <= r + o < NUM_RANKS:
            NB[c, j] = s * NUM_RANKS + r + o
SAME = np.array([[(s2 * NUM_RANKS + c % NUM_RANKS) for s2 in range(4) if s2 != c // NUM_RANKS] for c in range(NUM_CARDS)])


class NbHead(CardHeadNet):
    def __init__(self, features, trunk_width, width=CARD_HEAD_WIDTH):
        super().__init__(features, trunk_width, width)
        count = len(self.planes)
        self.card_in = nn.Linear(count * (2 + len(OFFS)) + len(OFFS), width)
        self.register_buffer("nb", torch.from_numpy(NB), persistent=False)
        self.register_buffer("same", torch.from_numpy(SAME), persistent=False)
        self.register_buffer("exists", torch.from_numpy(np.concatenate([(NB < NUM_CARDS).astype(np.float32),
                                                                        np.zeros((1, 4), np.float32)])), persistent=False)

    def forward(self, obs, h, logits):
        rows, count = obs.shape[0], len(self.planes)
        planes = obs.index_select(1, self.columns).view(rows, count, NUM_CARDS)
        hand = planes[:, self.hand_plane].float()
        k = int(hand.sum(1).max()) if rows else 0
        if k == 0:
            return logits
        held, cards = torch.topk(hand, k, dim=1)
        padded = torch.cat([planes, planes.new_zeros(rows, count, 1)], dim=2)  # (rows, count, 41)
        own = torch.gather(planes, 2, cards[:, None, :].expand(-1, count, -1)).transpose(1, 2)  # (rows,k,count)
        nbi = self.nb[cards]  # (rows, k, 4)
        nbx = torch.gather(padded, 2, nbi.reshape(rows, 1, -1).expand(-1, count, -1)).view(rows, count, k, 4)
        nbx = nbx.permute(0, 2, 3, 1).reshape(rows, k, 4 * count)
        si = self.same[cards]  # (rows, k, 3)
        sx = torch.gather(planes, 2, si.reshape(rows, 1, -1).expand(-1, count, -1)).view(rows, count, k, 3).sum(3)
        sx = sx.transpose(1, 2)
        ex = self.exists[nbi[..., 0] * 0 + cards].to(own.dtype)  # (rows, k, 4)
        x = torch.cat([own, nbx, sx, ex], dim=2)
        embed = nn.functional.embedding(cards, self.rank[self.card_rank] + self.suit[self.card_suit])
        z = torch.relu(self.card_in(x) + embed + self.ctx(h)[:, None, :])
        z = _mid_with_pool(self, z, held) if isinstance(self, NbPoolHead) else torch.relu(self.mid(z))
        score = (self.out(z) * held[..., None]).to(logits.dtype)
        return torch.cat([logits[:, MELD_BASE: MELD_BASE + NUM_CARDS].scatter_add(1, cards, score[..., 0]),
                          logits[:, DISCARD_BASE: DISCARD_BASE + NUM_CARDS].scatter_add(1, cards, score[..., 1]),
                          logits[:, DISCARD_BASE + NUM_CARDS:]], dim=1)


class NbPoolHead(NbHead):
    """NbHead whose second layer also reads the hand's cards pooled (max over the hand of the first layer)."""

    def __init__(self, features, trunk_width, width=CARD_HEAD_WIDTH):
        super().__init__(features, trunk_width, width)
        self.pool = nn.Linear(width, width, bias=False)


def _mid_with_pool(self, z, held):
    pooled = (z * held[..., None]).amax(1)  # z >= 0 (after ReLU): max over the held cards
    return torch.relu(self.mid(z) + self.pool(pooled)[:, None, :])


def nb_network(hidden, sees_all, inputs, features, kind="nb", width=CARD_HEAD_WIDTH):
    net = Network(hidden, sees_all, inputs=inputs, head="cards", features=features)
    cls = NbPoolHead if kind == "nbpool" else NbHead
    net.cards = cls(features, net.cards.ctx.in_features, width)
    return net
