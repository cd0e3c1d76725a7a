"""Numba-compiled broad phase between bodies: collision/bodies.py's find_body_contacts (that
module's docstring gives the tests), and its inputs from collision/body_stage.py: the
active-item filter (active_items) and the edges' sag (edge_sag). The same pairs as the NumPy
kernel: the result is defined by exact box comparisons, which the grid only accelerates, and
BodyContacts sorts it afterwards.

The grids are compiled_grid.py's, not the NumPy kernel's (that module says how and why they
differ); the pairs are the same.

Each query (a triangle, a particle with a radius, an edge) owns a segment of the output: a
first pass bounds it by the occupancy of the cells its box covers (no pair test), a second
runs the exact tests once and writes the pairs that pass into the query's segment, and a
third packs the segments. No two iterations write the same element, so the thread count
changes no bit.

The per-query and per-pair helpers are inlined (inline="always") into the parallel loops:
called, each call counted references on its array arguments (atomic operations, see
kernels/compiled.py), once per candidate pair. The self-collision benchmark's folded cloth at
N = 64, at rest: 8.4 ms a call as calls, 3.7 ms inlined, the same pairs (2026-11-26).
"""

import math

import numpy as np
from numba import njit, prange

from .compiled_grid import (_bound, _find, _grid, _mean_box, _once, _prefix, _query_cells,
                            _split)
from .compiled_options import prange_only
from .compiled_pairs import _face_normal


@njit(cache=True, inline="always")
def _disabled(ga, gb, disabled, n_groups):
    lo = min(ga, gb)
    hi = max(ga, gb)
    key = lo * n_groups + hi
    if disabled.shape[0] == 0:
        return False
    pos = np.searchsorted(disabled, key)
    if pos >= disabled.shape[0]:
        pos = disabled.shape[0] - 1
    return disabled[pos] == key


@njit(cache=True, inline="always")
def _dist2(x, i, j):
    d0 = x[i, 0] - x[j, 0]
    d1 = x[i, 1] - x[j, 1]
    d2 = x[i, 2] - x[j, 2]
    return d0 * d0 + d1 * d1 + d2 * d2


@njit(cache=True, inline="always")
def _vt_ok(v, f, lo, hi, tlo, thi, radius, group, inv_mass, x0, tris, tri_thick, self_group,
           disabled):
    a = tris[f, 0]
    b = tris[f, 1]
    c = tris[f, 2]
    if v == a or v == b or v == c:
        return False
    for k in range(3):
        if not (lo[v, k] <= thi[f, k]) or not (hi[v, k] >= tlo[f, k]):
            return False
    if not (inv_mass[v] > 0 or inv_mass[a] > 0 or inv_mass[b] > 0 or inv_mass[c] > 0):
        return False
    gv = group[v]
    ga = group[a]
    if gv == ga:
        if not self_group[gv]:
            return False
        dmin = min(min(_dist2(x0, v, a), _dist2(x0, v, b)), _dist2(x0, v, c))
        rr = radius[v] + tri_thick[f]
        return dmin > rr * rr
    return not _disabled(gv, ga, disabled, self_group.shape[0])


@njit(cache=True, inline="always")
def _pp_ok(i, j, lo, hi, radius, group, inv_mass, x0, self_group, disabled, group_segment):
    if not (j > i) or not (radius[j] > 0):
        return False
    if group_segment[group[i]] and group_segment[group[j]]:
        return False
    if not _boxes_meet(lo, hi, j, i):
        return False
    if not (inv_mass[i] > 0 or inv_mass[j] > 0):
        return False
    gi = group[i]
    gj = group[j]
    if gi == gj:
        if not self_group[gi]:
            return False
        r = radius[i] + radius[j]
        return _dist2(x0, i, j) > r * r
    return not _disabled(gi, gj, disabled, self_group.shape[0])


@njit(cache=True, inline="always")
def _scan(q, qlo, qhi, is_tri, out, at, grid, reach, large, lo, hi, tlo, thi, radius, group,
          inv_mass, x0, tris, tri_thick, self_group, disabled, pair_self, group_segment):
    """Visit the particles in the cells query q's box scans (_query_cells) and write those that
    pass the exact test into out[at:] (room for _bound's count). Returns how many passed."""
    origin, cell, dims, first, order, ukey, table, ustart, uend, dense = grid
    i0, i1, j0, j1, k0, k1, f0, f1, f2 = _query_cells(qlo, qhi, reach, origin, cell, dims)
    m = 0
    for cx in range(i0, i1 + 1):
        for cy in range(j0, j1 + 1):
            key = (cx * dims[1] + cy) * dims[2] + k0      # cells k0..k1: consecutive keys
            for cz in range(k1 - k0 + 1):
                pos = _find(key + cz, ukey, table, dense)
                if pos < 0:
                    continue
                for s in range(ustart[pos], uend[pos]):
                    p = order[s]
                    if not _once(p, cx, cy, k0 + cz, large, first, f0, f1, f2):
                        continue
                    if is_tri:
                        ok = _vt_ok(p, q, lo, hi, tlo, thi, radius, group, inv_mass, x0, tris,
                                    tri_thick, self_group, disabled)
                    else:
                        ok = _pp_ok(q, p, lo, hi, radius, group, inv_mass, x0, pair_self,
                                    disabled, group_segment)
                    if ok:
                        out[at + m] = p
                        m += 1
    return m


