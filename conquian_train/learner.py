"""The self-play learner's networks and its one-epoch PPO update (torch), for :mod:`conquian_train.recipes.selfplay`.

:class:`Actor` maps the observation (``inputs`` int8 values: the raw observation's ``OBS_SIZE``, or the
``"potential"`` vector's, :mod:`conquian_env.potential`) to 85 logits through ``hidden``
ReLU layers; it is the bot that ships (:mod:`agents.networks.selfplay` plays its weights with
numpy).  :class:`Critic` estimates the result for the player to move, from the same observation
and, with ``sees_all``, what that player cannot see (:func:`conquian_train.rollout.hidden_planes`):
the critic only trains the actor, it never plays.

Precision: with ``bf16`` the forward and backward passes run under
``torch.autocast("cpu", torch.bfloat16)`` (AMX / AVX-512 BF16 where the CPU has them); the weights,
the optimizer and the softmax stay in float32.  In float32 on the CPU the first layer reads the int8
observation as it is stored and sums the weight columns of its inputs that are on
(:class:`SparseInputLinear`: about 11% of them, 1.5x the dense product there).
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from conquian_env.extras import missing

try:
    import torch
    from torch import nn
except ImportError as err:  # torch: installed by the user (docs: "PyTorch")
    raise missing(err, "conquian_train.learner (the self-play learner)") from None
try:
    import numba as nb
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "conquian_train.learner (the self-play learner)") from None
from agents.networks.card_head import CARD_RANK, CARD_SUIT, HAND_PLANE, HEADS, card_planes, plane_columns
from conquian_env.actions import DISCARD_BASE, MELD_BASE, NUM_ACTIONS
from conquian_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS
from conquian_env.observation import OBS_SIZE

from .rollout import HIDDEN_SIZE, SeatRollout

#: the logit an illegal action gets before the softmax (finite: bfloat16 and float32 alike)
ILLEGAL_LOGIT = -1e9
#: the card head's width
CARD_HEAD_WIDTH = 64


def numpy_blas_threads(count: int | None = None) -> int | None:
    """Set (``count``) and return the threads of numpy's OpenBLAS in this process, or None where it
    cannot be reached (another BLAS, no ``/proc``).  The self-play loop sets one: the pool's and the
    evaluation's numpy passes are small, and OpenBLAS's spinning threads beside torch's made them (and
    the greedy kernels beside them) three to five times slower on two cores."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return None
    for path in paths:
        lib = ctypes.CDLL(path)
        for prefix, suffix in (
            ("scipy_openblas", "64_"),
            ("scipy_openblas", ""),
            ("openblas", "64_"),
            ("openblas", ""),
        ):
            setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                if count is not None:
                    setter(ctypes.c_int(count))
                return int(getter())
    return None


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 matrix products natively (AMX or AVX-512 BF16)."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return any(f in flags for f in (" amx_bf16", " avx512_bf16"))


@nb.njit(cache=True, nogil=True, inline="always")
def _inputs_on(row, on):  # pragma: no cover - compiled
    """The indexes of ``row``'s values that are not 0, into ``on[:k]`` (without a branch); returns ``k``."""
    k = 0
    for c in range(len(row)):
        on[k] = c
        k += row[c] != 0
    return k


@nb.njit(cache=True, nogil=True, fastmath=True)
def _sparse_forward(x, wt, b, out):  # pragma: no cover - compiled
    """out[r] = b + sum over the inputs c that are not 0 of x[r, c] * wt[c]: a linear layer over int8 rows
    whose values are mostly 0, reading only the weight rows (``wt``: the weight transposed) of the others."""
    n, d = x.shape
    h = wt.shape[1]
    on = np.empty(d, np.int64)
    for r in range(n):
        k = _inputs_on(x[r], on)
        o = out[r]
        for j in range(h):
            o[j] = b[j]
        for t in range(k):
            c = on[t]
            v = np.float32(x[r, c])
            w = wt[c]
            for j in range(h):
                o[j] += v * w[j]


