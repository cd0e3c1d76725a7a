"""Numba-compiled build-time kernels: greedy graph colouring (coloring.py).

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