@njit(cache=True, inline="always")
def _ee_ok(ea, eb, elo, ehi, edges, edge_thick, edge_sag, asks, group, inv_mass, x0,
           self_group, disabled):
    if eb == ea or (asks[eb] and not (eb > ea)):
        return False
    if not (edge_sag[ea] + edge_sag[eb] > 0.5 * (edge_thick[ea] + edge_thick[eb])):
        return False
    p = edges[ea, 0]
    q = edges[ea, 1]
    u = edges[eb, 0]
    w = edges[eb, 1]
    if p == u or p == w or q == u or q == w:
        return False
    for k in range(3):
        if not (elo[ea, k] <= ehi[eb, k]) or not (ehi[ea, k] >= elo[eb, k]):
            return False
    if not (inv_mass[p] > 0 or inv_mass[q] > 0 or inv_mass[u] > 0 or inv_mass[w] > 0):
        return False
    gp = group[p]
    gu = group[u]
    if gp == gu:
        if not self_group[gp]:
            return False
        dmin = min(min(_dist2(x0, p, u), _dist2(x0, p, w)),
                   min(_dist2(x0, q, u), _dist2(x0, q, w)))
        rr = edge_thick[ea] + edge_thick[eb]
        return dmin > rr * rr
    return not _disabled(gp, gu, disabled, self_group.shape[0])


@njit(cache=True, inline="always")
def _scan_edges(ea, qlo, qhi, out, at, grid, reach, large, elo, ehi, edges, edge_thick,
                edge_sag, asks, group, inv_mass, x0, self_group, disabled):
    """_scan for edge ea against the hashed edges."""
    origin, cell, dims, first, order, ukey, table, ustart, uend, dense = grid
    i0, i1, j0, j1, k0, k1, f0, f1, f2 = _query_cells(qlo, qhi, reach, origin, cell, dims)
    m = 0
    for cx in range(i0, i1 + 1):
        for cy in range(j0, j1 + 1):
            key = (cx * dims[1] + cy) * dims[2] + k0        # cells k0..k1, as in _scan
            for cz in range(k1 - k0 + 1):
                pos = _find(key + cz, ukey, table, dense)
                if pos < 0:
                    continue
                for s in range(ustart[pos], uend[pos]):
                    eb = order[s]
                    if not _once(eb, cx, cy, k0 + cz, large, first, f0, f1, f2):
                        continue
                    if _ee_ok(ea, eb, elo, ehi, edges, edge_thick, edge_sag, asks, group,
                              inv_mass, x0, self_group, disabled):
                        out[at + m] = eb
                        m += 1
    return m


@njit(cache=True, inline="always")
def _pack(cnt, room, buf, owner):
    """The pairs queries owner (k,) int64 found, packed from their segments of buf (query s
    wrote cnt[s + 1] - cnt[s] items from buf[room[s]]): (k,) int64 the query of each, and
    the item it found."""
    a = np.empty(cnt[owner.shape[0]], np.int64)
    b = np.empty(cnt[owner.shape[0]], np.int64)
    for s in prange(owner.shape[0]):
        for m in range(cnt[s + 1] - cnt[s]):
            a[cnt[s] + m] = owner[s]
            b[cnt[s] + m] = buf[room[s] + m]
    return a, b