@nb.njit(cache=True, nogil=True, fastmath=True)
def _sparse_weight_grad(x, g, gwt):  # pragma: no cover - compiled
    """gwt[c] = sum over the rows r of x[r, c] * g[r]: the gradient of :func:`_sparse_forward`'s ``wt``."""
    n, d = x.shape
    h = g.shape[1]
    on = np.empty(d, np.int64)
    gwt[:] = 0
    for r in range(n):
        k = _inputs_on(x[r], on)
        gr = g[r]
        for t in range(k):
            c = on[t]
            v = np.float32(x[r, c])
            w = gwt[c]
            for j in range(h):
                w[j] += v * gr[j]


class SparseInputLinear(torch.autograd.Function):
    """``nn.functional.linear(x.float(), weight, bias)`` for an int8 CPU batch ``x`` of mostly 0 values (the
    observation and its planes: 0 or 1, about 11% of them 1), in float32: each row sums the weight columns of
    its inputs that are not 0 instead of multiplying all of them, and the weight's gradient adds each row's
    output gradient to those columns only.  The same function as the dense layer (the sums in another order);
    no gradient for ``x``."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty(x.shape[0], weight.shape[0], dtype=torch.float32)
        wt = weight.detach().float().t().contiguous()
        _sparse_forward(x.numpy(), wt.numpy(), bias.detach().float().contiguous().numpy(), out.numpy())
        ctx.save_for_backward(x)
        ctx.weight_shape = tuple(weight.shape)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor | None, torch.Tensor | None]:
        (x,) = ctx.saved_tensors
        grad = grad.float().contiguous()
        gw = None
        if ctx.needs_input_grad[1]:
            gwt = torch.empty(ctx.weight_shape[1], ctx.weight_shape[0], dtype=torch.float32)
            _sparse_weight_grad(x.numpy(), grad.numpy(), gwt.numpy())
            gw = gwt.t().contiguous()
        return None, gw, grad.sum(0) if ctx.needs_input_grad[2] else None


class CardHeadNet(nn.Module):
    """The card head (:mod:`agents.networks.card_head`, whose numpy twin plays it): each hand card's
    planes of the ``features`` vector, its rank and suit and the trunk's last layer (``trunk_width``)
    through two ReLU layers ``width`` wide, shared by the cards, to two scores added to the logits of
    its ``meld`` and ``discard`` actions.  Only the hand's cards are computed (at most as many per row
    as the largest hand of the batch)."""

    def __init__(self, features: str, trunk_width: int, width: int = CARD_HEAD_WIDTH):
        super().__init__()
        self.features, self.planes = features, card_planes(features)
        columns = plane_columns(features, self.planes)
        self.register_buffer("columns", torch.from_numpy(columns.reshape(-1)), persistent=False)
        self.columns_np = np.ascontiguousarray(columns.reshape(-1))
        self.register_buffer("card_rank", torch.from_numpy(CARD_RANK), persistent=False)
        self.register_buffer("card_suit", torch.from_numpy(CARD_SUIT), persistent=False)
        self.hand_plane = self.planes.index(HAND_PLANE)
        count = len(self.planes)
        self.card_in = nn.Linear(count, width)
        bound = 1 / (count + NUM_RANKS + NUM_SUITS) ** 0.5  # as one layer over the planes and the one-hots
        self.rank = nn.Parameter(torch.empty(NUM_RANKS, width).uniform_(-bound, bound))
        self.suit = nn.Parameter(torch.empty(NUM_SUITS, width).uniform_(-bound, bound))
        self.ctx = nn.Linear(trunk_width, width, bias=False)
        self.mid = nn.Linear(width, width)
        self.out = nn.Linear(width, 2)
        nn.init.orthogonal_(self.out.weight, gain=0.01)  # the trunk's logits decide at first
        nn.init.zeros_(self.out.bias)

    def forward(self, obs: torch.Tensor, h: torch.Tensor, logits: torch.Tensor,
                rows: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """``logits`` with each hand card's scores added to its meld and discard actions; with ``rows``
        (indices into the batch) for those rows only, the others' logits passed through unchanged: a
        row that may neither meld nor discard (an offer: take or refuse) needs no card scores."""
        if rows is None:
            return self._scored(obs, h, logits)
        if len(rows) == 0:
            return logits
        pick = (x.index_select(0, rows) for x in (obs, h, logits))  # (indexing int8 rows by a tensor is 15x slower)
        return logits.index_copy(0, rows, self._scored(*pick))

    def _scored(self, obs: torch.Tensor, h: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        rows, count = obs.shape[0], len(self.planes)
        if obs.dtype == torch.int8 and obs.device.type == "cpu":  # the sparse first layer's observation
            planes = torch.from_numpy(np.take(obs.numpy(), self.columns_np, axis=1)).float()  # 5x torch's int8 copy
        else:
            planes = obs.index_select(1, self.columns)
            planes = planes if planes.is_floating_point() else planes.float()
        planes = planes.view(rows, count, NUM_CARDS)
        hand = planes[:, self.hand_plane].float()
        k = int(hand.sum(1).max()) if rows else 0
        if k == 0:
            return logits
        held, cards = torch.topk(hand, k, dim=1)  # every hand card (held 1), then cards not held (0)
        x = torch.gather(planes, 2, cards[:, None, :].expand(-1, count, -1)).transpose(1, 2)
        # each card's rank and suit vectors as one 40-row table, looked up by embedding (whose gradient is a
        # sum per table row; indexing the (rows, k) cards into ``rank`` directly costs 2x the update's time there)
        embed = nn.functional.embedding(cards, self.rank[self.card_rank] + self.suit[self.card_suit])
        z = torch.relu(self.card_in(x) + embed + self.ctx(h)[:, None, :])
        z = torch.relu(self.mid(z))
        score = (self.out(z) * held[..., None]).to(logits.dtype)
        return torch.cat([logits[:, MELD_BASE : MELD_BASE + NUM_CARDS].scatter_add(1, cards, score[..., 0]),
                          logits[:, DISCARD_BASE : DISCARD_BASE + NUM_CARDS].scatter_add(1, cards, score[..., 1]),
                          logits[:, DISCARD_BASE + NUM_CARDS :]], dim=1)  # fmt: skip

    def arrays(self) -> dict[str, np.ndarray]:
        """The head's weights by :data:`agents.networks.card_head.HEAD_ARRAYS` name (float32 numpy copies)."""
        tensors = {"card_in_w": self.card_in.weight, "card_in_b": self.card_in.bias, "card_rank": self.rank,
                   "card_suit": self.suit, "card_ctx_w": self.ctx.weight, "card_mid_w": self.mid.weight,
                   "card_mid_b": self.mid.bias, "card_out_w": self.out.weight, "card_out_b": self.out.bias}  # fmt: skip
        return {k: v.detach().float().cpu().numpy().copy() for k, v in tensors.items()}


