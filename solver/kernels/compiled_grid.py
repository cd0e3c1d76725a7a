"""The compiled broad phase's grids (kernels/compiled_broad.py's find_body_contacts builds two:
one of particles, queried by triangles and by particles with a radius, one of edges, queried
by edges).

They differ from the NumPy kernel's (collision/bodies.py, the reference, whose ``reach``,
``origin``, ``cell`` and ``dims`` the compiled kernel therefore does not use). There every
item is hashed by the cell of its box's low corner, and a query scans the cells of its box
grown downwards by the largest box of any item: in a flag's gusts that box is the fastest
corner's, three to five times the typical one, and every query paid for it. Here (_split,
_grid) an item whose box exceeds LARGE times the mean box on some axis is hashed into every
cell its box covers, the others by their low corner as there; a query grows by the largest of
the others only (_query_cells), and looks at a large item in one cell, the first both boxes
cover (_once: the larger of their first cells on each axis), so no pair is found twice. Cells
are CELL_MEANS mean boxes, or half the larger of that reach and the mean query box if more
(doubled while the large items would fill more than ENTRIES_MAX entries per item). With every
box alike it is the NumPy kernel's grid. Measured 2026-11-28, two threads, the same pairs as
before: the demo's round collides (its flag and sheet, 1,900 particles, 3,600 triangles, 5,400
edges) 6.2-6.5 to 2.6-3.2 ms a call; the self-collision benchmark's fold at rest (boxes
alike) 5.3 to 3.9-4.5.

A cell is found by one load from a map of every cell (_dense) when the grid has at most
DENSE_CELLS_PER_ENTRY cells per entry (or DENSE_CELLS_MIN), as a round's flag or a crate pile
has, else through an open-addressing hash table of the occupied cells (_table); _find takes
either. The same cells, so the same pairs in the same order. Measured 2026-11-29, two threads,
find_body_contacts on calls saved from three scenes (the map, with the lone cloth's particle
queries skipped, compiled_broad.py): a 30 x 20 flag's round collides 0.92 to 0.80 ms a call, the
self-collision benchmark's N = 64 fold 3.55 to 3.20 ms, the 100-crate pile 0.79 to 0.67 ms.

The entries are put in cell order by a counting sort over the cells where they are at most
DENSE_CELLS_PER_ENTRY per entry, else by Numba's merge sort: both stable, so the same order
(each cell's items in rising id). Measured 2026-11-30, two threads: the N = 64 fold at rest,
whose edge grid of 12,000 edges took 0.54 ms to build for 878 querying edges (0.49 of it the
merge sort), find_body_contacts 2.3 to 1.6 ms a call and its frame 18.8 to 17.9 ms, the same
bits; the demo's round collides (600 particles) 1.03 to 0.94 ms a call on two threads.
"""

import numpy as np
from numba import njit, prange

from .compiled_order import _count_sort

# an item whose box exceeds LARGE times the mean box on some axis is hashed into every cell it
# covers (_split); the cells grow while those would fill more than ENTRIES_MAX entries per item
LARGE = 2.0
ENTRIES_MAX = 8
# cells of at least CELL_MEANS mean boxes: a lookup of a cell costs more than a few pair
# tests (2026-11-28: the fold of benchmarks/self_collision.py at rest, its cells half its
# largest box, 5.3 ms a call; of 3 and 5 mean boxes, 4.1 and 4.6)
CELL_MEANS = 3.0
# a grid of at most DENSE_CELLS_PER_ENTRY cells per entry (or DENSE_CELLS_MIN) finds a cell
# by one load from a map of every cell (_dense), not by a probe of the hash table (_table)
DENSE_CELLS_PER_ENTRY = 16
DENSE_CELLS_MIN = 65536


@njit(cache=True, inline="always")
def _cell(x, origin, cell, dims, a):
    c = np.int64(np.floor((x - origin[a]) / cell[a]))
    return min(max(c, 0), dims[a] - 1)


