"""The compiled mirrors of the collide stage's sorts and orders, once per step, as the same
integer arrays:

- order_rigid (collision/rigid_order.py): which of a step's contacts the rigid bodies take and
  their order (the sorts are stable, as NumPy's are, so ties fall as they do there). The NumPy
  function is a few dozen array operations a step, each a few microseconds of Python whatever
  the size: at the 100-crate pile the selection cost 0.8 ms a frame, about an eighth of the
  frame; this is one call of 30 us (measured 2026-11-27);
- sort_pairs (collision/body_stage.py) and gather_slots (collision/contacts.py): the body
  contacts' pairs sorted, and their per-particle gather. NumPy sorts them by comparisons; the
  keys are ids below the particle, triangle or edge count, so counting sorts take them in
  linear time: at the N = 64 self-colliding cloth (some 100,000 candidate pairs and 60,000
  slots a step) the two NumPy sorts were 4.7 ms of a 40 ms frame (measured 2026-11-27);
- merge_round (collision/contacts.py): a round's body contacts merged into the step's, each
  found again keeping the side it had. NumPy's is a dozen array calls and a sort of packed
  identities (intersect1d), 0.22 ms a call at a 30 x 20 flag's round collides; this, a hash
  table of identities, 0.09 ms (measured 2026-11-29).
"""

import numpy as np
from numba import njit

from .compiled_pairs import new_contacts

# the NumPy side's constants, copied so that this file's digest (backend.KERNEL_SOURCES) keys
# the cached kernels that use them (tests/solver/test_structure.py checks each copy)
LEVELS = 4         # collision/rigid_order.LEVELS
PART_BODIES = 8    # collision/rigid_order.PART_BODIES


@njit(cache=True)
def _count_sort(key, size):
    """(k,) int64 the stable order of key (k,) int64 in [0, size): a counting sort, the same
    permutation as np.argsort(key, kind="stable")."""
    start = np.zeros(size + 1, np.int64)
    for v in key:
        start[v + 1] += 1
    for i in range(size):
        start[i + 1] += start[i]
    out = np.empty(key.shape[0], np.int64)
    for i in range(key.shape[0]):
        out[start[key[i]]] = i
        start[key[i]] += 1
    return out


@njit(cache=True)
def _nested_order(cb, where):
    """rigid_order._nested_order: (order, part_start, level_start) of the contacts whose
    corners' movable bodies are cb (Q, 4) int64, the clusters' points where (G, 3) [m]."""
    Q = cb.shape[0]
    G = where.shape[0]
    held = np.zeros(G, np.bool_)
    for k in range(Q):
        for j in range(4):
            if cb[k, j] >= 0:
                held[cb[k, j]] = True
    ids = np.nonzero(held)[0].astype(np.int64)
    nb = ids.shape[0]
    levels = 0
    while levels < LEVELS and (nb >> (levels + 1)) >= PART_BODIES:
        levels += 1
    # the parts of the last halving: [bound[j], bound[j + 1]) of ids
    bound = np.array([0, nb], np.int64)
    for _ in range(levels):
        nxt = np.empty(2 * (bound.shape[0] - 1) + 1, np.int64)
        nxt[0] = 0
        for j in range(bound.shape[0] - 1):
            a = bound[j]
            b = bound[j + 1]
            axis = 0
            if b > a:
                best = -np.inf
                for i in range(3):
                    hi = where[ids[a], i]
                    lo = where[ids[a], i]
                    for m in range(a + 1, b):
                        v = where[ids[m], i]
                        if v > hi:
                            hi = v
                        if v < lo:
                            lo = v
                    spread = hi - lo
                    if spread > best:         # np.argmax: the first of the largest
                        best = spread
                        axis = i
                seg = ids[a:b].copy()
                key = np.empty(b - a)
                for m in range(b - a):
                    key[m] = where[seg[m], axis]
                o = np.argsort(key, kind="mergesort")
                for m in range(b - a):
                    ids[a + m] = seg[o[m]]
            nxt[2 * j + 1] = a + (b - a) // 2
            nxt[2 * j + 2] = b
        bound = nxt
    label = np.zeros(G, np.int64)
    for j in range(bound.shape[0] - 1):
        for m in range(bound[j], bound[j + 1]):
            label[ids[m]] = j
    level_start = np.zeros(levels + 2, np.int64)
    for k in range(levels + 1):
        level_start[k + 1] = level_start[k] + (1 << (levels - k))
    part = np.empty(Q, np.int64)
    for k in range(Q):
        lo = 9223372036854775807         # np.iinfo(np.int64).max
        hi = -1
        for j in range(4):
            if cb[k, j] >= 0:
                lab = label[cb[k, j]]
                lo = min(lo, lab)
                hi = max(hi, lab)
        level = 0
        for s in range(levels):
            if (lo >> s) != (hi >> s):
                level += 1
        part[k] = level_start[level] + (lo >> level)
    n_parts = level_start[levels + 1]
    order = _count_sort(part, n_parts)
    part_start = np.zeros(n_parts + 1, np.int64)
    for k in range(Q):
        part_start[part[k] + 1] += 1
    for j in range(n_parts):
        part_start[j + 1] += part_start[j]
    return order, part_start, level_start


