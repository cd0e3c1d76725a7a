"""Cloth topology from a polygon mesh: the sticks of Jakobsen's cloth and the CS 426 springs.

From faces (triangles, quads or n-gons) this derives, once at build time:

- stretch: every polygon edge (CS 426 "structural springs");
- shear: the diagonals of each polygon with more than three corners (CS 426 "shear springs";
  a triangle's own edges already fix its shear);
- bend: for every edge shared by two faces, and each end ``e`` of it, a stick between the
  neighbours of ``e`` in the two faces that are not on the shared edge. On a quad grid these are
  exactly Jakobsen's support sticks / the CS 426 bend springs that skip one vertex; on triangles
  they join the two vertices opposite the shared edge.

Everything is vectorised over faces; polygons are handled through a flat corner array.
"""

import numpy as np


def normalize_faces(faces, n_vertices, name="faces"):
    """Faces as a flat corner array.

    faces: (k, 3) or (k, 4) int array, or a sequence of k int sequences (n-gons).
    Returns (corners (s,) int64 vertex ids of all face corners in order,
             face_start (k,) int64 offset of each face's first corner,
             face_size (k,) int64 corner count of each face).
    Raises ValueError naming ``name`` for out-of-range ids, faces with fewer than three corners
    or a repeated vertex in one face.
    """
    if isinstance(faces, np.ndarray) and faces.ndim == 2:
        arr = faces
        if not np.issubdtype(arr.dtype, np.integer):
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ValueError(f"{name}: face indices must be integers")
            arr = arr.astype(np.int64)
        k, s = arr.shape
        corners = arr.astype(np.int64).ravel()
        face_size = np.full(k, s, dtype=np.int64)
    else:
        rows = [np.asarray(f).ravel() for f in faces]
        for r in rows:
            if r.size and not np.issubdtype(r.dtype, np.integer):
                raise ValueError(f"{name}: face indices must be integers")
        face_size = np.array([r.size for r in rows], dtype=np.int64)
        corners = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    if face_size.size == 0:
        raise ValueError(f"{name}: no faces given")
    if np.any(face_size < 3):
        bad = int(np.argmax(face_size < 3))
        raise ValueError(f"{name}: face {bad} has {int(face_size[bad])} corners; at least 3 needed")
    if corners.size and (corners.min() < 0 or corners.max() >= n_vertices):
        raise ValueError(f"{name}: vertex index out of range 0..{n_vertices - 1}")
    face_start = np.concatenate(([0], np.cumsum(face_size)[:-1])).astype(np.int64)
    # a repeated vertex within a face: sort each face's corners and look for equal neighbours
    owner = np.repeat(np.arange(face_size.size), face_size)
    key = np.lexsort((corners, owner))
    dup = (owner[key][1:] == owner[key][:-1]) & (corners[key][1:] == corners[key][:-1])
    if np.any(dup):
        bad = int(owner[key][1:][dup][0])
        raise ValueError(f"{name}: face {bad} uses the same vertex twice (degenerate face)")
    return corners, face_start, face_size


def _next_prev(face_start, face_size):
    """Flat index of the next and previous corner of every corner, within its face."""
    s = int(face_size.sum())
    owner = np.repeat(np.arange(face_size.size), face_size)
    local = np.arange(s) - face_start[owner]
    nxt = face_start[owner] + (local + 1) % face_size[owner]
    prv = face_start[owner] + (local - 1) % face_size[owner]
    return nxt, prv, owner


def _pair_keys(a, b, base):
    """(m,) int64 sorted unique keys min * base + max of the pairs (a, b), self pairs dropped.
    One int64 per pair sorts exactly as the (min, max) rows do lexicographically; np.unique
    over rows (axis=0) sorts them as structured records, ten times slower (0.4 s of a
    100k-vertex cloth's build)."""
    lo = np.minimum(a, b).astype(np.int64)
    hi = np.maximum(a, b).astype(np.int64)
    keep = lo != hi
    return np.unique(lo[keep] * base + hi[keep])


def _pairs(keys, base):
    """(m, 2) int64 rows (min, max) of pair keys."""
    return np.stack([keys // base, keys % base], axis=1)


def _without(keys, taken):
    """keys (sorted unique) not in taken (sorted unique)."""
    if keys.size == 0 or taken.size == 0:
        return keys
    at = np.minimum(np.searchsorted(taken, keys), taken.size - 1)
    return keys[taken[at] != keys]


def cloth_topology(corners, face_start, face_size, n_vertices):
    """Stretch, shear and bend stick pairs of a polygon mesh.

    Returns a dict of (m, 2) int64 vertex-id arrays "stretch", "shear", "bend", each with
    rows (i, j), i < j, in sorted order; no pair occurs in two of them and none twice.
    """
    base = np.int64(max(int(n_vertices), 1))
    nxt, prv, owner = _next_prev(face_start, face_size)
    a, b = corners, corners[nxt]
    stretch = _pair_keys(a, b, base)

    # diagonals: corner i with every corner j of the same face that is neither i nor adjacent
    big = np.nonzero(face_size > 3)[0]
    di, dj = [], []
    for size in np.unique(face_size[big]):          # one pass per distinct polygon size
        fs = face_start[big[face_size[big] == size]]
        ii, jj = np.triu_indices(int(size), k=2)
        keep = ~((ii == 0) & (jj == size - 1))        # first and last corner are adjacent
        ii, jj = ii[keep], jj[keep]
        di.append(corners[fs[:, None] + ii].ravel())
        dj.append(corners[fs[:, None] + jj].ravel())
    shear = _pair_keys(np.concatenate(di), np.concatenate(dj), base) if di \
        else np.zeros(0, np.int64)
    # a diagonal that is also another face's edge is a stretch stick already (was: kept in
    # both, against the promise above: two sticks on one pair, twice as stiff)
    shear = _without(shear, stretch)

    # bend: half-edge a->b of a face; a's other neighbour is prev(a), b's is next(b)
    u = np.minimum(a, b)
    v = np.maximum(a, b)
    nbr_a, nbr_b = corners[prv], corners[nxt[nxt]]
    nbr_u = np.where(a < b, nbr_a, nbr_b)
    nbr_v = np.where(a < b, nbr_b, nbr_a)
    # half-edges grouped by edge, faces in order within an edge: corners come in face order,
    # so a stable sort on the edge key alone is lexsort((owner, v, u))
    order = np.argsort(u * base + v, kind="stable")
    u, v, nbr_u, nbr_v = u[order], v[order], nbr_u[order], nbr_v[order]
    same = (u[1:] == u[:-1]) & (v[1:] == v[:-1])
    i = np.nonzero(same)[0]
    bend = _pair_keys(np.concatenate([nbr_u[i], nbr_v[i]]),
                      np.concatenate([nbr_u[i + 1], nbr_v[i + 1]]), base)
    bend = _without(_without(bend, stretch), shear)
    return {"stretch": _pairs(stretch, base), "shear": _pairs(shear, base),
            "bend": _pairs(bend, base)}