@njit(cache=True, inline="always")
def _slot(key, size):
    """Home slot of a cell key in a table of ``size`` (a power of two) slots: Fibonacci
    hashing on the key's bits."""
    return np.int64((np.uint64(key) * np.uint64(11400714819323198485)) >> np.uint64(40)) \
        & (size - 1)


@njit(cache=True, inline="always")
def _table(ukey):
    """(H,) int64 open-addressing hash table of the occupied cells (linear probing): slot ->
    index into ukey, -1 empty; H a power of two at least twice the cells. A query then finds
    a cell in a probe or two, where a binary search over the sorted keys cost more than the
    pair tests of the whole query (its branches mispredict)."""
    size = 16
    while size < 2 * ukey.shape[0]:
        size *= 2
    table = np.full(size, -1, np.int64)
    for u in range(ukey.shape[0]):
        h = _slot(ukey[u], size)
        while table[h] >= 0:
            h = (h + 1) & (size - 1)
        table[h] = u
    return table


@njit(cache=True, inline="always")
def _dense(ukey, cells):
    """(cells,) int64 the cell -> index into ukey map of a grid small enough to hold every
    cell (_grid: DENSE_CELLS_PER_ENTRY, DENSE_CELLS_MIN), -1 where no item lies: found by one
    load, not a probe."""
    table = np.full(cells, -1, np.int64)
    for u in range(ukey.shape[0]):
        table[ukey[u]] = u
    return table


@njit(cache=True, inline="always")
def _find(key, ukey, table, dense):
    """Index of cell ``key`` in ukey, or -1 when no item lies in it: table is _dense's map
    when dense, else _table's hash."""
    if dense:
        return table[key]
    size = table.shape[0]
    h = _slot(key, size)
    while True:
        u = table[h]
        if u < 0 or ukey[u] == key:
            return u
        h = (h + 1) & (size - 1)


@njit(cache=True, inline="always")
def _cells_of(qlo, qhi, origin, cell, dims):
    """The cell ranges (i0, i1, j0, j1, k0, k1) the box [qlo, qhi] covers, per axis."""
    return (_cell(qlo[0], origin, cell, dims, 0), _cell(qhi[0], origin, cell, dims, 0),
            _cell(qlo[1], origin, cell, dims, 1), _cell(qhi[1], origin, cell, dims, 1),
            _cell(qlo[2], origin, cell, dims, 2), _cell(qhi[2], origin, cell, dims, 2))


@njit(cache=True)
def _split(ids, lo, hi, large):
    """Flag in large (n,) bool the items ids (k,) int64 whose box [lo, hi] exceeds LARGE times
    the items' mean box on some axis (hashed into every cell they cover, _grid). Returns (3,)
    [m] the largest box of the others per axis (how far a query reaches for them) and (3,)
    [m] the mean box."""
    k = ids.shape[0]
    limit = np.zeros(3)
    for s in range(k):
        for a in range(3):
            limit[a] += hi[ids[s], a] - lo[ids[s], a]
    for a in range(3):
        limit[a] /= max(k, 1)
    mean = limit.copy()
    for a in range(3):
        limit[a] *= LARGE
    reach = np.zeros(3)
    for s in range(k):
        i = ids[s]
        big = False
        for a in range(3):
            if hi[i, a] - lo[i, a] > limit[a]:
                big = True
        large[i] = big
        if not big:
            for a in range(3):
                reach[a] = max(reach[a], hi[i, a] - lo[i, a])
    return reach, mean


