"""The collide stage's sorts and orders, once per step: the order of the rigid contacts
(collision/rigid_order.py, the kernel table's order_rigid: parts of space for the contacts
between bodies, colours for the collider candidates), the body contacts' pairs sorted
(body_stage.sort_pairs) and their per-particle gather (contacts.gather_slots). The compiled
mirrors (kernels/compiled_order.py) give the same arrays."""

import numpy as np
import pytest

from solver import backend as _backend
from solver.collision.body_stage import sort_pairs
from solver.collision.contacts import gather_slots
from solver.collision.rigid_order import order_rigid

KERNELS = _backend.numba_kernels()


def test_contacts_between_bodies_are_ordered_in_parts_that_share_no_body():
    """collision/rigid_order._nested_order: a 10 x 10 grid of bodies in a chain of contacts (each
    with its right and upper neighbour, some against a fixed corner) is cut into 8 parts, 3
    halvings; every contact appears once, the parts of one level share no movable body (so
    the compiled kernel may solve them in parallel), each part's contacts keep the collide
    stage's order, and most contacts lie in the smallest parts."""
    from solver.collision.rigid_order import _nested_order
    side = 10
    where = np.array([(i % side, i // side, 0.0) for i in range(side * side)], float)
    cb = []
    for i in range(side * side):
        if i % side < side - 1:
            cb.append((i, i, i + 1, -1))
        if i // side < side - 1:
            cb.append((i, -1, i + side, i + side))
        if i % 7 == 0:
            cb.append((i, -1, -1, -1))                 # against something immovable
    cb = np.array(cb, np.int64)
    order, part_start, level_start = _nested_order(cb, where)
    assert sorted(order.tolist()) == list(range(len(cb)))
    assert level_start.tolist() == [0, 8, 12, 14, 15]       # 100 bodies: 3 halvings
    assert part_start[-1] == len(cb) and np.all(np.diff(part_start) >= 0)
    ordered = cb[order]
    for lv in range(len(level_start) - 1):
        seen = {}
        for part in range(level_start[lv], level_start[lv + 1]):
            lo, hi = part_start[part], part_start[part + 1]
            assert np.all(np.diff(order[lo:hi]) > 0)            # the stage's order
            for b in set(ordered[lo:hi].ravel().tolist()) - {-1}:
                assert seen.setdefault(b, part) == part, (lv, b)
    # most contacts lie within the smallest parts: a neighbour is mostly in one's own part
    assert part_start[level_start[1]] > 0.6 * len(cb)


def test_the_candidates_sort_is_lexsorts_order():
    """collision/rigid_order._lexsort3 (the collider candidates' order: rank, collider, body) gives
    np.lexsort's order, ties in their given order, with many ties and with keys too large
    for its combined key (lexsort itself then)."""
    from solver.collision.rigid_order import _lexsort3
    rng = np.random.default_rng(3)
    for n, top in ((0, 1), (1, 1), (500, 3), (5000, 40), (300, 1 << 30)):
        a, b, c = (rng.integers(0, top, n) for _ in range(3))
        assert np.array_equal(_lexsort3(c, b, a), np.lexsort((c, b, a))), (n, top)


def _random_step(rng):
    """Arguments of order_rigid for a random step: clusters (some not rigid), sleeping and
    pinned particles, body contacts with missing corners, candidates of a few colliders."""
    n = int(rng.integers(1, 400))
    cuts = np.sort(rng.choice(np.arange(1, n), min(int(rng.integers(0, 60)), n - 1),
                              replace=False)) if n > 1 else np.zeros(0, np.int64)
    start = np.r_[0, cuts, n].astype(np.int64)
    G = len(start) - 1
    cluster = np.repeat(np.arange(G), np.diff(start))
    rigid, awake = rng.random(G) < 0.7, rng.random(n) < 0.9
    body = np.where(rigid[cluster] & awake, cluster, -1).astype(np.int64)
    movable = awake & (rng.random(n) < 0.95)
    K = int(rng.integers(0, 300))
    idx = rng.integers(0, n, (K, 4))
    idx[rng.random((K, 4)) < 0.3] = -1
    where = rng.random((G, 3)) * rng.integers(1, 5)
    if rng.random() < 0.3:
        where[:, 1] = 0.5                               # ties in the median split
    per = [np.sort(rng.choice(n, int(rng.integers(0, n)), replace=False))
           for _ in range(int(rng.integers(0, 5)))]
    pair_particle = np.concatenate(per).astype(np.int64) if per else np.zeros(0, np.int64)
    pair_start = np.r_[0, np.cumsum([len(p) for p in per])].astype(np.int64)
    impact_body = np.where(rng.random(n) < 0.5, body, -1).astype(np.int64)
    return idx, body, movable, where, pair_particle, pair_start, impact_body, start


def test_the_collider_candidates_are_coloured_so_that_no_body_takes_two_at_once():
    """Each colour holds at most one candidate of a body (the NumPy kernel solves a colour as
    one batch), every candidate of a rigid body's particle is taken once, a body's candidates
    come by particle then collider in cand_by_body, and cand_run_next ends each particle's
    run there."""
    rng = np.random.default_rng(11)
    for _ in range(50):
        args = _random_step(rng)
        idx, body, movable, where, pair_particle, pair_start, impact_body, start = args
        (on, q, part_start, level_start, mine, cp, ck, cs, ci, by_body, body_start, run_next,
         bodies, entries, entry_body) = order_rigid(*args)
        assert np.array_equal(mine, body[pair_particle] >= 0)
        assert sorted(zip(cp.tolist(), ck.tolist())) == sorted(
            (int(p), k) for k in range(len(pair_start) - 1)
            for p in pair_particle[pair_start[k]:pair_start[k + 1]] if body[p] >= 0)
        for c in range(len(cs) - 1):
            b = body[cp[cs[c]:cs[c + 1]]]
            assert len(set(b.tolist())) == len(b)
        assert np.array_equal(ci, np.nonzero(impact_body[cp] >= 0)[0])
        for g in range(len(body_start) - 1):
            run = by_body[body_start[g]:body_start[g + 1]]
            assert len(set(body[cp[run]].tolist())) == 1
            keys = list(zip(cp[run].tolist(), ck[run].tolist()))
            assert keys == sorted(keys)
            for m in range(body_start[g], body_start[g + 1]):
                end = run_next[m]
                assert np.all(cp[by_body[m:end]] == cp[by_body[m]])
                assert end == len(cp) or cp[by_body[end]] != cp[by_body[m]]
        # every body in a taken contact or candidate is in the solve, with all its entries
        taken = set(body[cp].tolist()) | set(x for x in body[np.where(
            idx[q] >= 0, idx[q], 0)][idx[q] >= 0].tolist() if x >= 0)
        assert bodies.tolist() == sorted(taken)
        assert entries.tolist() == [e for b in bodies for e in range(start[b], start[b + 1])]
        assert np.array_equal(entry_body, np.repeat(bodies, np.diff(start)[bodies]))


@pytest.mark.skipif(KERNELS is None, reason="compiled kernels only")
def test_the_compiled_order_is_the_numpy_order():
    """kernels/compiled_order.order_rigid returns the NumPy function's arrays, value, dtype and
    shape, on 300 random steps (levels of parts, ties in the split, empty lists)."""
    rng = np.random.default_rng(0)
    for trial in range(300):
        args = _random_step(rng)
        ours, theirs = order_rigid(*args), KERNELS.order_rigid(*args)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), (trial, i)


def test_pairs_are_sorted_by_their_first_then_their_second_id():
    """sort_pairs: the pairs in lexicographic order, duplicates kept."""
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 30, 500), rng.integers(0, 30, 500)
    sa, sb = sort_pairs(a, b)
    assert sorted(zip(a.tolist(), b.tolist())) == list(zip(sa.tolist(), sb.tolist()))


def test_the_gather_lists_each_particles_slots_in_rising_order():
    """gather_slots: every particle in a contact once, rising, with exactly the slots (contact *
    4 + corner) that hold it, in increasing order."""
    idx = np.array([[3, 0, 7, -1], [7, 3, -1, -1], [0, 0, 9, 3]], np.int64)
    particle, start, slot = gather_slots(idx)
    assert particle.tolist() == [0, 3, 7, 9]
    runs = [slot[start[u]:start[u + 1]].tolist() for u in range(len(particle))]
    assert runs == [[1, 8, 9], [0, 5, 11], [2, 4], [10]]


@pytest.mark.skipif(KERNELS is None, reason="compiled kernels only")
def test_the_compiled_sorts_are_the_numpy_sorts():
    """kernels/compiled_order.sort_pairs and gather_slots (counting sorts) return the NumPy
    functions' arrays (comparison sorts), value, dtype and shape: random ids with repeats,
    empty lists, contacts without corners."""
    rng = np.random.default_rng(1)
    for trial in range(200):
        k, top = int(rng.integers(0, 3000)), int(rng.integers(1, 500))
        a, b = rng.integers(0, top, k), rng.integers(0, top, k)
        idx = rng.integers(-1, top, (k, 4))
        if trial % 10 == 0:
            idx[:] = -1
        for ours, theirs in ((sort_pairs(a, b), KERNELS.sort_pairs(a, b)),
                             (gather_slots(idx), KERNELS.gather_slots(idx))):
            for u, v in zip(ours, theirs):
                assert u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v), trial
