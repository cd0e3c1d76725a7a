"""The order of one step's rigid contacts (collision/rigid.py, RigidContacts.select): the
contacts between bodies by nested parts of space, so that the parts of a level share no
movable body and the compiled kernel solves them in parallel (kernels/compiled_rigid.py), and
the sorts and run offsets the collider candidates are ordered by. Pure NumPy, once per step,
no loop over contacts or bodies (at most 2^LEVELS parts)."""

import numpy as np

# the contacts between bodies are ordered by parts of space (_nested_order): at most LEVELS
# halvings (2^LEVELS parts), each part keeping at least PART_BODIES bodies
LEVELS = 4
PART_BODIES = 8


def _nested_order(cb, where):
    """The order of the contacts between bodies for one step (nested dissection): the bodies
    in contact are cut in two at the median of their longest extent, each half again, LEVELS
    times at most (while a part keeps PART_BODIES bodies); a contact belongs to the smallest
    part that holds all its movable bodies. The contacts are solved level by level, the
    smallest parts first, each part's contacts one after another in the collide stage's order:
    parts of one level share no movable body, so the compiled kernel solves them in parallel
    (one parallel region per level, not one per colour) with the bits of this order, whatever
    the thread count. cb (Q, 4) int64 each contact's corners' movable bodies (-1: none or
    immovable), at least one per contact (select keeps only those); where (K, 3) [m] a point
    of each body (its first particle). Returns order
    (Q,) int64 into the contacts, part_start (S + 1,) int64 each part's run in that order,
    level_start (L + 2,) int64 each level's run of parts."""
    Q = len(cb)
    held = np.zeros(len(where), bool)           # np.unique's result, by a mask
    held[cb[cb >= 0]] = True
    bodies = np.nonzero(held)[0]
    levels = 0
    while levels < LEVELS and len(bodies) >> (levels + 1) >= PART_BODIES:
        levels += 1
    label = np.zeros(len(where), np.int64)      # (K,) each body's smallest part
    parts = [bodies]
    for _ in range(levels):
        halves = []
        for ids in parts:
            p = where[ids]
            axis = int(np.argmax(p.max(axis=0) - p.min(axis=0))) if len(ids) else 0
            ids = ids[np.argsort(p[:, axis], kind="stable")]
            halves += [ids[:len(ids) // 2], ids[len(ids) // 2:]]
        parts = halves
    for j, ids in enumerate(parts):
        label[ids] = j
    lab = np.where(cb >= 0, label[np.where(cb >= 0, cb, 0)], -1)
    lo = np.where(lab >= 0, lab, np.iinfo(np.int64).max).min(axis=1) if Q else \
        np.zeros(0, np.int64)
    hi = lab.max(axis=1) if Q else np.zeros(0, np.int64)
    level = np.zeros(Q, np.int64)               # the smallest level whose part holds both
    for k in range(levels):
        level += (lo >> k) != (hi >> k)
    counts = 1 << (levels - np.arange(levels + 1))          # parts per level
    level_start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    part = level_start[level] + (lo >> level)
    order = np.argsort(part, kind="stable").astype(np.int64)
    part_start = np.concatenate(([0], np.cumsum(np.bincount(part, minlength=level_start[-1]))))
    return order, part_start.astype(np.int64), level_start


def _lexsort3(c, b, a):
    """np.lexsort((c, b, a)) of (k,) non-negative int64 keys (a first, then b, then c, ties in
    the given order). Where a is below 2^15 and b, c and k fit a 62-bit key: a stable sort of
    the combined (b, c) key, then a stable sort by a as 16-bit integers (NumPy's radix sort):
    the collide stage hands the candidates over collider by collider, particles rising, so the
    first sort meets long sorted runs (timsort merges them), and the second is linear (the
    candidates' order by rank, collider and body at 100 ragdolls, 16,600 of them: 0.72 ms as
    one sort of a combined key, 0.1 ms so). Else one stable sort of the combined key with the
    position last, or lexsort itself where that does not fit."""
    k = len(a)
    if not k:
        return np.zeros(0, np.int64)
    na, nb, nc = int(a.max()) + 1, int(b.max()) + 1, int(c.max()) + 1
    if na <= 1 << 15 and nb * nc * k < 1 << 62:
        first = np.argsort(b * nc + c, kind="stable")
        return first[np.argsort(a[first].astype(np.int16), kind="stable")]
    if na * nb * nc * k >= 1 << 62:
        return np.lexsort((c, b, a))
    return np.argsort(((a * nb + b) * nc + c) * k + np.arange(k), kind="stable")


def _starts(sorted_colors):
    """(colours + 1,) int64 offsets of each colour's run in sorted (k,) colours 0, 1, ..."""
    if not len(sorted_colors):
        return np.zeros(1, np.int64)
    counts = np.bincount(sorted_colors)
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def order_rigid(idx, body, movable, where, pair_particle, pair_start, impact_body, start):
    """The kernel table's order_rigid (compiled in kernels/compiled_order.py): which of this
    step's contacts the rigid bodies take and in what order (RigidContacts.select, which
    finds ``body`` and stores the result).

    idx (K, 4) int64 the body contacts' corners (-1: none); body (n,) int64 each particle's
    movable rigid body this step, -1 for none; movable (n,) bool the particles a contact may
    move (awake, not pinned); where (G, 3) [m] a point of each cluster (its first particle);
    pair_particle (q,) int64 and pair_start (C + 1,) int64 the collider candidates, collider
    by collider; impact_body (n,) int64 (RigidContacts.impact_body); start (G + 1,) int64 the
    clusters' entries.

    Returns, in this order:
    - on (K,) bool the body contacts solved on the bodies: every corner on a movable rigid
      body or immovable, one at least on a body; q (Q,) int64 those contacts in their solve
      order, part_start (S + 1,), level_start (L + 2,) int64 (_nested_order);
    - mine (q,) bool the collider candidates of rigid bodies' particles; cand_particle,
      cand_collider (Qc,) int64 those, coloured by rank within their body (a body's
      candidates by particle, then collider) and ordered by colour, collider, body;
      cand_start (colours + 1,) int64 each colour's run; cand_impact (I,) int64 the
      candidates whose particle's impacts the velocity pass takes; cand_by_body (Qc,) and
      cand_body_start (B' + 1,) int64 the same candidates body by body, each body's in their
      order; cand_run_next (Qc,) int64 for each position in cand_by_body where its particle's
      run ends;
    - bodies (B,) int64 the bodies in the solve (rising), entries (E,) int64 their cluster
      entries body by body, entry_body (E,) int64 the body of each."""
    valid = idx >= 0
    cb = np.where(valid, body[np.where(valid, idx, 0)], -1)
    fixed = valid & (cb < 0) & ~movable[np.where(valid, idx, 0)]
    on = np.all(~valid | (cb >= 0) | fixed, axis=1) & np.any(cb >= 0, axis=1)
    q = np.nonzero(on)[0]
    order, part_start, level_start = _nested_order(cb[q], where)
    q = q[order]
    # collider candidates of rigid bodies' particles, coloured by rank within the body
    pk = np.repeat(np.arange(len(pair_start) - 1, dtype=np.int64), np.diff(pair_start))
    mine = body[pair_particle] >= 0
    pp, pk = pair_particle[mine], pk[mine]
    pb = body[pp]
    # a body's candidates by particle, then collider: a particle's come together, so the
    # compiled kernel skips a clear particle's at once (cand_run_next)
    by_body = _lexsort3(pk, pp, pb)
    first = np.r_[True, pb[by_body][1:] != pb[by_body][:-1]] if len(pb) else \
        np.zeros(0, bool)
    run = np.cumsum(first) - 1
    rank = np.empty(len(pb), np.int64)
    rank[by_body] = np.arange(len(pb)) - np.nonzero(first)[0][run]
    order = _lexsort3(pb, pk, rank)
    cand_particle = np.ascontiguousarray(pp[order])
    cand_collider = np.ascontiguousarray(pk[order])
    cand_start = _starts(rank[order])
    cand_impact = np.nonzero(impact_body[cand_particle] >= 0)[0].astype(np.int64)
    # by body, each body's in their order: by_body's runs, moved to where order put them
    # (a body's ranks rise along by_body, and order sorts by rank first)
    at = np.empty(len(order), np.int64)
    at[order] = np.arange(len(order))
    cand_by_body = at[by_body]
    cand_body_start = np.append(np.nonzero(first)[0], len(pb)).astype(np.int64)
    pq = pp[by_body]
    new_run = np.r_[True, pq[1:] != pq[:-1]] if len(pq) else np.zeros(0, bool)
    run_start = np.nonzero(new_run)[0]
    cand_run_next = np.append(run_start[1:], len(pq)).astype(np.int64)[np.cumsum(new_run) - 1]
    # the bodies in the solve and their entries
    touched = np.zeros(len(start) - 1, bool)     # np.unique's result, by a mask
    cq = cb[q]
    touched[cq[cq >= 0]] = True
    touched[pb] = True
    bodies = np.nonzero(touched)[0].astype(np.int64)
    sizes = np.diff(start)[bodies]
    first = np.repeat(start[bodies] - (np.cumsum(sizes) - sizes), sizes)
    entries = (np.arange(len(first)) + first).astype(np.int64)
    entry_body = np.repeat(bodies, sizes).astype(np.int64)
    return (on, q.astype(np.int64), part_start, level_start, mine, cand_particle,
            cand_collider, cand_start, cand_impact, cand_by_body, cand_body_start,
            cand_run_next, bodies, entries, entry_body)
