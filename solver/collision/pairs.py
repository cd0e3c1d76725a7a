"""The narrow filter of the body contacts' candidate pairs (the kernel table's filter_pairs;
kernels/compiled_pairs.py is its compiled mirror): which of the broad phase's pairs can meet
this step, and on which side (collision/bodies.py's module docstring gives the constraints and
the sides; BodyContacts._store in body_stage.py sorts the pairs before and stores them after,
through store_pairs below, the kernel table's too).

For each pair, at the step's start (x), with velocities v = (x - x*) / h:
- two particles (i, j): kept when |x_i - x_j| <= r_i + r_j + 2 SLACK + reach, where reach =
  REACH (|v_i - v_j| + max |v|) dt + |a| dt^2 / 2 (one may be stopped while the other falls);
- a vertex v and a triangle (a, b, c), normal n = (b - a) x (c - a): kept when its distance
  to the face's plane dn is within reach (on the solid side only, for a solid face: behind it
  at most the band, BAND or half the body's depth behind the face), when its projection lies
  in the face's prism grown by the relative motion along the face, and, for a vertex of a
  solid surface, when its own outward normal opposes the face's (a cube's corner on the rim
  of a coplanar side face of its neighbour is no contact with that face); the side is +1 for a
  solid face or a vertex in front of a two-sided one, else -1;
- two edges (p, q), (u, w): kept when the lines are not parallel, their closest points lie
  within reach of both segments and of each other, and a solid edge faces the other; the side
  is the solid edges' outward side, or the side the two two-sided edges are on now.

Every dot product is written out by components, left to right (einsum adds in an order of its
own), so the compiled mirror computes the same bits and both backends keep the same pairs.
"""

import numpy as np

from .bodies import BAND, EDGES, PAIR, PARALLEL, SEGMENTS, SLACK, VERTEX_TRI

# a pair is kept when it can meet within the step: its gap at the step's start at most the
# contact distance + 2 SLACK + REACH (|relative velocity| + the faster's speed) dt + |a| dt^2
REACH = 1.5


def dot_rows(a, b):
    """(k,) row-wise dot products of (k, 3) arrays, component by component."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _cross(a, b):
    """(k, 3) row-wise cross products."""
    return np.column_stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                            a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                            a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]])


def _speed_reach(vel, rel, ids, dt, g_dt2):
    """(k,) [m] how far the particles of pairs may close in on each other this step: their
    relative speed, and the fastest one's speed (another contact may stop the other), times
    REACH dt, plus |a| dt^2 / 2 (one may be stopped while the other falls from rest)."""
    fastest = np.zeros(len(rel))
    for i in ids:
        fastest = np.maximum(fastest, dot_rows(vel[i], vel[i]))
    speed = np.sqrt(dot_rows(rel, rel)) + np.sqrt(fastest)
    return REACH * speed * dt + g_dt2


def _along(v, unit):
    """(k,) the size of vectors v (k, 3) along the planes of unit normals (k, 3)."""
    t = v - dot_rows(v, unit)[:, None] * unit
    return np.sqrt(dot_rows(t, t))


def face_normals(x, tris):
    """(F, 3) unit normals of triangles (F, 3) (0 for degenerate ones)."""
    nrm = _cross(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]])
    return nrm / np.maximum(np.sqrt(dot_rows(nrm, nrm)), 1e-300)[:, None]


def vertex_out(x, tris, solid):
    """(n, 3) outward normal of each particle on a solid surface: the sum of its solid faces'
    unit normals, face after face (0 elsewhere)."""
    out = np.zeros((len(x), 3))
    t = tris[solid]
    if len(t):
        nrm = face_normals(x, t)
        ids = t.ravel()
        for k in range(3):
            out[:, k] = np.bincount(ids, weights=np.repeat(nrm[:, k], 3), minlength=len(x))
    return out


def _edge_out(x, tris, solid, edge_face, e):
    """(k, 3) outward normal of edges e (k,): the sum of its solid faces' unit normals."""
    out = np.zeros((len(e), 3))
    for j in range(2):
        fc = edge_face[e, j]
        ok = fc >= 0
        ok[ok] = solid[fc[ok]]
        t = tris[fc[ok]]
        nrm = _cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])
        ln = np.sqrt(dot_rows(nrm, nrm))
        out[ok] += nrm / np.where(ln > 0, ln, 1.0)[:, None]
    return out


