"""Volume preservation of a closed surface (the "blob" of the CS 426 slides; as a position
constraint after Mueller et al., "Position Based Dynamics", 2007, with XPBD compliance).

    C(x) = (1/6) sum_t (x_a x x_b) . x_c  -  pressure * V_rest

with gradient dC/dx_a = (1/6) sum over triangles t containing a of (x_b x x_c) (cyclic), and
dlambda = (-C - alpha~ lambda) / (sum_i w_i |grad_i C|^2 + alpha~), x_i += w_i grad_i C dlambda.
A pressure above 1 inflates the rest volume (a balloon). One constraint touches every particle
of its surface, so volumes are solved one after another (a loop over bodies, not particles).

Every sum runs in a fixed order, one term after another (np.cumsum and np.bincount add
sequentially), and the compiled kernels.compiled.solve_volumes performs the same operations, so
the two backends agree bit for bit.
"""

import numpy as np


class VolumeSolver:
    """Per-volume particle lists and solve arrays, allocated once (V = volumes, P = their
    particles, T = their triangles); the substep loop (loop.py) solves them with solve_volumes."""

    def __init__(self, model):
        w = model.particle_inv_mass
        pids, tris, pid_start, tri_start = [], [], [0], [0]
        for k in range(len(model.volume_rest)):
            t = model.volume_tris[model.volume_tri_start[k]:model.volume_tri_start[k + 1]]
            pid, local = np.unique(t, return_inverse=True)
            pids.append(pid)
            tris.append(local.reshape(-1, 3))
            pid_start.append(pid_start[-1] + len(pid))
            tri_start.append(tri_start[-1] + len(t))
        self.particles = np.concatenate(pids) if pids else np.zeros(0, np.int64)  # (P,) int64
        self.particle_start = np.array(pid_start, np.int64)   # (V + 1,) particles of volume k
        # (T, 3) int64 corners as indices into the volume's own particles (0-based per volume)
        self.tris = np.concatenate(tris) if tris else np.zeros((0, 3), np.int64)
        self.tri_start = np.array(tri_start, np.int64)        # (V + 1,) triangles of volume k
        self.w = w[self.particles]                            # (P,) float64 [1/kg]
        # the target volumes are the Control's (kernel_args), as they may change between steps
        self.compliance = np.asarray(model.volume_compliance, np.float64)   # (V,)
        self.count = len(model.volume_rest)
        self.alpha = np.zeros(self.count)                     # (V,) alpha / h^2
        self.lam = np.zeros(self.count)                       # (V,) accumulated lambda
        self._h = None

    def begin_step(self, h):
        """Recompute alpha~ = alpha / h^2 when the substep length h [s] changes."""
        if h != self._h:
            self.alpha[:] = self.compliance / (h * h)
            self._h = h

    def kernel_args(self, rest):
        """The volumes group of loop.run_substeps' arguments; rest (V,) [m^3] this step's target
        volumes (the Control's: Simulation.set_volume_pressure changes them between steps)."""
        return (self.particles, self.particle_start, self.tris, self.tri_start, self.w,
                rest, self.alpha, self.lam)


def solve_volumes(X, particles, particle_start, tris, tri_start, w, rest, alpha, lam):
    """The NumPy kernel: volumes one after another, in place on X (3, n) [m]. particles (P,)
    int64 and particle_start (V + 1,): each volume's particles; tris (T, 3) int64 corners as
    indices into its own particles, tri_start (V + 1,); w (P,) [1/kg]; rest (V,) [m^3];
    alpha (V,) alpha / h^2; lam (V,) accumulated lambda."""
    x = X.T
    for k in range(len(rest)):
        pid = particles[particle_start[k]:particle_start[k + 1]]
        tri = tris[tri_start[k]:tri_start[k + 1]]
        wk = w[particle_start[k]:particle_start[k + 1]]
        xs = x[pid]
        a, b, c = xs[tri[:, 0]], xs[tri[:, 1]], xs[tri[:, 2]]
        ab = _cross(a, b)
        vol = np.cumsum(ab[0] * c[:, 0] + ab[1] * c[:, 1] + ab[2] * c[:, 2])[-1] / 6.0
        # dC/dx of each corner: (b x c) at a, (c x a) at b, (a x b) at c, summed per
        # particle in the order corner a of every triangle, then b, then c
        corner = tri.T.ravel()
        bc, ca = _cross(b, c), _cross(c, a)
        grad = [np.bincount(corner, weights=np.concatenate([bc[i], ca[i], ab[i]]),
                            minlength=len(pid)) / 6.0 for i in range(3)]
        al = alpha[k]
        g2 = grad[0] * grad[0] + grad[1] * grad[1] + grad[2] * grad[2]
        denom = np.cumsum(wk * g2)[-1] + al
        if not denom > 1e-300:
            continue
        dlam = (rest[k] - vol - al * lam[k]) / denom
        lam[k] = lam[k] + dlam
        wd = wk * dlam
        for i in range(3):
            X[i, pid] = xs[:, i] + wd * grad[i]


def _cross(a, b):
    """Rows of (t, 3) arrays crossed, as three (t,) columns."""
    return (a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
            a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