@njit(cache=True)
def _entries(ids, lo, hi, large, origin, cell, dims, first, cnt):
    """Each item's cells in the grid: one (its box's low corner) for a small item, every cell
    its box covers for a large one (first (n, 3) int64 gets its first cell per axis), counted
    into cnt[1:] (k + 1,) and made cumulative. Returns the total."""
    n = ids.shape[0]
    for s in prange(n):
        i = ids[s]
        if large[i]:
            i0, i1, j0, j1, k0, k1 = _cells_of(lo[i], hi[i], origin, cell, dims)
            first[i, 0] = i0
            first[i, 1] = j0
            first[i, 2] = k0
            cnt[s + 1] = (i1 - i0 + 1) * (j1 - j0 + 1) * (k1 - k0 + 1)
        else:
            cnt[s + 1] = 1
    _prefix(cnt)
    return cnt[n]


@njit(cache=True)
def _mean_box(ids, lo, hi, rows):
    """(3,) [m] the mean box of the queries ids (k,) int64: the boxes of their particles rows
    (Q, r) int64 joined."""
    box = np.zeros(3)
    for s in range(ids.shape[0]):
        q = ids[s]
        for a in range(3):
            bl = lo[rows[q, 0], a]
            bh = hi[rows[q, 0], a]
            for c in range(1, rows.shape[1]):
                bl = min(bl, lo[rows[q, c], a])
                bh = max(bh, hi[rows[q, c], a])
            box[a] += bh - bl
    for a in range(3):
        box[a] /= max(ids.shape[0], 1)
    return box


@njit(cache=True)
def _grid(ids, lo, hi, large, reach, mean, query):
    """The grid of items ids (k,) int64 with boxes [lo, hi] (large, reach and mean: _split's)
    for queries whose mean box is query (3,) [m]: its cells per axis CELL_MEANS mean boxes,
    or half the larger of the reach and the query box if more, grown (doubled) while the
    large items' cells would exceed ENTRIES_MAX times the items. Returns (origin, cell,
    dims, first, order, ukey, table, ustart, uend): the items of occupied cell ukey[u] are
    order[ustart[u]:uend[u]] (in increasing id), table _table's hash of ukey, first (n, 3)
    int64 the large items' first cells (_once)."""
    n = ids.shape[0]
    origin = np.full(3, np.inf)
    top = np.full(3, -np.inf)
    for s in range(n):
        for a in range(3):
            origin[a] = min(origin[a], lo[ids[s], a])
            top[a] = max(top[a], hi[ids[s], a])
    cell = np.empty(3)
    dims = np.ones(3, np.int64)
    for a in range(3):
        if n == 0:
            origin[a] = 0.0
            top[a] = 0.0
        cell[a] = max(max(0.5 * max(reach[a], query[a]), CELL_MEANS * mean[a]),
                      max((top[a] - origin[a]) / 2 ** 20, 1e-9))
    first = np.zeros((lo.shape[0], 3), np.int64)
    cnt = np.zeros(n + 1, np.int64)
    while True:
        for a in range(3):
            dims[a] = np.int64(np.floor((top[a] - origin[a]) / cell[a])) + 1
        total = _entries(ids, lo, hi, large, origin, cell, dims, first, cnt)
        if total <= ENTRIES_MAX * max(n, 1):
            break
        for a in range(3):
            cell[a] *= 2.0
    keys = np.empty(total, np.int64)
    item = np.empty(total, np.int64)
    for s in prange(n):
        i = ids[s]
        m = cnt[s]
        if large[i]:
            for cx in range(first[i, 0], _cell(hi[i, 0], origin, cell, dims, 0) + 1):
                for cy in range(first[i, 1], _cell(hi[i, 1], origin, cell, dims, 1) + 1):
                    for cz in range(first[i, 2], _cell(hi[i, 2], origin, cell, dims, 2) + 1):
                        keys[m] = (cx * dims[1] + cy) * dims[2] + cz
                        item[m] = i
                        m += 1
        else:
            keys[m] = (_cell(lo[i, 0], origin, cell, dims, 0) * dims[1]
                       + _cell(lo[i, 1], origin, cell, dims, 1)) * dims[2] \
                + _cell(lo[i, 2], origin, cell, dims, 2)
            item[m] = i
    cells = dims[0] * dims[1] * dims[2]
    dense = cells <= DENSE_CELLS_PER_ENTRY * total + DENSE_CELLS_MIN
    # the same stable order either way: a counting sort over the cells where they are at most
    # DENSE_CELLS_PER_ENTRY per entry (Numba's merge sort took most of the grid's time: the
    # fold's 12,000 edges 490 us against 12 for the sort; 16 cells an entry, 12,000 entries:
    # 495 against 77)
    if cells <= DENSE_CELLS_PER_ENTRY * total:
        order = _count_sort(keys, cells)
    else:
        order = np.argsort(keys, kind="mergesort")
    nu = 0
    for s in range(total):
        if s == 0 or keys[order[s]] != keys[order[s - 1]]:
            nu += 1
    ukey = np.empty(nu, np.int64)
    ustart = np.empty(nu, np.int64)
    uend = np.empty(nu, np.int64)
    u = -1
    for s in range(total):
        if s == 0 or keys[order[s]] != keys[order[s - 1]]:
            u += 1
            ukey[u] = keys[order[s]]
            ustart[u] = s
        uend[u] = s + 1
    table = _dense(ukey, cells) if dense else _table(ukey)
    return origin, cell, dims, first, item[order], ukey, table, ustart, uend, dense