@njit(cache=True)
def _by_three(a, b, c):
    """np.lexsort((c, b, a)) of (k,) non-negative int64 keys (a first, ties in the given
    order): a stable sort by b, then c, then a stable counting sort by a."""
    k = a.shape[0]
    if k == 0:
        return np.zeros(0, np.int64)
    nc = c.max() + 1
    first = np.argsort(b * nc + c, kind="mergesort")
    return first[_count_sort(a[first], a.max() + 1)]


@njit(cache=True)
def order_rigid(idx, body, movable, where, pair_particle, pair_start, impact_body, start):
    """collision/rigid_order.order_rigid (its docstring gives the arguments and results)."""
    K = idx.shape[0]
    on = np.zeros(K, np.bool_)
    cb = np.full((K, 4), -1, np.int64)
    nq = 0
    for k in range(K):
        keep = True
        some = False
        for j in range(4):
            p = idx[k, j]
            if p < 0:
                continue
            cb[k, j] = body[p]
            if body[p] >= 0:
                some = True
            elif movable[p]:
                keep = False
        on[k] = keep and some
        if on[k]:
            nq += 1
    q = np.empty(nq, np.int64)
    cq = np.empty((nq, 4), np.int64)
    m = 0
    for k in range(K):
        if on[k]:
            q[m] = k
            cq[m] = cb[k]
            m += 1
    order, part_start, level_start = _nested_order(cq, where)
    q = q[order]
    # collider candidates of rigid bodies' particles, coloured by rank within the body
    mine = body[pair_particle] >= 0
    n_mine = np.count_nonzero(mine)
    pp = np.empty(n_mine, np.int64)
    pk = np.empty(n_mine, np.int64)
    pb = np.empty(n_mine, np.int64)
    m = 0
    for k in range(pair_start.shape[0] - 1):
        for i in range(pair_start[k], pair_start[k + 1]):
            if mine[i]:
                pp[m] = pair_particle[i]
                pk[m] = k
                pb[m] = body[pair_particle[i]]
                m += 1
    by_body = _by_three(pb, pp, pk)
    rank = np.empty(n_mine, np.int64)
    starts = 0
    body_starts = np.empty(n_mine + 1, np.int64)
    for i in range(n_mine):
        if i == 0 or pb[by_body[i]] != pb[by_body[i - 1]]:
            body_starts[starts] = i
            starts += 1
        rank[by_body[i]] = i - body_starts[starts - 1]
    body_starts[starts] = n_mine
    cand_body_start = body_starts[:starts + 1].copy()
    order = _by_three(rank, pk, pb)
    cand_particle = pp[order]
    cand_collider = pk[order]
    colours = 0 if n_mine == 0 else rank.max() + 1
    cand_start = np.zeros(colours + 1, np.int64)
    for i in range(n_mine):
        cand_start[rank[i] + 1] += 1
    for j in range(colours):
        cand_start[j + 1] += cand_start[j]
    cand_impact = np.nonzero(impact_body[cand_particle] >= 0)[0].astype(np.int64)
    at = np.empty(n_mine, np.int64)
    for i in range(n_mine):
        at[order[i]] = i
    cand_by_body = np.empty(n_mine, np.int64)
    for i in range(n_mine):
        cand_by_body[i] = at[by_body[i]]
    # for each position along by_body, where its particle's run ends
    cand_run_next = np.empty(n_mine, np.int64)
    end = n_mine
    for i in range(n_mine - 1, -1, -1):
        cand_run_next[i] = end
        if i == 0 or pp[by_body[i]] != pp[by_body[i - 1]]:
            end = i
    # the bodies in the solve and their entries
    G = start.shape[0] - 1
    touched = np.zeros(G, np.bool_)
    for m in range(nq):
        for j in range(4):
            if cq[m, j] >= 0:
                touched[cq[m, j]] = True
    for i in range(n_mine):
        touched[pb[i]] = True
    bodies = np.nonzero(touched)[0].astype(np.int64)
    n_entries = 0
    for b in bodies:
        n_entries += start[b + 1] - start[b]
    entries = np.empty(n_entries, np.int64)
    entry_body = np.empty(n_entries, np.int64)
    m = 0
    for b in bodies:
        for e in range(start[b], start[b + 1]):
            entries[m] = e
            entry_body[m] = b
            m += 1
    return (on, q, part_start, level_start, mine, cand_particle, cand_collider, cand_start,
            cand_impact, cand_by_body, cand_body_start, cand_run_next, bodies, entries,
            entry_body)


