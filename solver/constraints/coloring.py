"""Graph colouring of constraints, computed once at build time.

Gauss-Seidel relaxation (Jakobsen's loop over sticks) is inherently sequential. Splitting the
constraints into colours such that no two constraints of one colour share a particle makes each
colour a set of independent projections, so ``x[i] += d`` over a whole colour is exact and the
solve is vectorised per colour ("graph-coloured Gauss-Seidel", e.g. Fratarcangeli, Tibaldo and
Pellacini, "Vivace: a practical Gauss-Seidel method for stable soft body dynamics", SIGGRAPH Asia
2016). The order of colours is fixed, so results are deterministic.
"""

import numpy as np


def greedy_colors(members, n_particles):
    """Colour constraints so that no two of one colour share a particle.

    members: (m, k) int64 particle ids of each constraint (k particles per constraint), or a
             list of m int sequences for constraints of varying size.
    Returns (m,) int64 colour per constraint, colours numbered 0..c-1 densely.

    Greedy first-fit in constraint order with a per-particle bit mask of colours in use. This runs
    once per build; it is a Python loop, but not on any per-step path.
    """
    rows = [list(map(int, r)) for r in members] if not isinstance(members, np.ndarray) \
        else members.tolist()
    used = [0] * int(n_particles)          # bit c set: colour c already touches this particle
    colors = np.empty(len(rows), dtype=np.int64)
    for k, row in enumerate(rows):
        mask = 0
        for p in row:
            mask |= used[p]
        c = (~mask & (mask + 1)).bit_length() - 1   # lowest clear bit
        bit = 1 << c
        for p in row:
            used[p] |= bit
        colors[k] = c
    return colors


def color_order(colors):
    """Order and offsets that group constraints by colour.

    colors: (m,) int64 colour per constraint.
    Returns (order (m,) int64 permutation sorting by colour with a stable tie break,
             offsets (c+1,) int64 so colour c is order[offsets[c]:offsets[c+1]]).
    """
    order = np.argsort(colors, kind="stable")
    n_colors = int(colors.max()) + 1 if colors.size else 0
    offsets = np.searchsorted(colors[order], np.arange(n_colors + 1))
    return order.astype(np.int64), offsets.astype(np.int64)