@njit(cache=True, parallel=prange_only())
def find_body_contacts(lo, hi, radius, group, inv_mass, x0, tris, tri_thick, edges, edge_thick,
                       self_group, disabled, origin, cell, dims, reach, active, tri_active,
                       edge_active, edge_sag, pair_self, group_segment):
    """Scalar mirror of collision/bodies.find_body_contacts (same arguments, same pairs). The
    module docstring gives the grids and the passes: they are this kernel's own, so the
    NumPy kernel's grid (origin, cell, dims) and reach go unused."""
    n = lo.shape[0]
    ids = np.nonzero(active)[0]
    large = np.zeros(n, np.bool_)
    preach, pmean = _split(ids, lo, hi, large)
    F = tris.shape[0]
    tids = np.nonzero(tri_active)[0]
    grid = _grid(ids, lo, hi, large, preach, pmean, _mean_box(tids, lo, hi, tris))
    nt = tids.shape[0]
    tlo = np.empty((F, 3))
    thi = np.empty((F, 3))
    for s in prange(nt):
        f = tids[s]
        a = tris[f, 0]
        b = tris[f, 1]
        c = tris[f, 2]
        for k in range(3):
            tlo[f, k] = min(min(lo[a, k], lo[b, k]), lo[c, k])
            thi[f, k] = max(max(hi[a, k], hi[b, k]), hi[c, k])
    # vertices against triangles
    room = np.zeros(nt + 1, np.int64)
    for s in prange(nt):
        f = tids[s]
        room[s + 1] = _bound(tlo[f], thi[f], grid, preach)
    _prefix(room)
    buf = np.empty(room[nt], np.int64)
    cnt = np.zeros(nt + 1, np.int64)
    for s in prange(nt):
        f = tids[s]
        cnt[s + 1] = _scan(f, tlo[f], thi[f], True, buf, room[s], grid, preach, large, lo, hi,
                           tlo, thi, radius, group, inv_mass, x0, tris, tri_thick, self_group,
                           disabled, pair_self, group_segment)
    _prefix(cnt)
    vt_t, vt_v = _pack(cnt, room, buf, tids)
    # particle pairs: the particles with a radius query
    nb = 0
    for i in range(n):
        if radius[i] > 0 and active[i]:
            nb += 1
    big = np.empty(nb, np.int64)
    nb = 0
    alone = True                        # every one of them in one group
    for i in range(n):
        if radius[i] > 0 and active[i]:
            big[nb] = i
            alone = alone and group[i] == group[big[0]]
            nb += 1
    if nb > 0 and alone and not pair_self[group[big[0]]]:
        nb = 0                          # _pp_ok pairs none of them (a lone cloth): no query
        big = big[:0]
    room = np.zeros(nb + 1, np.int64)
    for q in prange(nb):
        room[q + 1] = _bound(lo[big[q]], hi[big[q]], grid, preach)
    _prefix(room)
    buf = np.empty(room[nb], np.int64)
    cnt = np.zeros(nb + 1, np.int64)
    for q in prange(nb):
        cnt[q + 1] = _scan(big[q], lo[big[q]], hi[big[q]], False, buf, room[q], grid, preach,
                           large, lo, hi, tlo, thi, radius, group, inv_mass, x0, tris,
                           tri_thick, self_group, disabled, pair_self, group_segment)
    _prefix(cnt)
    pp_i, pp_j = _pack(cnt, room, buf, big)
    # edge pairs: the edges hashed by their boxes in a grid of their own; those that ask (their
    # sag, below) query
    E = edges.shape[0]
    eids = np.nonzero(edge_active)[0]
    elo = np.empty((E, 3))
    ehi = np.empty((E, 3))
    for s in prange(eids.shape[0]):
        e = eids[s]
        a = edges[e, 0]
        b = edges[e, 1]
        for k in range(3):
            elo[e, k] = min(lo[a, k], lo[b, k])
            ehi[e, k] = max(hi[a, k], hi[b, k])
    elarge = np.zeros(E, np.bool_)
    ereach, emean = _split(eids, elo, ehi, elarge)
    asks = np.zeros(E, np.bool_)         # collision/bodies.find_body_contacts: who queries
    na = 0
    for s in range(eids.shape[0]):
        e = eids[s]
        if edge_sag[e] > 0.5 * edge_thick[e]:
            asks[e] = True
            na += 1
    qe = np.empty(na, np.int64)
    na = 0
    for s in range(eids.shape[0]):
        if asks[eids[s]]:
            qe[na] = eids[s]
            na += 1
    egrid = _grid(eids, elo, ehi, elarge, ereach, emean, _mean_box(qe, lo, hi, edges))
    room = np.zeros(na + 1, np.int64)
    for s in prange(na):
        e = qe[s]
        room[s + 1] = _bound(elo[e], ehi[e], egrid, ereach)
    _prefix(room)
    buf = np.empty(room[na], np.int64)
    cnt = np.zeros(na + 1, np.int64)
    for s in prange(na):
        e = qe[s]
        cnt[s + 1] = _scan_edges(e, elo[e], ehi[e], buf, room[s], egrid, ereach, elarge, elo,
                                 ehi, edges, edge_thick, edge_sag, asks, group, inv_mass, x0,
                                 self_group, disabled)
    _prefix(cnt)
    ee_a = np.empty(cnt[na], np.int64)
    ee_b = np.empty(cnt[na], np.int64)
    for s in prange(na):
        e = qe[s]
        for m in range(cnt[s + 1] - cnt[s]):
            other = buf[room[s] + m]
            if other < e:                    # pairs as (lower, higher)
                ee_a[cnt[s] + m] = other
                ee_b[cnt[s] + m] = e
            else:
                ee_a[cnt[s] + m] = e
                ee_b[cnt[s] + m] = other
    return pp_i, pp_j, vt_v, vt_t, ee_a, ee_b


