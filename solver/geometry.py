"""Mesh measures the Builder and the Blender side both need, in NumPy (no bpy), so tests reach
them without Blender: polygon areas (Newell), enclosed volumes, the rigid fit of a body to its
particles (Kabsch) and the support sticks and exposed areas of edge-only strands.

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