@njit(cache=True)
def sort_pairs(a, b):
    """collision/body_stage.sort_pairs: pairs (a, b) (k,) non-negative int64 sorted by a, then
    b (a counting sort by b, then a stable one by a: the order of the unique keys a * m + b,
    and equal keys are equal pairs)."""
    if a.shape[0] == 0:
        return a.copy(), b.copy()
    by_b = _count_sort(b, b.max() + 1)
    a1 = a[by_b]
    o = by_b[_count_sort(a1, a1.max() + 1)]
    return a[o], b[o]


@njit(cache=True)
def gather_slots(idx):
    """collision/contacts.gather_slots: (particles, starts, slots) of the body contacts idx
    (K, 4) int64; each particle's slots in increasing order (the slots are visited rising)."""
    flat = idx.ravel()
    top = 0
    for v in flat:
        top = max(top, v + 1)
    count = np.zeros(top + 1, np.int64)
    for v in flat:
        if v >= 0:
            count[v + 1] += 1
    u = 0
    for p in range(top):
        if count[p + 1] > 0:
            u += 1
    particle = np.empty(u, np.int64)
    start = np.empty(u + 1, np.int64)
    u = 0
    for p in range(top):
        if count[p + 1] > 0:
            particle[u] = p
            u += 1
        count[p + 1] += count[p]
    for j in range(u):
        start[j] = count[particle[j]]
    start[u] = count[top]
    slot = np.empty(count[top], np.int64)
    for s in range(flat.shape[0]):
        v = flat[s]
        if v >= 0:
            slot[count[v]] = s
            count[v] += 1
    return particle, start, slot


@njit(cache=True, inline="always")
def _identity_slot(idx, kind, r, size):
    """Home slot of contact r's identity (its kind and four corners) in a table of ``size`` (a
    power of two) slots."""
    key = np.uint64(kind[r] + 1)
    for c in range(4):
        key = (key ^ np.uint64(idx[r, c] + 1)) * np.uint64(11400714819323198485)
    return np.int64(key >> np.uint64(40)) & (size - 1)


@njit(cache=True)
def merge_round(base, stay, fast, found, old):
    """Scalar mirror of collision/contacts.merge_round (the same arguments and arrays). A
    contact of found is known in old through a hash table of old's identities (the kind and
    the four corners compared), where NumPy packs and sorts them (intersect1d): the same
    matches, as no list holds one contact twice."""
    b_idx, b_kind, b_side, b_dist, b_mu, b_jit = base
    f_idx, f_kind, f_side, f_dist, f_mu, f_jit = found
    o_idx, o_kind, o_side, o_dist, o_mu, o_jit = old
    size = 16
    while size < 2 * o_idx.shape[0]:
        size *= 2
    table = np.full(size, -1, np.int64)
    for r in range(o_idx.shape[0]):
        h = _identity_slot(o_idx, o_kind, r, size)
        while table[h] >= 0:
            h = (h + 1) & (size - 1)
        table[h] = r
    new = np.zeros(f_idx.shape[0], np.bool_)
    count = 0
    for r in range(b_idx.shape[0]):
        count += stay[r]
    for r in range(f_idx.shape[0]):
        for c in range(4):
            p = f_idx[r, c]
            if p >= 0 and fast[p]:
                new[r] = True
        count += new[r]
    idx, kind, side, dist, mu, jit = new_contacts(count)
    k = 0
    for r in range(b_idx.shape[0]):
        if stay[r]:
            for c in range(4):
                idx[k, c] = b_idx[r, c]
            kind[k] = b_kind[r]
            side[k] = b_side[r]
            dist[k] = b_dist[r]
            mu[k] = b_mu[r]
            for c in range(3):
                jit[k, c] = b_jit[r, c]
            k += 1
    for r in range(f_idx.shape[0]):
        if not new[r]:
            continue
        for c in range(4):
            idx[k, c] = f_idx[r, c]
        kind[k] = f_kind[r]
        dist[k] = f_dist[r]
        mu[k] = f_mu[r]
        src = -1                                  # the same contact in old, if any
        h = _identity_slot(f_idx, f_kind, r, size)
        while table[h] >= 0:
            o = table[h]
            if o_kind[o] == f_kind[r] and o_idx[o, 0] == f_idx[r, 0] \
                    and o_idx[o, 1] == f_idx[r, 1] and o_idx[o, 2] == f_idx[r, 2] \
                    and o_idx[o, 3] == f_idx[r, 3]:
                src = o
                break
            h = (h + 1) & (size - 1)
        if src >= 0:
            side[k] = o_side[src]
            for c in range(3):
                jit[k, c] = o_jit[src, c]
        else:
            side[k] = f_side[r]
            for c in range(3):
                jit[k, c] = f_jit[r, c]
        k += 1
    return idx, kind, side, dist, mu, jit