def _vertex_tri(x, vel, acc, dt, g_dt2, radius, tris, solid, tri_thick, tri_depth, tv, tt):
    """Keep mask and side of the vertex-triangle pairs (tv, tt) (module docstring)."""
    a, b, c = tris[tt, 0], tris[tt, 1], tris[tt, 2]
    e0, e1 = x[b] - x[a], x[c] - x[a]
    nrm = _cross(e0, e1)
    d = x[tv] - x[a]
    dn = dot_rows(d, nrm)
    ln = np.sqrt(dot_rows(nrm, nrm))
    dn = np.where(ln > 0, dn / np.where(ln > 0, ln, 1.0), 0.0)
    dist = radius[tv] + tri_thick[tt]
    face_solid = solid[tt]
    rel = vel[tv] - (vel[a] + vel[b] + vel[c]) / 3.0
    band = np.maximum(dist + BAND + np.sqrt(dot_rows(rel, rel)) * dt, 0.5 * tri_depth[tt])
    # near enough to meet this step: within the pair's reach of the face's plane and of its
    # prism (a triangle's barycentric of a point outside an edge by l is >= -l / h, h its
    # smallest height)
    reach = dist + 2 * SLACK + _speed_reach(vel, rel, (tv, a, b, c), dt, g_dt2)
    keep = (dn <= reach) & (face_solid | (dn >= -reach))
    # sideways only their relative motion along the face counts (a stop changes the approach,
    # not that; a layer landing on another at 2 m/s closes 8 cm in a step at 24 fps, but does
    # not move sideways), and of the fall of one while the other is stopped, its part along
    # the face. The contact acts only inside the face's prism, so its distance does not count
    # sideways (layers of cloth resting on each other would otherwise pair every vertex with
    # the faces around it in its own layer)
    unit = nrm / np.where(ln > 0, ln, 1.0)[:, None]
    fall = np.maximum(_along(acc[tv], unit), _along((acc[a] + acc[b] + acc[c]) / 3.0, unit))
    side_reach = 2 * SLACK + REACH * _along(rel, unit) * dt + 0.5 * fall * dt * dt
    # the smallest barycentric coordinate of the vertex projected on the face, and the face's
    # smallest height
    d00, d01, d11 = dot_rows(e0, e0), dot_rows(e0, e1), dot_rows(e1, e1)
    d20, d21 = dot_rows(d, e0), dot_rows(d, e1)
    den = d00 * d11 - d01 * d01
    ok = den > 0
    den = np.where(ok, den, 1.0)
    bb = (d11 * d20 - d01 * d21) / den
    bc = (d00 * d21 - d01 * d20) / den
    bary = np.where(ok, np.minimum(np.minimum(bb, bc), 1.0 - bb - bc), 0.0)
    e2 = e1 - e0
    longest = np.sqrt(np.maximum(np.maximum(d00, d11), dot_rows(e2, e2)))
    height = np.maximum(ln / np.maximum(longest, 1e-300), 1e-300)
    keep &= bary >= -(side_reach / height)
    # a vertex behind a solid face by more than the band is beyond the body, not in it
    keep &= ~face_solid | (dn >= -band)
    # a vertex of a solid touches only solid faces that face it
    nv = vertex_out(x, tris, solid)[tv]
    facing = dot_rows(nv, nrm)
    keep &= ~face_solid | (facing < 0) | ~np.any(nv != 0, axis=1)
    side = np.where(face_solid | (dn >= 0), 1.0, -1.0)
    return keep, side


