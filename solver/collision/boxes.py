"""The particles' boxes over a step or a round, and the rounds' stray test: the first and the
last array work of the collide stage of contact between bodies (body_stage.py), two kernels of
the kernel table (compiled in kernels/compiled_boxes.py, the same operations in the same order).

A particle's box is its predicted sweep (Bridson, Fedkiw and Anderson 2002 find a step's pairs
from the same kind of box): from x to its prediction p = x + v dt + a dt^2 / 2 (a pinned
particle: its target), v = (x - x*) / h, grown by its radius and by a margin for what the
prediction misses, SLACK + grow |v| dt:

    lo = min(x, p) - (r + margin),   hi = max(x, p) + (r + margin)
    reach = |p - x| + margin        how far from x it may get over dt

step_boxes also gives the union of each group's boxes (the groups' sweep and prune reads
them) and the watched particles' centre boxes (the boxes less their radii), which strays reads
after a round: how far each watched particle ended outside its centre box, in its tolerance.

Why kernels: a round's collide of the demo's flag computed these over every particle of the
scene in about fifteen NumPy operations, 0.29 ms a collide and 0.12 ms a stray test, about
ten of each a frame (measured 2026-11-30: about 4 ms of the demo's 60 to 70 a frame; 0.06 and
0.015 ms compiled). Every dot product is written out by components, left to right (einsum
adds in an order of its own), so the compiled mirror computes the same bits.
"""

import numpy as np


def step_boxes(x, xp, h, dt, acc, pinned, pin_target, radius, slack, grow, by_group,
               group_start, watched):
    """The particles' boxes over dt [s] (module docstring). x, xp (n, 3) [m] positions now and a
    substep ago, h [s] the substep, acc (n, 3) [m/s^2], pinned (p,) int64 and pin_target (p, 3)
    [m], radius (n,) [m], slack [m] and grow the margin's terms; by_group (n,) int64 the
    particles by group and group_start (g,) int64 where each group's run starts in it (g runs,
    none empty); watched (w,) int64. Returns lo, hi (n, 3) [m], reach (n,) [m], the runs'
    boxes glo, ghi (g, 3) [m] (the union of their particles' boxes) and the watched centre
    boxes wlo, whi (w, 3) [m] (lo + r, hi - r)."""
    v = (x - xp) / h
    p = x + v * dt + acc * (0.5 * dt * dt)
    if len(pinned):
        p[pinned] = pin_target
    speed = np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
    margin = slack + grow * dt * speed
    g = (radius + margin)[:, None]
    d = p - x
    reach = np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) + margin
    lo = np.minimum(x, p) - g
    hi = np.maximum(x, p) + g
    if len(group_start):
        glo = np.minimum.reduceat(lo[by_group], group_start, axis=0)
        ghi = np.maximum.reduceat(hi[by_group], group_start, axis=0)
    else:
        glo = ghi = np.zeros((0, 3))
    rw = radius[watched, None]
    return lo, hi, reach, glo, ghi, lo[watched] + rw, hi[watched] - rw


def strays(x, watched, wlo, whi, tolerance2, group, clean2, n_groups):
    """How far the watched particles (w,) int64 ended outside their centre boxes wlo, whi (w, 3)
    [m] at x (n, 3) [m], in their tolerances (tolerance2 (w,) [m^2] their squares): (the
    largest ratio, 0 when every one is inside; (n_groups,) bool the groups, by group (n,)
    int64, with one whose squared ratio exceeds clean2)."""
    xw = x[watched]
    out = np.maximum(wlo - xw, 0.0) + np.maximum(xw - whi, 0.0)          # (w, 3) [m]
    ratio2 = (out[:, 0] * out[:, 0] + out[:, 1] * out[:, 1] + out[:, 2] * out[:, 2]) \
        / tolerance2
    out_groups = np.zeros(n_groups, bool)
    out_groups[group[watched[ratio2 > clean2]]] = True
    return (float(np.sqrt(np.max(ratio2))) if len(ratio2) else 0.0), out_groups
