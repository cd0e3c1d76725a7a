"""Numba-compiled kernels: the same arithmetic as the NumPy kernels, compiled.

Each function mirrors a NumPy kernel operation for operation (same formulas, same order, no
fastmath, no FMA contraction), so the two backends agree bit for bit. Loops marked prange run in
parallel only over items that touch disjoint particles (the members of one colour, or one
particle each), so the result does not depend on the thread count or schedule.
Importing this module requires Numba; backend.py imports it lazily.
"""

import numpy as np
from numba import njit, prange

_EPS = 1e-12


@njit(cache=True, parallel=True, fastmath=False)
def predict(X, Xp, a_h2, keep, lim):
    """Verlet prediction (simulation.py, step 1) on (3, n) rows; lim (n,) speed*h or empty."""
    n = X.shape[1]
    clamp = lim.shape[0] > 0
    for p in prange(n):
        dx = X[0, p] - Xp[0, p]
        dy = X[1, p] - Xp[1, p]
        dz = X[2, p] - Xp[2, p]
        Xp[0, p] = X[0, p]
        Xp[1, p] = X[1, p]
        Xp[2, p] = X[2, p]
        if keep != 1.0:
            dx *= keep
            dy *= keep
            dz *= keep
        dx += a_h2[0, p]
        dy += a_h2[1, p]
        dz += a_h2[2, p]
        if clamp:
            length = np.sqrt(dx * dx + dy * dy + dz * dz)
            f = min(1.0, lim[p] / max(length, 1e-300))
            dx *= f
            dy *= f
            dz *= f
        X[0, p] += dx
        X[1, p] += dy
        X[2, p] += dz


@njit(cache=True, parallel=True, fastmath=False)
def solve_sticks(X, si, sj, rest, wi, wj, alpha, denom, lam, lo, hi, offsets, omega, one_sided):
    """One Gauss-Seidel sweep of XPBD sticks, colour after colour (sticks.py)."""
    px = X[0]
    py = X[1]
    pz = X[2]
    for c in range(offsets.shape[0] - 1):
        for k in prange(offsets[c], offsets[c + 1]):
            i = si[k]
            j = sj[k]
            dx = px[i] - px[j]
            dy = py[i] - py[j]
            dz = pz[i] - pz[j]
            length = np.sqrt(dx * dx + dy * dy + dz * dz)
            lam_k = lam[k]
            dlam = (rest[k] - length - alpha[k] * lam_k) / denom[k]
            if omega != 1.0:
                dlam *= omega
            if one_sided:
                new = min(max(lam_k + dlam, lo[k]), hi[k])
                dlam = new - lam_k
                lam[k] = new
            else:
                lam[k] = lam_k + dlam
            dlam /= max(length, _EPS)
            s_i = wi[k] * dlam
            s_j = wj[k] * dlam
            px[i] += dx * s_i
            py[i] += dy * s_i
            pz[i] += dz * s_i
            px[j] -= dx * s_j
            py[j] -= dy * s_j
            pz[j] -= dz * s_j