def _edge_edge(x, vel, dt, g_dt2, tris, solid, edges, edge_face, edge_thick, ea, eb):
    """Keep mask, side and (k, 3) unit normal (q - p) x (w - u) of the edge pairs (ea, eb) at
    the step's start (module docstring)."""
    p, q, u, w = edges[ea, 0], edges[ea, 1], edges[eb, 0], edges[eb, 1]
    d1, d2, r = x[q] - x[p], x[w] - x[u], x[p] - x[u]
    n = _cross(d1, d2)
    ln = np.sqrt(dot_rows(n, n))
    a, e = dot_rows(d1, d1), dot_rows(d2, d2)
    keep = ln * ln > PARALLEL * a * e
    n = n / np.where(ln > 0, ln, 1.0)[:, None]
    b = dot_rows(d1, d2)
    den = np.where(keep, a * e - b * b, 1.0)
    c, f = dot_rows(d1, r), dot_rows(d2, r)
    sp_ = (b * f - c * e) / den
    tp_ = (a * f - b * c) / den
    sp, tp = np.clip(sp_, 0.0, 1.0), np.clip(tp_, 0.0, 1.0)
    dn = dot_rows(r + sp[:, None] * d1 - tp[:, None] * d2, n)
    out_a = _edge_out(x, tris, solid, edge_face, ea)
    out_b = _edge_out(x, tris, solid, edge_face, eb)
    solid_a, solid_b = np.any(out_a != 0, axis=1), np.any(out_b != 0, axis=1)
    any_solid = solid_a | solid_b
    toward = dot_rows(out_b - out_a, n)                      # direction from b to a, solids
    side = np.where(any_solid, np.where(toward >= 0, 1.0, -1.0), np.where(dn >= 0, 1.0, -1.0))
    dist = edge_thick[ea] + edge_thick[eb]
    rel = (vel[p] + vel[q] - vel[u] - vel[w]) * 0.5
    band = dist + BAND + np.sqrt(dot_rows(rel, rel)) * dt
    keep &= ~any_solid | ((np.abs(toward) > 1e-6) & (side * dn >= -band))
    # near enough to meet this step: the lines within reach, the closest points within reach
    # of both segments; sideways (along the edges' common plane) only the relative motion in
    # that plane
    reach = dist + 2 * SLACK + _speed_reach(vel, rel, (p, q, u, w), dt, g_dt2)
    side_reach = dist + 2 * SLACK + REACH * _along(rel, n) * dt + g_dt2
    ma = side_reach / np.sqrt(np.maximum(a, 1e-300))
    mb = side_reach / np.sqrt(np.maximum(e, 1e-300))
    keep &= (np.abs(dn) <= reach) & (sp_ >= -ma) & (sp_ <= 1 + ma) & (tp_ >= -mb) & \
        (tp_ <= 1 + mb)
    # each solid edge faces the other: its outward normal against the push it gets
    m = side[:, None] * n
    keep &= ~solid_a | (dot_rows(out_a, m) < -1e-6)
    keep &= ~solid_b | (dot_rows(out_b, m) > 1e-6)
    return keep, side, n


def filter_pairs(x, xp, h, dt, acc, g_dt2, radius, tris, solid, tri_thick, tri_depth, edges,
                 edge_face, edge_thick, pi, pj, tv, tt, ea, eb):
    """The narrow filter (module docstring). x, xp (n, 3) [m] positions now and a substep
    ago (h [s] apart); dt [s] the step; acc (n, 3) [m/s^2]; g_dt2 [m] the largest |a| dt^2 / 2;
    radius (n,) [m]; tris (F, 3) int64, solid (F,) bool, tri_thick, tri_depth (F,) [m];
    edges (E, 2) int64, edge_face (E, 2) int64 (-1: none), edge_thick (E,) [m]; the pairs:
    particles pi, pj (P,), vertices tv and triangles tt (T,), edges ea, eb (Q,), int64.
    Returns near (P,) bool, t_keep (T,) bool, t_side (T,) +-1, e_keep (Q,) bool, e_side (Q,)
    +-1 and e_normal (Q, 3) the edge pairs' unit normals."""
    vel = (x - xp) / h
    rel = vel[pi] - vel[pj]
    gap = np.sqrt(dot_rows(x[pi] - x[pj], x[pi] - x[pj]))
    near = gap <= radius[pi] + radius[pj] + 2 * SLACK + \
        _speed_reach(vel, rel, (pi, pj), dt, g_dt2)
    t_keep, t_side = _vertex_tri(x, vel, acc, dt, g_dt2, radius, tris, solid, tri_thick,
                                 tri_depth, tv, tt)
    e_keep, e_side, e_normal = _edge_edge(x, vel, dt, g_dt2, tris, solid, edges, edge_face,
                                          edge_thick, ea, eb)
    return near, t_keep, t_side, e_keep, e_side, np.ascontiguousarray(e_normal)