@njit(cache=True, inline="always")
def _meets(a0, a1, a2, b0, b1, b2, g, partner_start, partner, glo, ghi):
    """Whether the box (a, b) [m] overlaps the box of a group that group g meets."""
    for r in range(partner_start[g], partner_start[g + 1]):
        o = partner[r]
        if a0 <= ghi[o, 0] and a1 <= ghi[o, 1] and a2 <= ghi[o, 2] and \
                b0 >= glo[o, 0] and b1 >= glo[o, 1] and b2 >= glo[o, 2]:
            return True
    return False


@njit(cache=True, parallel=prange_only())
def active_items(lo, hi, tris, edges, radius, self_group, runs, ga, gb, glo, ghi, everything):
    """Mirror of collision/body_stage.active_items (its docstring gives the arguments and
    the result): each item tests its own box against the boxes of the groups its group meets
    (a per-group list built from ga, gb), in parallel; the extents are exact minima and maxima,
    so the flags and extents equal the NumPy kernel's. runs is unused here."""
    group = runs[2]
    n = lo.shape[0]
    F = tris.shape[0]
    E = edges.shape[0]
    G = self_group.shape[0]
    partner_start = np.zeros(G + 1, np.int64)
    for q in range(ga.shape[0]):
        partner_start[ga[q] + 1] += 1
    for g in range(G):
        partner_start[g + 1] += partner_start[g]
    partner = np.empty(ga.shape[0], np.int64)
    fill = partner_start[:G].copy()
    for q in range(ga.shape[0]):
        partner[fill[ga[q]]] = gb[q]
        fill[ga[q]] += 1
    active = np.empty(n, np.bool_)
    tri_active = np.empty(F, np.bool_)
    edge_active = np.empty(E, np.bool_)
    for i in prange(n):
        g = group[i]
        active[i] = everything or self_group[g] or _meets(
            lo[i, 0], lo[i, 1], lo[i, 2], hi[i, 0], hi[i, 1], hi[i, 2], g, partner_start,
            partner, glo, ghi)
    for f in prange(F):
        a = tris[f, 0]
        b = tris[f, 1]
        c = tris[f, 2]
        g = group[a]
        tri_active[f] = everything or self_group[g] or _meets(
            min(min(lo[a, 0], lo[b, 0]), lo[c, 0]), min(min(lo[a, 1], lo[b, 1]), lo[c, 1]),
            min(min(lo[a, 2], lo[b, 2]), lo[c, 2]), max(max(hi[a, 0], hi[b, 0]), hi[c, 0]),
            max(max(hi[a, 1], hi[b, 1]), hi[c, 1]), max(max(hi[a, 2], hi[b, 2]), hi[c, 2]), g,
            partner_start, partner, glo, ghi)
    for e in prange(E):
        a = edges[e, 0]
        b = edges[e, 1]
        g = group[a]
        edge_active[e] = everything or self_group[g] or _meets(
            min(lo[a, 0], lo[b, 0]), min(lo[a, 1], lo[b, 1]), min(lo[a, 2], lo[b, 2]),
            max(hi[a, 0], hi[b, 0]), max(hi[a, 1], hi[b, 1]), max(hi[a, 2], hi[b, 2]), g,
            partner_start, partner, glo, ghi)
    any_tri = False
    for f in range(F):
        if tri_active[f]:
            any_tri = True
            break
    extents = np.zeros((5, 3))
    for k in range(3):
        extents[3, k] = np.inf
        extents[4, k] = -np.inf
    for i in range(n):
        if not any_tri and not radius[i] > 0:
            active[i] = False
        if active[i]:
            for k in range(3):
                extents[0, k] = max(extents[0, k], hi[i, k] - lo[i, k])
    for f in range(F):
        if tri_active[f]:
            a = tris[f, 0]
            b = tris[f, 1]
            c = tris[f, 2]
            for k in range(3):
                extents[1, k] = max(extents[1, k], max(max(hi[a, k], hi[b, k]), hi[c, k])
                                    - min(min(lo[a, k], lo[b, k]), lo[c, k]))
    for e in range(E):
        if edge_active[e]:
            a = edges[e, 0]
            b = edges[e, 1]
            for k in range(3):
                extents[2, k] = max(extents[2, k], max(hi[a, k], hi[b, k])
                                    - min(lo[a, k], lo[b, k]))
    for i in range(n):
        if active[i]:
            for k in range(3):
                extents[3, k] = min(extents[3, k], lo[i, k] - extents[0, k])
                extents[4, k] = max(extents[4, k], hi[i, k])
    for e in range(E):
        if edge_active[e]:
            a = edges[e, 0]
            b = edges[e, 1]
            for k in range(3):
                extents[3, k] = min(extents[3, k], min(lo[a, k], lo[b, k]) - extents[2, k])
                extents[4, k] = max(extents[4, k], max(hi[a, k], hi[b, k]))
    return active, tri_active, edge_active, extents


