"""Numba-compiled stick sweep: the mirror of constraints/sticks.solve_sticks (that module's
docstring gives the constraint, C(x) = |x_i - x_j| - rest_length, and its XPBD projection), over
constraints/partition.py's groups, tasks and ranges. The same arithmetic in an order that gives
the same bits: the sticks of a range share no particle, so relaxing them one after the other,
or all their lengths first and then all their corrections (_relax_range), is the same.
Importing this module requires Numba; compiled.py re-exports solve_sticks.
"""

import numpy as np
from numba import njit, prange

from .compiled_options import prange_only

_EPS = 1e-12       # constraints/sticks._EPS


@njit(cache=True, fastmath=False, inline="always")
def _relax_stick(px, py, pz, si, sj, rest, inv_mass, alpha, inv_denom, lam, kind, k, omega,
                 one_sided, read_lam, write_lam):
    """Stick k's XPBD projection (constraints/sticks.solve_sticks, one item of it). kind: 0 equal,
    1 min (lambda >= 0), 2 max (lambda <= 0). read_lam False: lambda is zero (the substep's first
    sweep); write_lam False: lambda is not needed after this sweep. Either way the arithmetic is
    the NumPy kernel's: alpha * 0 and x - 0 change no bits."""
    i = si[k]
    j = sj[k]
    dx = px[i] - px[j]
    dy = py[i] - py[j]
    dz = pz[i] - pz[j]
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    wi = inv_mass[i]
    wj = inv_mass[j]
    al = alpha[k]
    lam_k = lam[k] if read_lam else 0.0
    if read_lam:
        dlam = (rest[k] - length - al * lam_k) * inv_denom[k]
    else:
        dlam = (rest[k] - length) * inv_denom[k]
    if omega != 1.0:
        dlam *= omega
    if one_sided:
        new = lam_k + dlam
        kd = kind[k]
        if kd == 1:
            new = min(max(new, 0.0), np.inf)
        elif kd == 2:
            new = min(max(new, -np.inf), 0.0)
        dlam = new - lam_k
        if write_lam:
            lam[k] = new
    elif write_lam:
        lam[k] = lam_k + dlam
    dlam /= max(length, _EPS)
    s_i = wi * dlam
    s_j = wj * dlam
    px[i] += dx * s_i
    py[i] += dy * s_i
    pz[i] += dz * s_i
    px[j] -= dx * s_j
    py[j] -= dy * s_j
    pz[j] -= dz * s_j


@njit(cache=True, fastmath=False, inline="always")
def _relax_range(px, py, pz, si, sj, rest, inv_mass, inv_denom, lo, hi, dx, dy, dz, f):
    """_relax_stick for sticks lo to hi - 1, one range (one colour of a block: no two share a
    particle), equal sticks, lambda neither read nor kept (a substep's one sweep), in three
    loops: the differences gathered into dx, dy, dz (at least hi - lo long, f too), every
    stick's correction per unit length (a loop over contiguous arrays the compiler vectorises:
    the square roots and divisions, the sweep's costliest operations, two at a time), then the
    corrections scattered. As the sticks share no particle, that is the arithmetic of one
    stick after the other (the NumPy kernel's) to the bit."""
    m = hi - lo
    a = si[lo:hi]
    b = sj[lo:hi]
    for q in range(m):
        i = a[q]
        j = b[q]
        dx[q] = px[i] - px[j]
        dy[q] = py[i] - py[j]
        dz[q] = pz[i] - pz[j]
    re = rest[lo:hi]
    de = inv_denom[lo:hi]
    for q in range(m):
        length = np.sqrt(dx[q] * dx[q] + dy[q] * dy[q] + dz[q] * dz[q])
        f[q] = (re[q] - length) * de[q] / max(length, _EPS)
    for q in range(m):
        i = a[q]
        j = b[q]
        s_i = inv_mass[i] * f[q]
        s_j = inv_mass[j] * f[q]
        px[i] += dx[q] * s_i
        py[i] += dy[q] * s_i
        pz[i] += dz[q] * s_i
        px[j] -= dx[q] * s_j
        py[j] -= dy[q] * s_j
        pz[j] -= dz[q] * s_j


@njit(cache=True, parallel=prange_only(), fastmath=False)
def solve_sticks(X, si, sj, rest, inv_mass, alpha, inv_denom, lam, kind, batch_offsets,
                 group_task_start, task_range_start, range_lo, range_hi, omega, one_sided,
                 read_lam, write_lam):
    """One Gauss-Seidel sweep of XPBD sticks over the partition (constraints/partition.py):
    groups one after another, the tasks (blocks) of a group in parallel, each task's stick
    ranges in order on one thread. One wait per group, not per colour. batch_offsets is the
    NumPy kernel's (unused here: the tasks' ranges cover the same sticks in an order that gives
    the same bits). A sweep of equal sticks that neither reads nor keeps lambda (one iteration
    a substep, the default) goes range by range (_relax_range, in four arrays of each task's
    own, as long as the longest range): the drape's 97,000 sticks at N = 128, 287 to 241 us a
    sweep on two threads (2026-11-29, late; the same in chunks of 64 to 256 sticks, or in
    slices of one scratch array, 258 to 273); others stick by stick (_relax_stick)."""
    px = X[0]
    py = X[1]
    pz = X[2]
    if not (read_lam or write_lam or one_sided or omega != 1.0):
        width = 0
        for r in range(range_lo.shape[0]):
            width = max(width, range_hi[r] - range_lo[r])
        for g in range(group_task_start.shape[0] - 1):
            for t in prange(group_task_start[g], group_task_start[g + 1]):
                dx = np.empty(width)
                dy = np.empty(width)
                dz = np.empty(width)
                f = np.empty(width)
                for r in range(task_range_start[t], task_range_start[t + 1]):
                    _relax_range(px, py, pz, si, sj, rest, inv_mass, inv_denom, range_lo[r],
                                 range_hi[r], dx, dy, dz, f)
        return
    for g in range(group_task_start.shape[0] - 1):
        for t in prange(group_task_start[g], group_task_start[g + 1]):
            for r in range(task_range_start[t], task_range_start[t + 1]):
                for k in range(range_lo[r], range_hi[r]):
                    _relax_stick(px, py, pz, si, sj, rest, inv_mass, alpha, inv_denom, lam,
                                 kind, k, omega, one_sided, read_lam, write_lam)
