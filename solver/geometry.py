"""Mesh measures the Builder and the Blender side both need, in NumPy (no bpy), so tests reach
them without Blender: polygon areas (Newell), enclosed volumes, the rigid fit of a body to its
particles (Kabsch), the support sticks and exposed areas of edge-only strands and the
primitive a collider mesh is (Collider Shape Auto).

Polygons come as (corners (l,) int64 vertex ids, face_start (k,) int64, face_size (k,) int64),
the form mesh.normalize_faces makes and Blender's loops give.
"""

import numpy as np


def polygon_areas(x, corners, face_start, face_size):
    """(k,) float64 area of each polygon [m^2] over positions x (n, 3) [m]: half the length of
    Newell's vector area sum_i x_i x x_(i+1), exact for planar polygons of any shape and the
    projected area of a non-planar one's best plane."""
    owner = np.repeat(np.arange(face_size.size), face_size)
    local = np.arange(corners.size) - face_start[owner]
    nxt = face_start[owner] + (local + 1) % face_size[owner]
    cross = np.cross(x[corners], x[corners[nxt]])
    # bincount adds each face's corners in corner order, as np.add.at does, at a third of its time
    k = face_size.size
    vec = np.stack([np.bincount(owner, weights=cross[:, d], minlength=k) for d in range(3)],
                   axis=1)
    return 0.5 * np.linalg.norm(vec, axis=1)


def fan_triangles(corners, face_start, face_size):
    """(t, 3) int64 triangle fan (first corner, k, k + 1) of every polygon."""
    tris = np.maximum(face_size - 2, 0)
    pid = np.repeat(np.arange(face_size.size), tris)
    k = np.arange(pid.size) - (np.cumsum(tris) - tris)[pid]
    first = face_start[pid]
    return np.stack([corners[first], corners[first + 1 + k], corners[first + 2 + k]],
                    axis=1).astype(np.int64)


def signed_volume(x, tris):
    """Signed volume [m^3] enclosed by triangles (T, 3) int64 over positions x (n, 3) [m]
    (positive when they wind counter-clockwise seen from outside)."""
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    return float(np.einsum("ij,ij->i", np.cross(a, b), c).sum() / 6.0)


def closed_edges(corners, face_start, face_size):
    """Whether every edge of the polygons is shared by exactly two of them (a closed surface)."""
    owner = np.repeat(np.arange(face_size.size), face_size)
    local = np.arange(corners.size) - face_start[owner]
    nxt = corners[face_start[owner] + (local + 1) % face_size[owner]]
    edges = np.sort(np.stack([corners, nxt], axis=1), axis=1)
    if edges.size == 0:
        return False
    _, uses = np.unique(edges, axis=0, return_counts=True)
    return bool(np.all(uses == 2))


def primitive_shape(x, corners, face_start, face_size, by_vertices=False):
    """What Collider Shape Auto reads a collider mesh as: ("plane" | "sphere" | "box" |
    "cylinder" | "mesh", centre (3,) [m] of its bounding box in x's frame, size keywords for
    Builder.add_collider), over its vertices x (n, 3) [m] (object space) and its polygons.

    An open mesh flat in its local XY is a plane (the half-space below it: the ground an artist
    means by one; a finite tile or shelf needs Mesh, see README "Known limits"). Every other
    primitive is a solid, so only a closed mesh (every edge in exactly two polygons: a thin
    pane or table top modelled as a closed box is a box, not a plane)
    whose vertices lie as Blender's UV or ico sphere, cube or capped cylinder primitives lay
    theirs, under any scale of the object, is read as that primitive; any other mesh is the
    mesh itself (collision/mesh.py: finite, solid when closed, two-sided when open). An open box
    (its top deleted) or a pipe (its caps deleted) is not a solid: read by its vertices alone
    they became a solid box and a solid cylinder, which lifted a crate dropped into the box
    onto its rim. A mesh with no polygons reads as "mesh" (whose build says it has no faces;
    an edge-only circle was a plane). by_vertices: the reading of before 2026-12-01, by the
    vertices alone (no test of faces, closedness or volume), which the add-on's settings hash
    compares with this one to call a bake made then outdated."""
    lo, hi = x.min(axis=0), x.max(axis=0)
    centre = (lo + hi) / 2
    ext = hi - lo
    q = x - centre
    size = float(ext.max())
    tol = 1e-3 * max(size, 1e-9)
    closed = bool(face_size.size) and closed_edges(corners, face_start, face_size)
    if ext[2] <= tol and len(x) >= 3 and (by_vertices or (face_size.size and not closed)):
        return "plane", centre, {}
    if not by_vertices and not closed:
        return "mesh", centre, {}
    # a sphere's bounding box is (nearly) a cube. (Was: only "every vertex at ext.max() / 2
    # from the centre", which every vertex of a thin cylinder or long thin box also passes
    # within the 2 % tolerance, e.g. a 3 m x 4 cm pole became a 1.5 m sphere; the check on
    # the extents rejects those while coarse sphere primitives, whose smallest extent is
    # >= 0.65 x the largest, still pass.)
    dist = np.linalg.norm(q, axis=1)
    if ext.min() >= 0.5 * ext.max() and np.all(np.abs(dist - ext.max() / 2) <= 2e-2 * size):
        return "sphere", centre, {"radius": float(dist.max())}
    # every vertex at a corner of the box, and the box's volume enclosed (four corners of a
    # cube joined as a tetrahedron enclose a third of it)
    if np.all(np.isclose(np.abs(q), ext / 2, atol=tol)) and (by_vertices or abs(abs(
            signed_volume(x, fan_triangles(corners, face_start, face_size))) - np.prod(ext))
            <= 1e-2 * np.prod(ext)):
        return "box", centre, {"size": tuple(float(e) for e in ext)}
    r_xy = np.hypot(q[:, 0], q[:, 1])
    if np.all(np.isclose(np.abs(q[:, 2]), ext[2] / 2, atol=tol)) and \
            np.all(np.abs(r_xy - ext[0] / 2) <= 1e-2 * size) and \
            abs(ext[0] - ext[1]) <= 2e-2 * size:
        return "cylinder", centre, {"radius": float(max(ext[0], ext[1]) / 2),
                                    "depth": float(ext[2])}
    return "mesh", centre, {}


