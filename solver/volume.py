"""Volume preservation of a closed surface (the "blob" of the CS 426 slides; as a position
constraint after Mueller et al., "Position Based Dynamics", 2007, with XPBD compliance).

    C(x) = (1/6) sum_t (x_a x x_b) . x_c  -  pressure * V_rest

with gradient dC/dx_a = (1/6) sum over triangles t containing a of (x_b x x_c) (cyclic), and
dlambda = (-C - alpha~ lambda) / (sum_i w_i |grad_i C|^2 + alpha~), x_i += w_i grad_i C dlambda.
A pressure above 1 inflates the rest volume (a balloon). One constraint touches every particle
of its surface, so volumes are solved one after another (a loop over bodies, not particles).
"""

import numpy as np


class VolumeSolver:
    def __init__(self, model):
        w = model.particle_inv_mass
        self.items = []
        for k in range(len(model.volume_rest)):
            tris = model.volume_tris[model.volume_tri_start[k]:model.volume_tri_start[k + 1]]
            pid, local = np.unique(tris, return_inverse=True)
            self.items.append((pid, local.reshape(-1, 3), w[pid], float(model.volume_rest[k]),
                               float(model.volume_compliance[k])))
        self.lam = np.zeros(len(self.items))
        self._h = 1.0

    def begin_substep(self, h):
        self._h = h
        self.lam.fill(0.0)

    def solve(self, x):
        for k, (pid, tris, w, rest, compliance) in enumerate(self.items):
            xs = x[pid]
            a, b, c = xs[tris[:, 0]], xs[tris[:, 1]], xs[tris[:, 2]]
            vol = np.einsum("ij,ij->i", np.cross(a, b), c).sum() / 6.0
            grad = np.zeros_like(xs)
            for col, g in ((0, np.cross(b, c)), (1, np.cross(c, a)), (2, np.cross(a, b))):
                for d in range(3):
                    grad[:, d] += np.bincount(tris[:, col], weights=g[:, d], minlength=len(pid))
            grad /= 6.0
            alpha = compliance / (self._h * self._h)
            denom = float(np.einsum("i,ij,ij->", w, grad, grad)) + alpha
            if denom <= 1e-300:
                continue
            dlam = (rest - vol - alpha * self.lam[k]) / denom
            self.lam[k] += dlam
            x[pid] = xs + (w * dlam)[:, None] * grad