def corner_mean(f, corners):
    """(m,) the mean of f (n,) over each row of corners (m, k) int64 (summed left to right):
    a contact side's friction from its corners'. k equal corners give exactly their value
    ((f + f + f) / 3 need not be f), so a contact between equal sides keeps it to the bit."""
    total = f[corners[:, 0]]
    same = np.ones(len(corners), bool)
    for j in range(1, corners.shape[1]):
        total = total + f[corners[:, j]]
        same &= f[corners[:, j]] == f[corners[:, 0]]
    return np.where(same, f[corners[:, 0]], total / corners.shape[1])


def store_pairs(pi, pj, tv, tt, ea, eb, near, t_keep, t_side, e_keep, e_side, e_normal, sa, sb,
                tris, edges, segments, radius, tri_thick, edge_thick, seg_radius, mu):
    """The pairs filter_pairs kept, as the body contacts' arrays (Contacts.set_body_contacts'):
    the particle pairs (pi, pj) where near, the vertex-triangle pairs (tv, tt) where t_keep,
    with sides t_side, the edge pairs (ea, eb) where e_keep, with sides e_side and normals
    e_normal (filter_pairs' results), then the capsule pairs sa, sb (k,) int64 (rows of
    segments (s, 2) int64, radii seg_radius (s,) [m]), in that order: idx (K, 4) int64, kind
    (K,) int64, side (K,) +-1 or 0, dist (K,) [m] the sum of the two sides' radii or
    thicknesses, mu (K,) the geometric mean of the two sides' friction (a triangle's, an
    edge's or an axis's side the corner_mean of its corners' mu (n,); equal sides keep their
    value to the bit, a side of 0 makes the contact frictionless, as against a collider), jit
    (K, 3): an edge pair's normal at the step's start (it keeps its sense), zero for the
    others (the caller draws the particle and capsule pairs' jitter: body_stage._store)."""
    pi, pj = pi[near], pj[near]
    tv, tt, side = tv[t_keep], tt[t_keep], t_side[t_keep]
    ea, eb, e_side, e_normal = ea[e_keep], eb[e_keep], e_side[e_keep], e_normal[e_keep]
    P, T, E, S = len(pi), len(tv), len(ea), len(sa)
    K = P + T + E + S
    idx = np.full((K, 4), -1, np.int64)
    idx[:P, 0], idx[:P, 1] = pi, pj
    idx[P:P + T, 0] = tv
    idx[P:P + T, 1:] = tris[tt]
    idx[P + T:P + T + E, :2] = edges[ea]
    idx[P + T:P + T + E, 2:] = edges[eb]
    idx[P + T + E:, :2] = segments[sa]
    idx[P + T + E:, 2:] = segments[sb]
    kind = np.empty(K, np.int64)
    kind[:P], kind[P:P + T], kind[P + T:P + T + E], kind[P + T + E:] = \
        PAIR, VERTEX_TRI, EDGES, SEGMENTS
    jit = np.zeros((K, 3))
    jit[P + T:P + T + E] = e_normal
    return (idx, kind, np.r_[np.zeros(P), side, e_side, np.zeros(S)],
            np.r_[radius[pi] + radius[pj], radius[tv] + tri_thick[tt],
                  edge_thick[ea] + edge_thick[eb], seg_radius[sa] + seg_radius[sb]],
            np.sqrt(np.r_[mu[pi] * mu[pj], mu[tv] * corner_mean(mu, tris[tt]),
                          corner_mean(mu, edges[ea]) * corner_mean(mu, edges[eb]),
                          corner_mean(mu, segments[sa]) * corner_mean(mu, segments[sb])]), jit)