class Network(nn.Module):
    """The policy and its critic on one trunk: observation -> ``hidden`` ReLU layers -> 85 action
    logits (the actor, the bot that ships) and a value for the player to move.  With ``sees_all``
    the value head also reads the hidden planes (:func:`conquian_train.rollout.hidden_planes`)
    through a small layer of its own; the logits never depend on them.  With ``head="cards"`` a
    :class:`CardHeadNet` reading the ``features`` vector adds each hand card's scores to the logits."""

    def __init__(self, hidden: tuple[int, ...], sees_all: bool, critic_width: int = 64, inputs: int = OBS_SIZE,
                 head: str = "mlp", features: str = "raw"):  # fmt: skip
        super().__init__()
        self.hidden, self.sees_all = tuple(hidden), sees_all
        if head not in HEADS:
            raise ValueError(f"head must be one of {', '.join(map(repr, HEADS))}, got {head!r}")
        layers: list[nn.Module] = []
        for width in self.hidden:
            layers += [nn.Linear(inputs, width), nn.ReLU()]
            inputs = width
        self.trunk = nn.Sequential(*layers)
        self.policy = nn.Linear(inputs, NUM_ACTIONS)
        nn.init.orthogonal_(self.policy.weight, gain=0.01)  # a near-uniform first policy
        nn.init.zeros_(self.policy.bias)
        self.cards = CardHeadNet(features, inputs) if head == "cards" else None
        if sees_all:
            self.seen = nn.Sequential(nn.Linear(HIDDEN_SIZE, critic_width), nn.ReLU())
            self.value = nn.Sequential(nn.Linear(inputs + critic_width, critic_width), nn.ReLU(),
                                       nn.Linear(critic_width, 1))  # fmt: skip
        else:
            self.value = nn.Linear(inputs, 1)

    def forward(self, obs: torch.Tensor, hidden: torch.Tensor | None = None,
                head_rows: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """Logits and values of the batch ``obs``; ``head_rows``: the rows whose card scores are computed
        (:meth:`CardHeadNet.forward`; None: every row), the others' meld and discard logits are the trunk's.
        An int8 ``obs`` (on the CPU) goes through the first layer as :class:`SparseInputLinear`."""
        if obs.dtype == torch.int8 and obs.device.type == "cpu":
            first = self.trunk[0]
            h = self.trunk[1:](SparseInputLinear.apply(obs, first.weight, first.bias))
        else:
            h = self.trunk(obs if obs.is_floating_point() else obs.float())
        if self.sees_all:
            v = self.value(torch.cat([h, self.seen(hidden)], dim=1))
        else:
            v = self.value(h)
        logits = self.policy(h)
        if self.cards is not None:
            logits = self.cards(obs, h, logits, head_rows)
        return logits, v.squeeze(-1)

    def head_arrays(self) -> dict[str, np.ndarray] | None:
        """The card head's weights (:meth:`CardHeadNet.arrays`), None without one."""
        return None if self.cards is None else self.cards.arrays()

    def actor_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(weight (out, in), bias) of each linear layer of the actor, float32 numpy copies (the bot's file)."""
        linear = [m for m in self.trunk if isinstance(m, nn.Linear)] + [self.policy]
        return [(m.weight.detach().float().numpy().copy(), m.bias.detach().float().numpy().copy()) for m in linear]


@dataclass
class UpdateSettings:
    """The PPO update's knobs (the recipe's fields of the same names)."""

    minibatch: int
    epochs: int
    lr: float
    clip: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    gamma: float
    gae_lambda: float


class Learner:
    """The network, its Adam optimizer, the rollout's sampling and the update."""

    def __init__(self, hidden: tuple[int, ...], sees_all: bool, settings: UpdateSettings, *, bf16: bool, seed: int,
                 device: str = "cpu", acting_copy: bool = False, inputs: int = OBS_SIZE, head: str = "mlp",
                 features: str = "raw"):  # fmt: skip
        torch.manual_seed(seed)
        self.device = torch.device(device)
        self.net = Network(hidden, sees_all, inputs=inputs, head=head, features=features).to(self.device)
        # the network that samples the rollouts: the same one, or (acting_copy) a copy that the update does not
        # touch while it runs in another thread, brought up to date by sync()
        self.acting = copy.deepcopy(self.net) if acting_copy else self.net
        self.settings = settings
        self.bf16 = bf16
        # float32 on the CPU: the int8 observation goes through the first layer as SparseInputLinear (1.5x
        # the dense layer's speed there); bfloat16 (AMX) and GPUs keep the dense product
        self.sparse_inputs = self.device.type == "cpu" and not bf16
        try:  # Adam's step as one fused kernel (5x the default's on CPU; torch 2.4 or later, elsewhere the default)
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=settings.lr, eps=1e-5, fused=True)
        except (RuntimeError, TypeError, ValueError):
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=settings.lr, eps=1e-5)
        self.generator = torch.Generator(device=self.device).manual_seed(seed + 1)

    def sync(self) -> None:
        """The acting network takes the learned weights (after an update)."""
        if self.acting is not self.net:
            self.acting.load_state_dict(self.net.state_dict())

    def reseed(self, seed: int) -> None:
        """The sampling's random numbers from ``seed`` (a segment's start)."""
        self.generator.manual_seed(seed % 2**63)

    def autocast(self) -> Any:
        return torch.autocast(self.device.type, dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext()

    def _dtype(self) -> torch.dtype:
        return torch.bfloat16 if self.bf16 else torch.float32

    def _inputs(self, data: SeatRollout, rows: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
        dtype, device = self._dtype(), self.device
        obs = torch.from_numpy(data.obs[rows])
        if not self.sparse_inputs:
            obs = obs.to(device, non_blocking=True).to(dtype)
        hid = torch.from_numpy(data.hidden[rows]).to(device, non_blocking=True).to(dtype) if self.net.sees_all else None
        return obs, hid

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array).to(self.device, non_blocking=True)

    def _head_rows(self, mask: torch.Tensor) -> torch.Tensor | None:
        """The rows of ``mask`` (legal actions) where a card may be melded or discarded: the card head's
        rows (the others are offers, take or refuse, whose logits it does not touch); None without a head."""
        if self.net.cards is None:
            return None
        meld, discard = mask[:, MELD_BASE : MELD_BASE + NUM_CARDS], mask[:, DISCARD_BASE : DISCARD_BASE + NUM_CARDS]
        return torch.nonzero(meld.any(1) | discard.any(1)).squeeze(1)

    # ------------------------------------------------------------------ acting
    @torch.no_grad()
    def sample(self, data: SeatRollout, rows: slice) -> None:
        """For the decisions ``rows`` of ``data`` (their ``obs``, ``mask``, ``hidden`` filled): an
        action drawn from the policy among the legal ones, its log-probability and the value."""
        obs, hid = self._inputs(data, rows)
        mask = self._tensor(data.mask[rows])
        with self.autocast():
            logits, value = self.acting(obs, hid, self._head_rows(mask))
        logits = logits.float().masked_fill_(~mask, ILLEGAL_LOGIT)
        logp_all = torch.log_softmax(logits, dim=1)
        u = torch.rand(logits.shape, generator=self.generator, device=self.device).clamp_(1e-12, 1.0)
        action = torch.argmax(logp_all - torch.log(-torch.log(u)), dim=1)
        data.action[rows] = action.cpu().numpy()
        data.logp[rows] = logp_all.gather(1, action[:, None]).squeeze(1).cpu().numpy()
        data.value[rows] = value.float().cpu().numpy()

    # ------------------------------------------------------------------ learning
    def update(self, data: SeatRollout, rng: np.random.Generator) -> dict[str, float]:
        """``epochs`` passes of PPO over the rows of ``data`` whose next state is known; returns the means
        of the losses, the policy's entropy over the legal actions, the clipped fraction and the
        approximate KL."""
        s = self.settings
        data.compute_advantages(s.gamma, s.gae_lambda)
        known = data.trainable()
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "clip_frac": 0.0, "approx_kl": 0.0}
        batches = 0
        params = list(self.net.parameters())
        # each pass in equal parts of at most ``minibatch`` rows: no remainder of one row, whose advantage
        # cannot be normalized (a NaN that reached every weight)
        parts = -(-len(known) // s.minibatch)
        order = [rng.permutation(known) for _ in range(s.epochs)] if len(known) >= 2 else []
        for mb in (mb for rows in order for mb in np.array_split(rows, parts)):
            obs, hid = self._inputs(data, mb)
            mask = self._tensor(data.mask[mb])
            adv = self._tensor(data.adv[mb])
            ret = adv + self._tensor(data.value[mb])
            with self.autocast():
                logits, value = self.net(obs, hid, self._head_rows(mask))
            logits = logits.float().masked_fill(~mask, ILLEGAL_LOGIT)
            logp_every = torch.log_softmax(logits, dim=1)
            logp = logp_every.gather(1, self._tensor(data.action[mb])[:, None]).squeeze(1)
            # over the legal actions, whose log-probabilities alone reach exp (exp of the illegal ones' -1e9 takes
            # a slow path: 11x the time, 6% of the update)
            logp_legal = logp_every.masked_fill(~mask, 0.0)
            entropy = -(logp_legal.exp().masked_fill(~mask, 0.0) * logp_legal).sum(1).mean()
            log_ratio = logp - self._tensor(data.logp[mb])
            ratio = log_ratio.exp()
            norm = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg = -torch.min(ratio * norm, ratio.clamp(1 - s.clip, 1 + s.clip) * norm).mean()
            vloss = 0.5 * (value.float() - ret).pow(2).mean()
            loss = pg + s.vf_coef * vloss - s.ent_coef * entropy
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(params, s.max_grad_norm)
            self.optimizer.step()
            with torch.no_grad():
                stats["policy_loss"] += float(pg)
                stats["value_loss"] += float(vloss)
                stats["entropy"] += float(entropy)
                stats["clip_frac"] += float(((ratio - 1).abs() > s.clip).float().mean())
                stats["approx_kl"] += float(((ratio - 1) - log_ratio).mean())
            batches += 1
        if not all(bool(torch.isfinite(p).all()) for p in params):
            raise FloatingPointError(
                "the update made the network's weights NaN or infinite; resume from the last "
                "checkpoint with a smaller --lr"
            )
        return {k: v / max(batches, 1) for k, v in stats.items()}

    # ------------------------------------------------------------------ state
    def save(self, path: Any) -> None:
        """The network's weights and Adam's state as plain arrays (``.npz``, no pickles)."""
        arrays = {f"net/{k}": v.detach().cpu().float().numpy() for k, v in self.net.state_dict().items()}
        for i, p in enumerate(self.net.parameters()):
            st = self.optimizer.state.get(p)
            if st:
                arrays[f"adam/{i}/exp_avg"] = st["exp_avg"].cpu().numpy()
                arrays[f"adam/{i}/exp_avg_sq"] = st["exp_avg_sq"].cpu().numpy()
                arrays[f"adam/{i}/step"] = np.array(float(st["step"]))
        with open(path, "wb") as f:
            np.savez(f, **arrays)

    def load(self, path: Any) -> None:
        """What :meth:`save` wrote, checked name by name and shape by shape (a
        :class:`~conquian_arena.runfiles.RunFolderError` names the file and the fault)."""
        from conquian_arena.runfiles import RunFolderError

        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError) as err:
            raise RunFolderError(f"{path}: not a readable checkpoint ({err})") from err
        own = self.net.state_dict()
        want = {f"net/{k}": tuple(v.shape) for k, v in own.items()}
        params = list(self.net.parameters())
        for i, p in enumerate(params):
            for part in ("exp_avg", "exp_avg_sq"):
                want[f"adam/{i}/{part}"] = tuple(p.shape)
            want[f"adam/{i}/step"] = ()
        got = {k: tuple(v.shape) for k, v in arrays.items()}
        if set(got) - set(want) or any(got[k] != want[k] for k in got) or not set(f"net/{k}" for k in own) <= set(got):
            raise RunFolderError(f"{path}: holds {sorted(got)}, not the network the run's config builds")
        if not all(np.isfinite(v).all() for v in arrays.values()):
            raise RunFolderError(f"{path}: holds NaN or infinite values")
        self.net.load_state_dict({k: torch.from_numpy(arrays[f"net/{k}"]).to(self.device) for k in own})
        self.optimizer.state.clear()
        step_device = self.device if self.optimizer.defaults.get("fused") else torch.device("cpu")  # as Adam keeps it
        for i, p in enumerate(params):
            if f"adam/{i}/step" in arrays:
                self.optimizer.state[p] = {
                    "step": torch.tensor(float(arrays[f"adam/{i}/step"]), device=step_device),
                    "exp_avg": torch.from_numpy(arrays[f"adam/{i}/exp_avg"]).to(self.device),
                    "exp_avg_sq": torch.from_numpy(arrays[f"adam/{i}/exp_avg_sq"]).to(self.device),
                }
        self.sync()