@njit(cache=True, inline="always")
def _query_cells(qlo, qhi, reach, origin, cell, dims):
    """The cells a query box [qlo, qhi] scans (grown downwards by reach, where the small
    items' low corners may lie), and the first cells of the box itself (where a large item
    that meets it is looked at): (i0, i1, j0, j1, k0, k1, f0, f1, f2)."""
    return (_cell(qlo[0] - reach[0], origin, cell, dims, 0), _cell(qhi[0], origin, cell, dims, 0),
            _cell(qlo[1] - reach[1], origin, cell, dims, 1), _cell(qhi[1], origin, cell, dims, 1),
            _cell(qlo[2] - reach[2], origin, cell, dims, 2), _cell(qhi[2], origin, cell, dims, 2),
            _cell(qlo[0], origin, cell, dims, 0), _cell(qlo[1], origin, cell, dims, 1),
            _cell(qlo[2], origin, cell, dims, 2))


@njit(cache=True, inline="always")
def _once(p, cx, cy, cz, large, first, f0, f1, f2):
    """Whether item p, found in cell (cx, cy, cz) by a query whose box starts in cell (f0, f1,
    f2), is looked at there: a small item is in one cell; a large one in every cell of its
    box, and is looked at in the first cell both boxes cover (boxes that overlap both cover
    it)."""
    return not large[p] or (max(first[p, 0], f0) == cx and max(first[p, 1], f1) == cy
                            and max(first[p, 2], f2) == cz)


@njit(cache=True, inline="always")
def _bound(qlo, qhi, grid, reach):
    """How many items are hashed in the cells the box [qlo, qhi] scans: at least as many as
    _scan finds there, counted without testing a pair."""
    origin, cell, dims, first, order, ukey, table, ustart, uend, dense = grid
    i0, i1, j0, j1, k0, k1, f0, f1, f2 = _query_cells(qlo, qhi, reach, origin, cell, dims)
    m = 0
    for cx in range(i0, i1 + 1):
        for cy in range(j0, j1 + 1):
            key = (cx * dims[1] + cy) * dims[2] + k0        # cells k0..k1, as in _scan
            for cz in range(k1 - k0 + 1):
                pos = _find(key + cz, ukey, table, dense)
                if pos >= 0:
                    m += uend[pos] - ustart[pos]
    return m


@njit(cache=True)
def _prefix(c):
    """c[1:] made cumulative (c[0] = 0): the queries' offsets."""
    for q in range(c.shape[0] - 1):
        c[q + 1] += c[q]
