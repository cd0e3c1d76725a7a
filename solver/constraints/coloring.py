"""Graph colouring of constraints, computed once at build time.

Gauss-Seidel relaxation (Jakobsen's loop over sticks) is inherently sequential. Splitting the
constraints into colours such that no two constraints of one colour share a particle makes each
colour a set of independent projections, so ``x[i] += d`` over a whole colour is exact and the
solve is vectorised per colour ("graph-coloured Gauss-Seidel", e.g. Fratarcangeli, Tibaldo and
Pellacini, "Vivace: a practical Gauss-Seidel method for stable soft body dynamics", SIGGRAPH Asia
2016). The order of colours is fixed, so results are deterministic.

The colouring is first fit in constraint order. It is compiled (kernels/build.py) when the
compiled backend is selected (backend.py) and a Python loop otherwise; both run the same
algorithm, so a Model is bit-identical whichever built it. First fit in a fixed order is
inherently sequential (each constraint's colour depends on every earlier neighbour's), so the
fallback vectorises what surrounds the loop and keeps the loop itself lean.
"""

import numpy as np

from .. import backend as _backend


def as_csr(members):
    """Constraints as a flat member list.

    members: (m, k) int particle ids (k per constraint), or a list of m int sequences.
    Returns (flat (s,) int64 particle ids in constraint order, start (m + 1,) int64 offsets:
    constraint j is flat[start[j]:start[j + 1]])."""
    if isinstance(members, np.ndarray) and members.ndim == 2:
        m, k = members.shape
        return (np.ascontiguousarray(members, dtype=np.int64).ravel(),
                np.arange(0, m * k + 1, k, dtype=np.int64) if k else np.zeros(m + 1, np.int64))
    rows = [np.asarray(r, dtype=np.int64).ravel() for r in members]
    sizes = np.array([r.size for r in rows], dtype=np.int64)
    flat = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    return flat, np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


def colour_words(flat, start, n_particles):
    """64-bit words per particle enough for any colour first fit can give: a constraint's colour
    is at most its count of earlier neighbours, at most the sum over its particles of
    (constraints on that particle - 1)."""
    if start.size < 2 or flat.size == 0:
        return 1
    degree = np.bincount(flat, minlength=int(n_particles))
    per_member = degree[flat] - 1
    sizes = np.diff(start)
    sums = np.add.reduceat(per_member, start[:-1][sizes > 0]) if per_member.size else per_member
    return int(sums.max(initial=0)) // 64 + 1


def greedy_colors(members, n_particles, backend=None):
    """Colour constraints so that no two of one colour share a particle.

    members: (m, k) int64 particle ids of each constraint (k particles per constraint), or a
             list of m int sequences for constraints of varying size.
    backend: None (backend.choose(): VERLET_BACKEND, else compiled when Numba loads), "numpy"
             (the Python loop) or "numba"; all give the same colours.
    Returns (m,) int64 colour per constraint, colours numbered 0..c-1 densely.

    First fit in constraint order: each constraint takes the lowest colour none of its
    particles has yet (a per-particle bit mask of colours in use).
    """
    flat, start = as_csr(members)
    n_particles = int(n_particles)
    if start.size < 2:
        return np.zeros(0, np.int64)
    kernels = _backend.build_kernels(backend)
    if kernels is None:
        return _greedy_python(flat, start, n_particles)
    words = colour_words(flat, start, n_particles)
    colors = kernels.greedy_colors_csr(flat, start, n_particles, words)
    if colors.size and colors.min() < 0:       # colour_words is a proven bound; never expected
        raise RuntimeError("greedy_colors: colour bound exceeded (colour_words is wrong)")
    return colors


def _greedy_python(flat, start, n_particles):
    """The reference loop (Python ints are unbounded bit masks, so no colour limit)."""
    used = [0] * n_particles              # bit c set: colour c already touches this particle
    out = []
    append = out.append
    ids = flat.tolist()
    sizes = np.diff(start)
    if sizes.size and np.all(sizes == 2):  # sticks: unrolled, the common case
        for a, b in zip(ids[0::2], ids[1::2]):
            mask = used[a] | used[b]
            bit = ~mask & (mask + 1)          # the lowest clear bit alone
            used[a] |= bit
            used[b] |= bit
            append(bit)
    else:
        bounds = start.tolist()
        for k in range(len(bounds) - 1):
            row = ids[bounds[k]:bounds[k + 1]]
            mask = 0
            for p in row:
                mask |= used[p]
            bit = ~mask & (mask + 1)
            for p in row:
                used[p] |= bit
            append(bit)
    return np.array([bit.bit_length() - 1 for bit in out], dtype=np.int64)


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