def rigid_transform(rest, current):
    """(4, 4) float64 rigid world transform (rotation, translation) taking rest points (n, 3)
    onto current ones (n, 3) in the least-squares sense (Kabsch; never a reflection)."""
    c0, c1 = rest.mean(axis=0), current.mean(axis=0)
    h = (rest - c0).T @ (current - c1)
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    r = vt.T @ np.diag([1.0, 1.0, d]) @ u.T
    m = np.eye(4)
    m[:3, :3] = r
    m[:3, 3] = c1 - r @ c0
    return m


def strand_supports(edges):
    """(s, 2) int64 support sticks of edge-only strands (Jakobsen's plant support sticks): for
    every two edges (e, 2) int64 meeting at a vertex, a stick between their far ends; sorted
    pairs, each once."""
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    a = np.concatenate([e[:, 0], e[:, 1]])
    other = np.concatenate([e[:, 1], e[:, 0]])
    order = np.argsort(a, kind="stable")
    a, other = a[order], other[order]
    if a.size == 0:
        return np.zeros((0, 2), np.int64)
    # every pair (i, j), i < j, of entries that share a vertex: entry i pairs with the entries
    # after it in its vertex's group
    starts = np.nonzero(np.r_[True, a[1:] != a[:-1]])[0]
    ends = np.r_[starts[1:], a.size]
    group_end = np.repeat(ends, ends - starts)             # (entries,) end of each one's group
    after = group_end - np.arange(a.size) - 1              # (entries,) partners after it
    first = np.repeat(np.arange(a.size), after)
    offset = np.arange(first.size) - np.repeat(np.cumsum(after) - after, after)
    pairs = np.sort(np.stack([other[first], other[first + 1 + offset]], axis=1), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(pairs, axis=0) if pairs.size else np.zeros((0, 2), np.int64)


def strand_areas(x, edges, width):
    """(n,) float64 exposed area [m^2] of each vertex of edge-only strands: half of each incident
    edge's length times the strand's width [m] (wind and drag act through it)."""
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    length = np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1)
    return np.bincount(e.ravel(), weights=np.repeat(0.5 * length, 2), minlength=len(x)) * width


def segment_distances(a0, a1, b0, b1):
    """(k,) [m] the distance between segments a0-a1 and b0-b1 ((k, 3) each): Ericson, "Real-Time
    Collision Detection" (2005), 5.1.9, vectorised, degenerate segments included."""
    d1, d2, r = a1 - a0, b1 - b0, a0 - b0
    a = np.einsum("ij,ij->i", d1, d1)
    e = np.einsum("ij,ij->i", d2, d2)
    f = np.einsum("ij,ij->i", d2, r)
    c = np.einsum("ij,ij->i", d1, r)
    b = np.einsum("ij,ij->i", d1, d2)
    tiny = 1e-300
    sa, se = np.maximum(a, tiny), np.maximum(e, tiny)
    denom = a * e - b * b
    # general case: s on the lines' closest pair (0 for parallel lines), clamped; then t for it
    s = np.where(denom > tiny, np.clip((b * f - c * e) / np.maximum(denom, tiny), 0.0, 1.0), 0.0)
    t = (b * s + f) / se
    t_c = np.clip(t, 0.0, 1.0)
    s = np.where(t != t_c, np.clip((b * t_c - c) / sa, 0.0, 1.0), s)
    # a point against a segment, a segment against a point, two points
    s = np.where(e <= tiny, np.clip(-c / sa, 0.0, 1.0), s)
    t_c = np.where(e <= tiny, 0.0, t_c)
    s = np.where(a <= tiny, 0.0, s)
    t_c = np.where(a <= tiny, np.where(e <= tiny, 0.0, np.clip(f / se, 0.0, 1.0)), t_c)
    p = a0 + d1 * s[:, None]
    q = b0 + d2 * t_c[:, None]
    return np.linalg.norm(p - q, axis=1)


