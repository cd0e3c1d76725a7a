"""Numba-compiled graph kernels: greedy graph colouring (coloring.py, at build time) and the
connected components of a graph (sleep.islands: the islands that this step's body contacts
join, twice per step in a scene with contacts).

The colouring runs once per build, but every playback reset rebuilds the Model, and at 100k
vertices the Python loop took most of a second. This kernel runs the Python fallback's
algorithm step for step (first fit in constraint order, lowest free colour), so both give the
same colours and therefore bit-identical Models. It is serial on purpose: first-fit in a fixed
order is inherently sequential, and its order is what makes the colouring (and the simulation)
deterministic. Importing this module requires Numba; backend.py imports it lazily.
"""

import numpy as np
from numba import njit

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@njit(cache=True, fastmath=False)
def greedy_colors_csr(members, start, n_particles, words):
    """First-fit colouring of constraints given as a flat member list.

    members (s,) int64 particle ids of all constraints in order; start (m + 1,) int64 so that
    constraint k is members[start[k]:start[k + 1]]; words: how many 64-bit words of colour bits
    each particle needs (coloring.colour_words: enough for every colour first-fit can reach).
    Returns (m,) int64 colour per constraint."""
    m = start.shape[0] - 1
    # bit b of used[p, w]: colour 64 w + b already touches particle p (uint64 throughout:
    # mixing in int64 would make Numba promote to float64)
    used = np.zeros((n_particles, words), np.uint64)
    colors = np.empty(m, np.int64)
    for k in range(m):
        lo = start[k]
        hi = start[k + 1]
        colour = -1
        for w in range(words):
            mask = _ZERO
            for j in range(lo, hi):
                mask |= used[members[j], w]
            if mask != _ALL:
                free = ~mask & (mask + _ONE)          # the lowest clear bit alone
                b = 0
                while free > _ONE:
                    free >>= _ONE
                    b += 1
                colour = 64 * w + b
                bit = _ONE << np.uint64(b)
                for j in range(lo, hi):
                    used[members[j], w] |= bit
                break
        colors[k] = colour
    return colors


@njit(cache=True, fastmath=False)
def islands(n, edges):
    """Mirror of sleep.islands: (n,) int64 island of each of n particles, numbered 0..I-1 in
    order of their smallest particle, for edges (k, 2) int64. Union-find (each root the
    smallest id of its set, paths halved), then one pass numbering the roots as they first
    appear: the same numbering as the NumPy reference, whose labels are each component's
    smallest particle."""
    parent = np.arange(n)
    for e in range(edges.shape[0]):
        a = edges[e, 0]
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        b = edges[e, 1]
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    label = np.full(n, -1, np.int64)
    out = np.empty(n, np.int64)
    count = 0
    for i in range(n):
        r = i
        while parent[r] != r:
            r = parent[r]
        if label[r] < 0:
            label[r] = count
            count += 1
        out[i] = label[r]
    return out