@njit(cache=True, inline="always")
def _unit_face_normal(x, tris, f):
    """Triangle f's unit normal (collision/pairs.face_normals' operations)."""
    n0, n1, n2 = _face_normal(x, tris, f)
    ln = max(math.sqrt(n0 * n0 + n1 * n1 + n2 * n2), 1e-300)
    return n0 / ln, n1 / ln, n2 / ln


@njit(cache=True, parallel=prange_only())
def edge_sag(x, tris, edges, edge_face, active):
    """Mirror of collision/body_stage.edge_sag (its docstring gives the arguments), edge by
    edge in parallel."""
    E = edges.shape[0]
    sag = np.empty(E)
    for e in prange(E):
        f1 = edge_face[e, 1]
        if not (active[e] and f1 >= 0):
            sag[e] = np.inf
            continue
        a0, a1, a2 = _unit_face_normal(x, tris, edge_face[e, 0])
        b0, b1, b2 = _unit_face_normal(x, tris, f1)
        c = a0 * b0 + a1 * b1 + a2 * b2
        p = edges[e, 0]
        q = edges[e, 1]
        d0 = x[q, 0] - x[p, 0]
        d1 = x[q, 1] - x[p, 1]
        d2 = x[q, 2] - x[p, 2]
        half = 0.5 * math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        sag[e] = half * math.sqrt(max(1.0 - c, 0.0) / max(1.0 + c, 1e-12))
    return sag


@njit(cache=True, parallel=prange_only())
def sweep_pairs(lo, hi, limit):
    """Mirror of collision/body_stage.sweep_pairs (the same pairs in the same order): the
    candidates counted per box, tested and counted again in parallel, then written in the
    sweep's order."""
    m = lo.shape[0]
    none = np.zeros(0, np.int64)
    if m < 2:
        return none, none, True
    ax = 0
    best = -np.inf
    for k in range(3):
        top = -np.inf
        low = np.inf
        for i in range(m):
            top = max(top, lo[i, k] + hi[i, k])
            low = min(low, lo[i, k] + hi[i, k])
        if top - low > best:        # np.argmax: the first of equal spreads
            best = top - low
            ax = k
    order = np.argsort(lo[:, ax], kind="mergesort")
    keys = np.empty(m)
    for s in range(m):
        keys[s] = lo[order[s], ax]
    total = 0
    end = np.empty(m, np.int64)
    for s in range(m):
        end[s] = np.searchsorted(keys, hi[order[s], ax], side="right")
        total += max(end[s] - (s + 1), 0)
    if total > limit:
        return none, none, False
    cnt = np.zeros(m + 1, np.int64)
    for s in prange(m):
        a = order[s]
        c = 0
        for t in range(s + 1, end[s]):
            if _boxes_meet(lo, hi, a, order[t]):
                c += 1
        cnt[s + 1] = c
    _prefix(cnt)
    pa = np.empty(cnt[m], np.int64)
    pb = np.empty(cnt[m], np.int64)
    for s in prange(m):
        a = order[s]
        w = cnt[s]
        for t in range(s + 1, end[s]):
            b = order[t]
            if _boxes_meet(lo, hi, a, b):
                pa[w] = min(a, b)
                pb[w] = max(a, b)
                w += 1
    return pa, pb, True


@njit(cache=True, inline="always")
def _boxes_meet(lo, hi, a, b):
    return (lo[a, 0] <= hi[b, 0] and lo[a, 1] <= hi[b, 1] and lo[a, 2] <= hi[b, 2]
            and hi[a, 0] >= lo[b, 0] and hi[a, 1] >= lo[b, 1] and hi[a, 2] >= lo[b, 2])