def _cells_of_boxes(lo, hi, origin, cell, dims):
    """For boxes (k, 3): (box id, cell key) of every grid cell each box overlaps."""
    c0 = np.clip(np.floor((lo - origin) / cell).astype(np.int64), 0, dims - 1)
    c1 = np.clip(np.floor((hi - origin) / cell).astype(np.int64), 0, dims - 1)
    span = c1 - c0 + 1
    count = span.prod(axis=1)
    box = np.repeat(np.arange(len(lo)), count)
    local = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    s1, s2 = span[box, 1], span[box, 2]
    cx, cy, cz = local // (s1 * s2) + c0[box, 0], (local // s2) % s1 + c0[box, 1], \
        local % s2 + c0[box, 2]
    return box, (cx * dims[1] + cy) * dims[2] + cz


def self_intersections(x, tris):
    """(k, 2) int64 (edge's lower vertex id * n + its higher, triangle) of every mesh edge that
    passes through a triangle it does not touch, for positions x (n, 3) [m] and triangles
    (F, 3) int64: the mesh's surface crosses itself there (two layers of cloth that passed
    through each other leave such pairs until they come apart again). Uniform-grid broad phase
    (every edge and triangle in each cell its box overlaps, cells the size of a typical
    triangle), exact segment-triangle test (Moller and Trumbore, "Fast, minimum storage
    ray-triangle intersection", 1997); no Python loop over elements."""
    x = np.asarray(x, np.float64)
    tris = np.asarray(tris, np.int64)
    n = len(x)
    if not len(tris):
        return np.zeros((0, 2), np.int64)
    e = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    e = np.unique(e, axis=0)
    tlo, thi = x[tris].min(axis=1), x[tris].max(axis=1)
    elo, ehi = np.minimum(x[e[:, 0]], x[e[:, 1]]), np.maximum(x[e[:, 0]], x[e[:, 1]])
    cell = max(float(np.median(np.max(thi - tlo, axis=1))), 1e-9)
    origin = np.minimum(tlo.min(axis=0), elo.min(axis=0))
    span = np.maximum(thi.max(axis=0), ehi.max(axis=0)) - origin
    dims = np.floor(span / cell).astype(np.int64) + 1
    if float(np.prod(dims.astype(np.float64))) > 2.0 ** 62:      # keys must fit an int64
        cell = float(np.max(span)) / 2 ** 20
        dims = np.floor(span / cell).astype(np.int64) + 1
    tb, tkey = _cells_of_boxes(tlo, thi, origin, cell, dims)
    order = np.argsort(tkey, kind="stable")
    ks, tb = tkey[order], tb[order]
    eb, ekey = _cells_of_boxes(elo, ehi, origin, cell, dims)
    a = np.searchsorted(ks, ekey, "left")
    cnt = np.searchsorted(ks, ekey, "right") - a
    pe = np.repeat(eb, cnt)
    pt = tb[np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(a, cnt)]
    key = np.unique(pe * len(tris) + pt)                      # each pair once
    pe, pt = key // len(tris), key % len(tris)
    t = tris[pt]
    p, q = e[pe, 0], e[pe, 1]
    touch = (t == p[:, None]).any(axis=1) | (t == q[:, None]).any(axis=1)
    box = np.all((elo[pe] <= thi[pt]) & (ehi[pe] >= tlo[pt]), axis=1)
    keep = ~touch & box
    pe, pt, t, p, q = pe[keep], pt[keep], t[keep], p[keep], q[keep]
    a, e1, e2 = x[t[:, 0]], x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]]
    d = x[q] - x[p]
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, h)
    # an edge in the triangle's plane (a flat sheet's own edges) does not pass through it
    scale = np.sqrt(np.einsum("ij,ij->i", d, d) * np.einsum("ij,ij->i", e1, e1)
                    * np.einsum("ij,ij->i", e2, e2))
    ok = np.abs(det) > 1e-9 * scale
    inv = 1.0 / np.where(ok, det, 1.0)
    s = x[p] - a
    u = np.einsum("ij,ij->i", s, h) * inv
    qv = np.cross(s, e1)
    v = np.einsum("ij,ij->i", d, qv) * inv
    w = np.einsum("ij,ij->i", e2, qv) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (w >= 0) & (w <= 1)
    out = np.column_stack([p[hit] * n + q[hit], pt[hit]]).astype(np.int64)
    return np.unique(out, axis=0) if len(out) else out
