"""Agreement with the teacher by phase: python phase.py LABELS.npz PLAIN.pt NEIGHBOURS.pt"""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, torch
from conquian_env.model_layouts import FEATURE_SETS
from conquian_train.learner import Network, ILLEGAL_LOGIT
from nbhead import nb_network
torch.set_num_threads(1)
z = np.load(sys.argv[1]); X, M, A = z["x"], z["m"], z["a"]
hold = len(A) // 20
X, M, A = X[:hold], M[:hold], A[:hold]
kind = np.where(A < 40, "meld", np.where(A < 80, "discard", np.where(A == 80, "take", np.where(A == 81, "refuse", "other"))))
# the phase by the mask: discard phase when any discard legal
disc_phase = M[:, 40:80].any(1)
offer_phase = M[:, 80] | M[:, 81]
for name, path in (("plain", sys.argv[2]), ("nb", sys.argv[3])):
    F = "potential"
    net = (nb_network if name == "nb" else (lambda h, s, inputs, features: Network(h, s, inputs=inputs, head="cards", features=features)))((128, 128), False, FEATURE_SETS[F].size, F)
    net.load_state_dict(torch.load(path))
    with torch.no_grad():
        lg = net(torch.from_numpy(X).float())[0].masked_fill(~torch.from_numpy(M), ILLEGAL_LOGIT)
    ok = (lg.argmax(1).numpy() == A)
    print(name, "all %.3f" % ok.mean(), "discard phase %.3f (n=%d)" % (ok[disc_phase].mean(), disc_phase.sum()),
          "offer phase %.3f (n=%d)" % (ok[offer_phase].mean(), offer_phase.sum()),
          "other %.3f (n=%d)" % (ok[~disc_phase & ~offer_phase].mean(), (~disc_phase & ~offer_phase).sum()))
