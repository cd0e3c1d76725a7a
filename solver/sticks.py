"""Stick (distance) constraints with XPBD compliance, solved colour by colour.

    C(x) = |x_i - x_j| - rest_length

kind "equal" keeps C = 0; "min" only acts when C < 0 (pushes apart: angle limits, collision
sticks); "max" only when C > 0 (pulls: ropes that go slack). The seed is Jakobsen's stick
relaxation (mass weighted: x_i += w_i / (w_i + w_j) * ..., w = 1/m, 0 = pinned). Stiffness comes
from XPBD (Macklin, Mueller and Chentanez, "XPBD: Position-Based Simulation of Compliant
Constrained Dynamics", MIG 2016): with compliance alpha [m/N] and substep h,

    dlambda = (-C - alpha/h^2 * lambda) / (w_i + w_j + alpha/h^2),   x_i += w_i n dlambda,
    x_j -= w_j n dlambda,  n = (x_i - x_j) / |x_i - x_j|,

so a given compliance means the same stiffness at any substep or iteration count; lambda starts
at zero every substep (the compiled kernel does not store it when one sweep per substep is all
that reads it, so ``lam`` is only meaningful between the sweeps of one substep). The inequality kinds clamp the accumulated lambda (>= 0 for "min", <= 0 for
"max"), which is the standard way to make an XPBD constraint one-sided.
"""

import numpy as np

from .model import STICK_MAX, STICK_MIN

_EPS = 1e-12


class StickSolver:
    """Precomputed per-colour arrays for the stick solve (all allocated once)."""

    def __init__(self, model):
        p = model.stick_particles
        w = model.particle_inv_mass
        kind = model.stick_kind
        self.offsets = model.stick_color_offsets              # (c + 1,) int64
        self.i = np.ascontiguousarray(p[:, 0])                # (m,) int64
        self.j = np.ascontiguousarray(p[:, 1])                # (m,) int64
        self.rest = model.stick_rest_length                   # (m,) float64 [m]
        self.compliance = model.stick_compliance              # (m,) float64 [m/N]
        self.wi = w[self.i]                                   # (m,) float64 [1/kg]
        self.wj = w[self.j]
        self.wsum = self.wi + self.wj
        self.lam_lo = np.where(kind == STICK_MIN, 0.0, -np.inf)  # (m,) clamp of lambda
        self.lam_hi = np.where(kind == STICK_MAX, 0.0, np.inf)
        self.one_sided = bool(np.any(kind != 0))
        # the compiled kernel streams every stick's data once per sweep, so it reads compact
        # copies (int32 ids, an int8 kind, inverse masses gathered per particle): 25 bytes a
        # stick instead of 80 keeps a 100k-stick cloth's sweep within the caches
        n = len(w)
        idx_type = np.int32 if n < 2**31 else np.int64
        self.i_compact = self.i.astype(idx_type)              # (m,) int32
        self.j_compact = self.j.astype(idx_type)              # (m,) int32
        self.kind = np.asarray(kind, np.int8)                 # (m,) int8 STICK_EQUAL/MIN/MAX
        self.inv_mass = w                                     # (n,) float64 [1/kg]
        self.lam = np.zeros(len(self.rest))                   # (m,) float64 [N s^2] accumulated
        self.alpha = np.zeros(len(self.rest))                 # (m,) float64 alpha / h^2
        self.denom = self.wsum.copy()                         # (m,) w_i + w_j + alpha / h^2
        self._h = None
        # per-colour views so the loop does no slicing work per substep
        sl = [slice(int(a), int(b)) for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        self.colors = [(self.i[s], self.j[s], self.rest[s], self.wi[s], self.wj[s], s)
                       for s in sl]

    def begin_substep(self, h, kernels=None):
        """Reset lambda; recompute alpha~ when the substep length changes. The compiled
        kernel does not read lambda in a substep's first sweep (it is zero then), so with
        ``kernels`` the reset is left to that sweep."""
        if h != self._h:
            self.alpha[:] = self.compliance / (h * h)
            self.denom[:] = self.wsum + self.alpha
            self._h = h
        if kernels is None:
            self.lam.fill(0.0)

    def solve(self, X, omega=1.0, kernels=None, first=True, last=True):
        """One Gauss-Seidel sweep over all colours, in place on X (3, n) [m] (coordinate rows:
        gathering three 1-D rows is about 4x faster in NumPy than rows of an (n, 3) array).
        kernels: the compiled kernel module (backend.py), or None for NumPy. first / last: this
        is the substep's first / last sweep (the compiled kernel then skips reading lambda,
        which is zero, or writing it, which nothing reads again; the arithmetic is unchanged)."""
        if kernels is not None:
            kernels.solve_sticks(X, self.i_compact, self.j_compact, self.rest, self.inv_mass,
                                 self.alpha, self.lam, self.kind, self.offsets, float(omega),
                                 self.one_sided, not first, not last)
            return
        lam, alpha, denom = self.lam, self.alpha, self.denom
        px, py, pz = X
        for i, j, rest, wi, wj, s in self.colors:
            dx = px[i] - px[j]
            dy = py[i] - py[j]
            dz = pz[i] - pz[j]
            length = np.sqrt(dx * dx + dy * dy + dz * dz)
            lam_s = lam[s]
            dlam = (rest - length - alpha[s] * lam_s) / denom[s]
            if omega != 1.0:
                dlam *= omega
            if self.one_sided:
                new = np.clip(lam_s + dlam, self.lam_lo[s], self.lam_hi[s])
                dlam = new - lam_s
                lam[s] = new
            else:
                lam[s] = lam_s + dlam
            dlam /= np.maximum(length, _EPS)
            si = wi * dlam
            sj = wj * dlam
            px[i] += dx * si
            py[i] += dy * si
            pz[i] += dz * si
            px[j] -= dx * sj
            py[j] -= dy * sj
            pz[j] -= dz * sj

    def max_strain(self, x):
        """Largest relative length error |len - rest| / rest over all sticks (diagnostics)."""
        if not len(self.rest):
            return 0.0
        length = np.linalg.norm(x[self.i] - x[self.j], axis=1)
        return float(np.max(np.abs(length - self.rest) / self.rest))
