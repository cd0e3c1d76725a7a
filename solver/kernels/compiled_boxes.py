"""Numba-compiled mirror of collision/boxes.py (that module's docstring gives the boxes): the
particles' boxes over a step or a round, the groups' and the watched particles' boxes, and the
rounds' stray test. The same operations in the same order as the NumPy kernels, no fastmath:
the same bits. Each particle writes its own rows only, so the parallel loop's result does not
depend on the thread count.
"""

import numpy as np
from numba import njit, prange

from .compiled_options import prange_only


@njit(cache=True, inline="always")
def _box(x, i, p0, p1, p2, v0, v1, v2, r, slack, grow_dt, lo, hi, reach):
    """Particle i's box and reach, from its prediction p and velocity v (step_boxes)."""
    speed = np.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    margin = slack + grow_dt * speed
    g = r + margin
    x0 = x[i, 0]
    x1 = x[i, 1]
    x2 = x[i, 2]
    d0 = p0 - x0
    d1 = p1 - x1
    d2 = p2 - x2
    reach[i] = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) + margin
    lo[i, 0] = (x0 if x0 <= p0 else p0) - g
    lo[i, 1] = (x1 if x1 <= p1 else p1) - g
    lo[i, 2] = (x2 if x2 <= p2 else p2) - g
    hi[i, 0] = (x0 if x0 >= p0 else p0) + g
    hi[i, 1] = (x1 if x1 >= p1 else p1) + g
    hi[i, 2] = (x2 if x2 >= p2 else p2) + g


@njit(cache=True, parallel=prange_only())
def step_boxes(x, xp, h, dt, acc, pinned, pin_target, radius, slack, grow, by_group,
               group_start, watched):
    """collision/boxes.step_boxes. A pinned particle's box is made again from its target after
    the loop (the NumPy kernel sets its prediction to the target first: the same values)."""
    n = x.shape[0]
    lo = np.empty((n, 3))
    hi = np.empty((n, 3))
    reach = np.empty(n)
    half_dt2 = 0.5 * dt * dt
    grow_dt = grow * dt
    for i in prange(n):
        v0 = (x[i, 0] - xp[i, 0]) / h
        v1 = (x[i, 1] - xp[i, 1]) / h
        v2 = (x[i, 2] - xp[i, 2]) / h
        _box(x, i, x[i, 0] + v0 * dt + acc[i, 0] * half_dt2,
             x[i, 1] + v1 * dt + acc[i, 1] * half_dt2, x[i, 2] + v2 * dt + acc[i, 2] * half_dt2,
             v0, v1, v2, radius[i], slack, grow_dt, lo, hi, reach)
    for k in range(pinned.shape[0]):
        i = pinned[k]
        _box(x, i, pin_target[k, 0], pin_target[k, 1], pin_target[k, 2],
             (x[i, 0] - xp[i, 0]) / h, (x[i, 1] - xp[i, 1]) / h, (x[i, 2] - xp[i, 2]) / h,
             radius[i], slack, grow_dt, lo, hi, reach)
    G = group_start.shape[0]
    glo = np.empty((G, 3))
    ghi = np.empty((G, 3))
    for r in prange(G):
        end = by_group.shape[0] if r == G - 1 else group_start[r + 1]
        first = by_group[group_start[r]]
        for c in range(3):
            glo[r, c] = lo[first, c]
            ghi[r, c] = hi[first, c]
        for s in range(group_start[r] + 1, end):
            i = by_group[s]
            for c in range(3):
                if lo[i, c] < glo[r, c]:
                    glo[r, c] = lo[i, c]
                if hi[i, c] > ghi[r, c]:
                    ghi[r, c] = hi[i, c]
    w = watched.shape[0]
    wlo = np.empty((w, 3))
    whi = np.empty((w, 3))
    for k in range(w):
        i = watched[k]
        for c in range(3):
            wlo[k, c] = lo[i, c] + radius[i]
            whi[k, c] = hi[i, c] - radius[i]
    return lo, hi, reach, glo, ghi, wlo, whi


@njit(cache=True)
def strays(x, watched, wlo, whi, tolerance2, group, clean2, n_groups):
    """collision/boxes.strays."""
    out_groups = np.zeros(n_groups, np.bool_)
    largest = 0.0
    for k in range(watched.shape[0]):
        i = watched[k]
        o0 = max(wlo[k, 0] - x[i, 0], 0.0) + max(x[i, 0] - whi[k, 0], 0.0)
        o1 = max(wlo[k, 1] - x[i, 1], 0.0) + max(x[i, 1] - whi[k, 1], 0.0)
        o2 = max(wlo[k, 2] - x[i, 2], 0.0) + max(x[i, 2] - whi[k, 2], 0.0)
        ratio2 = (o0 * o0 + o1 * o1 + o2 * o2) / tolerance2[k]
        if ratio2 > clean2:
            out_groups[group[i]] = True
        if k == 0 or ratio2 > largest:
            largest = ratio2
    return np.sqrt(largest), out_groups
