"""The broad phase between bodies (the kernel table's find_body_contacts): the grid only
accelerates, the pairs are defined by exact box tests. So, on random boxes of every size in a
few groups (a self-colliding cloth, another cloth, particles with radii), each backend's grid
finds exactly the pairs that a scan of everything against everything finds (the NumPy kernel
with one cell): the NumPy grid at cells from a quarter of the largest box to the whole scene,
the compiled one at the cells it picks itself (it takes none: kernels/compiled_grid.py), with
the scene's outsized boxes hashed into every cell they cover.

The compiled grid hashes each item into every cell its box covers and tests a pair in one
cell only (kernels/compiled_grid.py); the NumPy grid hashes an item by its box's low corner
and grows each query by the largest box. A pair lost in a cell the first misses, or tested in
two cells and written twice, or a query not grown enough in the second, fails here. So does a
cell the compiled grid finds differently through its map of every cell (a small grid) and its
hash (a spread one), or a lone group's particle queries skipped where the group pairs its own
particles."""

import numpy as np
import pytest

from solver import backend as _backend
from solver.kernels import table

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


def _scene(seed):
    """find_body_contacts' arguments for 1,200 particles in [0, 1]^3 (boxes of 0.5 to 3 cm, a
    few dozen of 10 to 40 cm: a flag's fast corners), and the grid's origin and top."""
    rng = np.random.default_rng(seed)
    n = 1200
    x = rng.random((n, 3))
    ext = rng.uniform(0.005, 0.03, (n, 3))
    ext[rng.choice(n, 30, replace=False)] = rng.uniform(0.1, 0.4, (30, 3))
    lo = x - ext * rng.random((n, 1))
    hi = lo + ext
    group = np.repeat(np.arange(3), n // 3).astype(np.int64)
    radius = np.where(group == 2, 0.02, 0.004)
    inv_mass = np.where(rng.random(n) < 0.05, 0.0, 1.0)
    # triangles of near neighbours within groups 0 and 1 (cloths), and their edges
    tris = []
    for g in (0, 1):
        ids = np.nonzero(group == g)[0]
        for i in ids:
            d = np.linalg.norm(x[ids] - x[i], axis=1)
            near = ids[np.argsort(d)[1:3]]
            tris.append((i, near[0], near[1]))
    tris = np.array(tris, np.int64)
    edges = np.unique(np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]],
                                              tris[:, [2, 0]]]), axis=1), axis=0)
    args = dict(
        lo=lo, hi=hi, radius=radius, group=group, inv_mass=inv_mass, x0=x + 0.01,
        tris=tris, tri_thick=radius[tris].mean(axis=1), edges=edges,
        edge_thick=radius[edges].mean(axis=1),
        self_group=np.array([True, False, True]),
        disabled=np.array([1 * 3 + 2], np.int64),          # groups 1 and 2 never meet
        active=rng.random(n) < 0.9, tri_active=rng.random(len(tris)) < 0.9,
        edge_active=rng.random(len(edges)) < 0.9,
        edge_sag=rng.uniform(0.0, 0.008, len(edges)),
        pair_self=np.array([False, False, True]),
        group_segment=np.zeros(3, bool))
    args["reach"] = (hi - lo)[args["active"]].max(axis=0)
    return args, lo.min(axis=0), hi.max(axis=0)


def _pairs(kernels, args, origin, cell):
    dims = np.floor((args["hi"].max(axis=0) - origin) / cell).astype(np.int64) + 1
    out = kernels.find_body_contacts(
        args["lo"], args["hi"], args["radius"], args["group"], args["inv_mass"], args["x0"],
        args["tris"], args["tri_thick"], args["edges"], args["edge_thick"], args["self_group"],
        args["disabled"], origin, cell, dims, args["reach"], args["active"],
        args["tri_active"], args["edge_active"], args["edge_sag"], args["pair_self"],
        args["group_segment"])
    return [sorted(zip(out[k].tolist(), out[k + 1].tolist())) for k in (0, 2, 4)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", [1, 2])
def test_every_grid_finds_the_pairs_a_scan_of_everything_finds(backend, seed):
    args, origin, top = _scene(seed)
    whole = (top - origin) * 1.001
    expected = _pairs(table("numpy"), args, origin, whole)          # one cell: everything
    assert all(len(p) > 20 for p in expected), [len(p) for p in expected]
    # no pair of the disabled groups, none of an item with itself, each pair once
    group = args["group"]
    assert not any({group[i], group[j]} == {1, 2} for i, j in expected[0])
    assert all(i < j for i, j in expected[0]) and all(a < b for a, b in expected[2])
    kernels = table(backend)
    largest = (args["hi"] - args["lo"]).max(axis=0)
    mean = (args["hi"] - args["lo"])[args["active"]].mean(axis=0)
    for cell in (0.25 * largest, 0.5 * largest, 4.0 * mean, largest, whole):
        found = _pairs(kernels, args, origin, cell)
        for kind, got, want in zip(("particle", "vertex-triangle", "edge"), found, expected):
            assert got == want, f"{kind} pairs, cell {cell}: {len(got)} found, {len(want)} " \
                                f"expected"


@pytest.mark.parametrize("spread", [False, True])
def test_a_cell_is_found_the_same_through_the_map_and_the_hash(spread):
    """The compiled grid finds a cell by one load from a map of every cell when the grid is
    small (kernels/compiled_grid._dense), else through its hash table (_table): the same
    pairs either way. Spread, the scene's second cloth lies 50 m away, so the grid spans
    about 2,000 cells along x and takes the hash; compact, it takes the map."""
    if "numba" not in BACKENDS:
        pytest.skip("the compiled kernels are not available")
    from solver.kernels import compiled_grid
    args, origin, top = _scene(3)
    if spread:
        far = args["group"] == 1
        for key in ("lo", "hi", "x0"):
            args[key] = args[key].copy()
            args[key][far, 0] += 50.0
        origin, top = args["lo"].min(axis=0), args["hi"].max(axis=0)
    ids = np.nonzero(args["active"])[0]
    large = np.zeros(len(args["lo"]), bool)
    reach, mean = compiled_grid._split(ids, args["lo"], args["hi"], large)
    grid = compiled_grid._grid(ids, args["lo"], args["hi"], large, reach, mean, mean)
    assert grid[-1] == (not spread)                     # the map, or the hash
    expected = _pairs(table("numpy"), args, origin, (top - origin) * 1.001)
    assert all(len(p) > 20 for p in expected), [len(p) for p in expected]
    mean_box = (args["hi"] - args["lo"])[args["active"]].mean(axis=0)
    assert _pairs(table("numba"), args, origin, 4.0 * mean_box) == expected


@pytest.mark.parametrize("spread", [False, True])
def test_a_cell_lists_its_items_in_rising_id_whichever_sort_made_it(spread):
    """The compiled grid's cells, as a stable sort of its entries by cell gives them: a small
    item in the cell of its box's low corner, a large one in every cell its box covers, each
    cell's items in rising id. Compact, its cells are few for its entries and a counting sort
    makes the order; spread (the second cloth 50 m away, about 2,000 cells along x), more than
    DENSE_CELLS_PER_ENTRY cells an entry and Numba's merge sort does."""
    if "numba" not in BACKENDS:
        pytest.skip("the compiled kernels are not available")
    from solver.kernels import compiled_grid
    args, _, _ = _scene(4)
    lo, hi = args["lo"].copy(), args["hi"].copy()
    if spread:
        lo[args["group"] == 1, 0] += 50.0
        hi[args["group"] == 1, 0] += 50.0
    ids = np.nonzero(args["active"])[0]
    large = np.zeros(len(lo), bool)
    reach, mean = compiled_grid._split(ids, lo, hi, large)
    origin, cell, dims, _, order, ukey, _, ustart, uend, _ = compiled_grid._grid(
        ids, lo, hi, large, reach, mean, mean)
    assert large[ids].any() and not large[ids].all()
    counted = np.prod(dims) <= compiled_grid.DENSE_CELLS_PER_ENTRY * len(order)
    assert counted == (not spread)                  # the counting sort, or the merge sort

    def cells(x):
        return np.clip(np.floor((x - origin) / cell).astype(np.int64), 0, dims - 1)
    keys, items = [], []
    for i in ids:
        c0, c1 = cells(lo[i]), (cells(hi[i]) if large[i] else cells(lo[i]))
        for cx in range(c0[0], c1[0] + 1):
            for cy in range(c0[1], c1[1] + 1):
                for cz in range(c0[2], c1[2] + 1):
                    keys.append((cx * dims[1] + cy) * dims[2] + cz)
                    items.append(i)
    keys, items = np.array(keys), np.array(items)
    rank = np.lexsort((items, keys))
    assert np.array_equal(order, items[rank])
    assert np.array_equal(ukey, np.unique(keys))
    assert ustart[0] == 0 and np.array_equal(ustart[1:], uend[:-1])
    assert np.array_equal(uend - ustart, np.unique(keys, return_counts=True)[1])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pairs_itself", [True, False])
def test_a_lone_group_of_particles_pairs_only_with_itself_when_it_may(backend, pairs_itself):
    """The particles of one group alone (the compiled kernel then skips their queries unless
    the group pairs its own particles, pair_self: a lone cloth's): the same pairs as the
    scan of everything, some when the group may pair with itself, none when not."""
    args, origin, top = _scene(4)
    args["active"] = args["active"] & (args["group"] == 2)
    args["pair_self"] = np.array([False, False, pairs_itself])
    whole = (top - origin) * 1.001
    expected = _pairs(table("numpy"), args, origin, whole)
    assert (len(expected[0]) > 20) == pairs_itself, len(expected[0])
    mean_box = (args["hi"] - args["lo"])[args["active"]].mean(axis=0)
    assert _pairs(table(backend), args, origin, 4.0 * mean_box)[0] == expected[0]
