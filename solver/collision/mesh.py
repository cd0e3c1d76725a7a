"""Mesh colliders: any triangle mesh, static, moving (its matrix) or deforming (its vertices).

Geometry. The mesh is placed like every collider by a 4x4 matrix M = T R S (frames.py); its
local vertices v become w = S v in the rotation-only frame (q = R^T (x - t)), so distances are
exact under any scale. The distance of a point q is the distance to its closest point c on the
closest triangle (Ericson, "Real-Time Collision Detection", 5.1.5, closest point on a triangle by
Voronoi regions; ties between triangles go to the lowest triangle index).

Sign (closed meshes are solid). A mesh is closed when every edge has exactly two triangles and
they run it in opposite directions (a consistently oriented 2-manifold; several components are
fine, self-intersections too); its orientation is made outward (positive signed volume) at
build. A point is outside when (q - c) . N >= 0, N the angle-weighted pseudo-normal of the
feature c lies on (Baerentzen and Aanaes, "Signed distance computation using the angle weighted
pseudonormal", 2005): the face normal in a face, the sum of the adjacent unit face normals on an
edge, the sum of the incident unit face normals weighted by their angles at a vertex.
Open meshes (a boundary edge, a non-manifold edge, inconsistent winding) are two-sided with
thickness: a particle keeps the side its position at the substep's start x* is on, measured as
sign((x* - c) . N) at the closest feature c of x, and is pushed to radius + thickness on that
side. So nothing ever needs an inside: non-manifold and self-intersecting meshes just work.

Acceleration structure: a bounding volume hierarchy of axis-aligned boxes, median split along
the longest axis of the triangle centroids, built once (vectorised, level by level) with the
triangles reordered so that every node covers a contiguous range; nodes in depth-first order
with skip pointers (the node after a subtree), so a query walks it without a stack. Once per
step the boxes are refitted to cover the triangles' whole motion in that step (vertices at the
step's start and end, under the scales at both ends: a linear interpolation of both stays inside),
padded by PAD so that float rounding never prunes a triangle that could win; the query therefore
returns exactly what the brute force over all triangles returns (kernels: mesh_query.py, NumPy,
and kernels/compiled_mesh.py). The refit and the pseudo-normals are kernels too (refit_meshes,
mesh_normals here, compiled mirrors in kernels/compiled_mesh.py, bit-identical: the boxes are
only min, max and products; the normals' sums run in one fixed order, and their angles use
fdlibm's arccos written in +, -, *, /, sqrt, see acos); they are skipped in a step where the
local vertices and the scales are those of the last one (a static or rigidly moving mesh).

Skipping far candidates: the collide stage keeps a particle's signed distance at the step's
start less the surface's sweep (MeshSet.clearance); the distance is 1-Lipschitz, so while the
particle and its guard segment stay within that bound of where they started minus the contact
offset, no substep can touch the surface and its query is skipped (mesh_query.mesh_far, the
same test on both backends). A particle resting on the mesh is queried every substep; one
hanging 5 cm away is not, until it has moved nearly 5 cm.

Deforming meshes: Simulation.set_collider_vertices gives the local vertices at the end of the
next step; each substep uses v0 + (v1 - v0) f (the last one v1 exactly), as collider matrices are
interpolated. The surface point's motion over the substep (its barycentric point at the
substep's start and end, through the frames at both) feeds friction and restitution.
"""

import numpy as np

from .mesh_query import SKIN

LEAF = 4            # triangles per leaf at most
# triangles a particle's patch holds at most (kernels/compiled_patch.py: a patch is every
# triangle within its particle's reach of where it may be; more, and its queries walk the BVH)
PATCH = 16
PATCH_SLACK = 1e-3  # [m] a patch's margin beyond twice the particle's travel and the sweep
PAD_REL = 1e-9      # box padding, relative to the mesh's extent (rounding of the query: ~1e-16)


def check_mesh(vertices, triangles, name="mesh"):
    """Validated (v, 3) float64 vertices and (t, 3) int64 triangles with the zero-area ones
    dropped. Raises ValueError naming ``name`` and the cause."""
    try:
        v = np.array(vertices, dtype=np.float64)
        t = np.array(triangles)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: vertices and triangles must be arrays of numbers") from None
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] == 0:
        raise ValueError(f"{name}: vertices must have shape (v, 3) with v > 0, got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: a vertex is NaN or infinite")
    if t.size == 0:
        raise ValueError(f"{name}: the mesh has no triangles (faces)")
    if t.ndim != 2 or t.shape[1] != 3 or not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"{name}: triangles must be (t, 3) integer vertex ids, got "
                         f"shape {t.shape} of {t.dtype}")
    t = t.astype(np.int64)
    if t.min() < 0 or t.max() >= len(v):
        raise ValueError(f"{name}: a triangle names vertex {int(t.max() if t.max() >= len(v) else t.min())}"
                         f", out of range 0..{len(v) - 1}")
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    area2 = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    scale = np.maximum.reduce([np.sum((b - a) ** 2, 1), np.sum((c - a) ** 2, 1),
                               np.sum((c - b) ** 2, 1)])
    keep = (area2 > 1e-12 * scale) & (t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) \
        & (t[:, 0] != t[:, 2])
    if not keep.any():
        raise ValueError(f"{name}: every triangle is degenerate (zero area)")
    return v, t[keep]


def _edges(t):
    """Undirected edge id of each triangle's slot (T, 3) (slot 0 = v0v1, 1 = v1v2, 2 = v2v0),
    the number of unique edges, and whether the mesh is closed (module docstring)."""
    a = np.stack([t[:, 0], t[:, 1], t[:, 2]], 1).ravel()
    b = np.stack([t[:, 1], t[:, 2], t[:, 0]], 1).ravel()
    key = np.minimum(a, b) * (t.max() + 1) + np.maximum(a, b)
    uniq, edge_id, count = np.unique(key, return_inverse=True, return_counts=True)
    directed = np.unique(a * (t.max() + 1) + b).size == a.size
    closed = bool(np.all(count == 2) and directed)
    return edge_id.reshape(-1, 3).astype(np.int64), uniq.size, closed


def build_bvh(v, t):
    """Reorder triangles t (T, 3) into BVH order and build the tree (module docstring).
    Returns (t_sorted, right, skip, t0, t1, depth): per node (N,) int64 its right child (-1 for
    a leaf; the left child is the next node), the node after its subtree, its triangle range
    [t0, t1) and its depth."""
    T = len(t)
    cen = (v[t[:, 0]] + v[t[:, 1]] + v[t[:, 2]]) / 3.0
    order = np.arange(T)
    # breadth-first levels of ranges [lo, hi) of the current order, one node each
    lo, hi, parent = np.array([0]), np.array([T]), np.array([-1])
    parts, base, d = [], 0, 0
    while True:
        idx = base + np.arange(lo.size)
        parts.append((lo, hi, parent, np.full(lo.size, d)))
        base += lo.size
        d += 1
        split = hi - lo > LEAF
        if not split.any():
            break
        sl, sh = lo[split], hi[split]
        # sort each range being split along the longest axis of its centroids' box
        sizes = sh - sl
        seg = np.repeat(np.arange(sl.size), sizes)
        pos = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes) \
            + np.repeat(sl, sizes)
        c = cen[order[pos]]
        starts = np.cumsum(sizes) - sizes
        axis = np.argmax(np.maximum.reduceat(c, starts, axis=0)
                         - np.minimum.reduceat(c, starts, axis=0), axis=1)
        key = c[np.arange(pos.size), axis[seg]]
        order[pos] = order[pos][np.lexsort((np.arange(pos.size), key, seg))]
        mid = (sl + sh) // 2
        parent = np.repeat(idx[split], 2)
        lo = np.stack([sl, mid], 1).ravel()
        hi = np.stack([mid, sh], 1).ravel()
    bfs_lo, bfs_hi, bfs_parent, bfs_depth = (np.concatenate(z) for z in zip(*parts))
    levels = parts
    N = bfs_lo.size
    # children: every split node has two consecutive children on the next level
    left = np.full(N, -1)
    has = bfs_parent >= 0
    kids = np.nonzero(has)[0]
    first = kids[::2]
    left[bfs_parent[first]] = first
    # subtree sizes bottom-up, then depth-first (preorder) numbers top-down
    size = np.ones(N, np.int64)
    for d in range(len(levels) - 1, 0, -1):
        sel = np.nonzero(bfs_depth == d)[0]
        np.add.at(size, bfs_parent[sel], size[sel])
    pre = np.zeros(N, np.int64)
    for d in range(1, len(levels)):
        sel = np.nonzero(bfs_depth == d)[0]
        p = bfs_parent[sel]
        is_right = sel != left[p]
        pre[sel] = pre[p] + 1 + np.where(is_right, size[left[p]], 0)
    right = np.full(N, -1, np.int64)
    split = left >= 0
    right[pre[split]] = pre[left[split] + 1]
    skip = np.empty(N, np.int64)
    skip[pre] = pre + size
    t0 = np.empty(N, np.int64)
    t1 = np.empty(N, np.int64)
    t0[pre], t1[pre] = bfs_lo, bfs_hi
    depth = np.empty(N, np.int64)
    depth[pre] = bfs_depth
    return t[order], right, skip, t0, t1, depth


def build(meshes):
    """The Model's mesh arrays from per-collider (vertices, triangles) or None (a primitive).
    Returns a dict of Model fields (model.py documents them)."""
    C = len(meshes)
    vstart, tstart, nstart = [0], [0], [0]
    V, Tr, R, S, A, B, D, E, closed = [], [], [], [], [], [], [], [], []
    n_edges = 0
    for mesh in meshes:
        if mesh is None:
            closed.append(False)
        else:
            v, t = mesh
            tt, right, skip, t0, t1, depth = build_bvh(v, t)
            edge_id, ne, is_closed = _edges(tt)
            if is_closed and _signed_volume(v, tt) < 0:
                tt = tt[:, [0, 2, 1]]                     # outward
                edge_id = edge_id[:, [2, 1, 0]]           # slots follow: v0v2, v2v1, v1v0
            closed.append(is_closed)
            off_v, off_t, off_n = vstart[-1], tstart[-1], nstart[-1]
            V.append(v)
            Tr.append(tt + off_v)
            R.append(np.where(right >= 0, right + off_n, -1))
            S.append(skip + off_n)
            A.append(t0 + off_t)
            B.append(t1 + off_t)
            D.append(depth)
            E.append(edge_id + n_edges)
            n_edges += ne
            vstart.append(off_v + len(v))
            tstart.append(off_t + len(tt))
            nstart.append(off_n + len(right))
            continue
        vstart.append(vstart[-1])
        tstart.append(tstart[-1])
        nstart.append(nstart[-1])

    def cat(parts, shape, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(shape, dtype)
    return dict(
        mesh_vertices=cat(V, (0, 3), np.float64), mesh_triangles=cat(Tr, (0, 3), np.int64),
        mesh_vertex_start=np.array(vstart, np.int64), mesh_tri_start=np.array(tstart, np.int64),
        mesh_node_start=np.array(nstart, np.int64), mesh_node_right=cat(R, (0,), np.int64),
        mesh_node_skip=cat(S, (0,), np.int64), mesh_node_t0=cat(A, (0,), np.int64),
        mesh_node_t1=cat(B, (0,), np.int64), mesh_node_depth=cat(D, (0,), np.int64),
        mesh_tri_edge=cat(E, (0, 3), np.int64), mesh_edge_count=n_edges,
        mesh_closed=np.array(closed, bool).reshape(C))


def _signed_volume(v, t):
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    return float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c)))) / 6.0


# fdlibm's arccos (e_acos.c, Sun Microsystems 1993): a rational approximation in z = x^2 or
# z = (1 -+ x) / 2 with sqrt; only +, -, *, / and sqrt, which IEEE rounds exactly, so the
# compiled mirror (kernels/compiled_mesh.acos) gives the same bits. np.arccos may not: NumPy
# runs SIMD (SVML) code on some CPUs, libm's acos on others, and they differ in the last bit.
PIO2_HI, PIO2_LO, PI = 1.57079632679489655800e+00, 6.12323399573676603587e-17, \
    3.14159265358979311600e+00
PS = (1.66666666666666657415e-01, -3.25565818622400915405e-01, 2.01212532134862925881e-01,
      -4.00555345006794114027e-02, 7.91534994289814532176e-04, 3.47933107596021167570e-05)
QS = (-2.40339491173441421878e+00, 2.02094576023350569471e+00, -6.88283971605453293030e-01,
      7.70381505559019352791e-02)


def acos(x):
    """[rad] arccos of x (array, every value in [-1, 1]) to within a few units in the last
    place (fdlibm's; the x > 1/2 branch without its extra-precision split)."""
    small, neg = np.abs(x) < 0.5, x < 0
    z = np.where(small, x * x, np.where(neg, (1.0 + x) * 0.5, (1.0 - x) * 0.5))
    p = z * (PS[0] + z * (PS[1] + z * (PS[2] + z * (PS[3] + z * (PS[4] + z * PS[5])))))
    q = 1.0 + z * (QS[0] + z * (QS[1] + z * (QS[2] + z * QS[3])))
    r = p / q
    s = np.sqrt(z)
    return np.where(small, PIO2_HI - (x - (PIO2_LO - x * r)),
                    np.where(neg, PI - 2.0 * (s + (r * s - PIO2_LO)), 2.0 * (s + r * s)))


def refit_meshes(V0, V1, vstart, ids, s0, s1, tri, node_start, t0, t1, right, leaf, inner,
                 inner_start, vlo, vhi, lo, hi):
    """The BVH boxes lo, hi (N, 3) [m] of the mesh colliders ids over one step (module
    docstring): each vertex's box over its positions at both ends under both scales (vlo, vhi
    (V, 3) scratch; the substeps interpolate inside it), a leaf's over its triangles [t0, t1),
    an inner node's over its two children (inner: the inner nodes deepest level first,
    inner_start where each level starts), then every box of a mesh padded by PAD_REL (its root
    box's extent + 1 m). V0, V1 (V, 3) local vertices at the step's start and end; vstart
    (C + 1,) each collider's vertices; s0, s1 (C, 3) the scales at both ends. Only min, max and
    one product per value: the result does not depend on the order, so the compiled mirror
    splits the work over threads freely."""
    for k in ids:
        a, b = vstart[k], vstart[k + 1]
        c = np.stack([V0[a:b] * s0[k], V0[a:b] * s1[k], V1[a:b] * s0[k], V1[a:b] * s1[k]])
        vlo[a:b], vhi[a:b] = c.min(0), c.max(0)
    tlo = np.minimum(np.minimum(vlo[tri[:, 0]], vlo[tri[:, 1]]), vlo[tri[:, 2]])
    thi = np.maximum(np.maximum(vhi[tri[:, 0]], vhi[tri[:, 1]]), vhi[tri[:, 2]])
    lo[leaf] = np.minimum.reduceat(tlo, t0[leaf], axis=0)   # leaves cover [t0, t1) in order
    hi[leaf] = np.maximum.reduceat(thi, t0[leaf], axis=0)
    for lv in range(len(inner_start) - 1):                  # children before parents
        sel = inner[inner_start[lv]:inner_start[lv + 1]]
        lo[sel] = np.minimum(lo[sel + 1], lo[right[sel]])
        hi[sel] = np.maximum(hi[sel + 1], hi[right[sel]])
    for k in ids:
        a, b = node_start[k], node_start[k + 1]
        ext = max(float(np.max(np.abs(lo[a]))), float(np.max(np.abs(hi[a]))))
        pad = PAD_REL * (ext + 1.0)
        lo[a:b] -= pad
        hi[a:b] += pad


def mesh_normals(V1, vstart, ids, s1, tri, tri_edge, W1, face, angle, edge_sum, vert_normal,
                 edge_normal):
    """Angle-weighted pseudo-normals (Baerentzen and Aanaes 2005) of the mesh colliders ids at
    the step's end: W1 (V, 3) the vertices V1 scaled by s1 (C, 3); face (T, 3) the unit face
    normals; angle (3, T) [rad] the angle at each corner (between the edges leaving it);
    vert_normal (V, 3) the sum over the triangles at a vertex of face normal x angle there,
    corner 0 of every triangle first, then corner 1, then 2 (np.bincount adds in that order;
    so does the compiled mirror); edge_sum (E, 3) the sum of the (two) unit face normals at an
    edge, triangle by triangle; edge_normal (T, 3, 3) it per triangle slot (0 = v0v1, 1 = v1v2,
    2 = v2v0)."""
    for k in ids:
        a, b = vstart[k], vstart[k + 1]
        W1[a:b] = V1[a:b] * s1[k]
    p = [W1[tri[:, j]] for j in range(3)]
    e = [p[1] - p[0], p[2] - p[1], p[0] - p[2]]          # edge j leaves corner j
    ln = [np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2]) for v in e]
    u, w = e[0], -e[2]
    n0 = u[:, 1] * w[:, 2] - u[:, 2] * w[:, 1]
    n1 = u[:, 2] * w[:, 0] - u[:, 0] * w[:, 2]
    n2 = u[:, 0] * w[:, 1] - u[:, 1] * w[:, 0]
    la = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    la = np.where(la > 0, la, 1.0)
    face[:, 0], face[:, 1], face[:, 2] = n0 / la, n1 / la, n2 / la
    for j in range(3):          # the angle at corner j, between edge j and edge j - 1 reversed
        f, g = e[j], e[j - 1]
        d = f[:, 0] * g[:, 0] + f[:, 1] * g[:, 1] + f[:, 2] * g[:, 2]
        angle[j] = acos(np.clip(-d / np.maximum(ln[j] * ln[j - 1], 1e-300), -1.0, 1.0))
    corners = tri.T.ravel()
    for c in range(3):
        vert_normal[:, c] = np.bincount(corners, weights=(face[:, c] * angle).ravel(),
                                        minlength=len(W1))
        edge_sum[:, c] = np.bincount(tri_edge.ravel(), weights=np.repeat(face[:, c], 3),
                                     minlength=len(edge_sum))
    edge_normal[:] = edge_sum[tri_edge]


class MeshSet:
    """The mesh colliders' per-step data (everything that travels to the kernels as the
    ``mesh`` group). W and Wb are scratch that the substep loop fills (place_meshes); the boxes
    and pseudo-normals are refitted once per step by the kernels refit_meshes and mesh_normals
    (prepare), into arrays allocated here once."""

    def __init__(self, model):
        m = model
        self.start = m.mesh_vertex_start
        self.tri = m.mesh_triangles
        self.tri_start = m.mesh_tri_start
        self.node_start = m.mesh_node_start
        self.right, self.skip = m.mesh_node_right, m.mesh_node_skip
        self.t0, self.t1, self.depth = m.mesh_node_t0, m.mesh_node_t1, m.mesh_node_depth
        self.tri_edge, self.n_edges = m.mesh_tri_edge, m.mesh_edge_count
        self.closed = m.mesh_closed
        self.ids = np.nonzero(np.diff(m.mesh_tri_start) > 0)[0].astype(np.int64)   # mesh colliders
        nv, nt, nn, C = len(m.mesh_vertices), len(self.tri), len(self.right), len(self.closed)
        self.W = np.zeros((nv, 3))                 # (V, 3) [m] vertices now, rotation-only frame
        self.Wb = np.zeros((nv, 3))                # (V, 3) [m] the same at the substep's start
        self.lo = np.zeros((nn, 3))                # (N, 3) [m] node boxes, rotation-only frame
        self.hi = np.zeros((nn, 3))
        self.vert_normal = np.zeros((nv, 3))       # (V, 3) vertex pseudo-normals (step's end)
        self.edge_normal = np.zeros((nt, 3, 3))    # (T, 3, 3) edge pseudo-normals per slot
        self.leaf = np.nonzero(self.right < 0)[0]
        # (n,) int64 each particle's last closest triangle: the compiled query's first guess
        # (compiled_mesh.mesh_closest); it never changes an answer, so checkpoints skip it
        self.hint = np.full(m.particle_count, -1, np.int64)
        # the inner nodes level by level, deepest first (children before parents): (I,) ids
        # and (L + 1,) where each level starts
        levels = [np.nonzero((self.depth == d) & (self.right >= 0))[0]
                  for d in range(int(self.depth.max()) + 1 if nn else 0)][::-1]
        self.inner = np.concatenate(levels).astype(np.int64) if levels else np.zeros(0, np.int64)
        self.inner_start = np.cumsum([0] + [len(lv) for lv in levels]).astype(np.int64)
        # scratch of refit_meshes and mesh_normals, filled every step that needs them
        self.s0 = np.zeros((C, 3))                 # (C, 3) scales at the step's start and end
        self.s1 = np.zeros((C, 3))
        self.vlo = np.zeros((nv, 3))               # (V, 3) [m] each vertex's box over the step
        self.vhi = np.zeros((nv, 3))
        self.W1 = np.zeros((nv, 3))                # (V, 3) [m] scaled vertices, step's end
        self.face = np.zeros((nt, 3))              # (T, 3) unit face normals
        self.angle = np.zeros((3, nt))             # (3, T) [rad] each triangle's corner angles
        self.edge_sum = np.zeros((self.n_edges, 3))    # (E, 3) edge pseudo-normals
        # (C,) bool: the collider's local vertices do not move in this step (place_meshes)
        self.still = np.zeros(C, bool)
        # mesh_query.mesh_far's inputs, set by the collide stage every step (clearance)
        self.column = np.full(C, -1, np.int64)     # (C,) each mesh collider's column in clear
        self.column[self.ids] = np.arange(self.ids.size)
        self.clear = np.zeros((m.particle_count, self.ids.size))   # (n, M) [m]
        self.x0 = np.zeros((m.particle_count, 3))  # (n, 3) [m] positions at the step's start
        # the compiled queries' patches (kernels/compiled_patch.py), given by
        # distances() at the step's start, scratch that changes no answer (not in checkpoints)
        self.patch_row = np.full((m.particle_count, self.ids.size), -1, np.int64)   # (n, M)
        self.patch_tri = np.zeros((0, PATCH), np.int64)     # (r, PATCH) triangle ids
        self.patch_count = np.zeros(0, np.int64)            # (r,) how many (-1: none)
        self.patch_reach = np.zeros(0)                      # (r,) [m] (mesh_query.py)
        self._rows = 0                                      # rows given this step
        self._patched = []                                  # (particles, column) given rows
        self.radius = m.particle_radius                     # (n,) [m]
        self._travel = None     # (n,) [m] each particle's travel over the step before, or None
        # what the boxes and normals were made for: (V0, V1, s0, s1), None before the first
        self._last = None

    def prepare(self, V0, V1, frame0, frame1, kernels):
        """Once per step: refit the boxes over the step's motion and the pseudo-normals at its
        end (kernels refit_meshes, mesh_normals). V0, V1 (V, 3) local vertices at the step's
        start and end; frame0, frame1 lists of the colliders' frames at both ends. Nothing is
        done when the vertices and the scales are those of the last call: a static mesh and
        one that only moves rigidly (its matrix: rotation and translation) keep their local
        boxes and normals."""
        if not self.ids.size:
            return
        for ids, column in self._patched:      # last step's patches: its geometry, not this
            self.patch_row[ids, column] = -1
        self._patched, self._rows, self._travel = [], 0, None
        for k in self.ids:
            self.s0[k] = frame0[k].scale
            self.s1[k] = frame1[k].scale
            a, b = self.start[k], self.start[k + 1]
            self.still[k] = np.array_equal(V0[a:b], V1[a:b])
        last = self._last
        if last is not None and np.array_equal(last[2], self.s0) \
                and np.array_equal(last[3], self.s1) and np.array_equal(last[0], V0) \
                and np.array_equal(last[1], V1):
            return                               # nothing moved relative to the frame
        if last is None:
            self._last = (V0.copy(), V1.copy(), self.s0.copy(), self.s1.copy())
        else:
            for dst, src in zip(last, (V0, V1, self.s0, self.s1)):
                dst[:] = src
        kernels.refit_meshes(V0, V1, self.start, self.ids, self.s0, self.s1, self.tri,
                             self.node_start, self.t0, self.t1, self.right, self.leaf,
                             self.inner, self.inner_start, self.vlo, self.vhi, self.lo, self.hi)
        kernels.mesh_normals(V1, self.start, self.ids, self.s1, self.tri, self.tri_edge,
                             self.W1, self.face, self.angle, self.edge_sum, self.vert_normal,
                             self.edge_normal)

    def surface_sweep(self, k, control, f0, f1):
        """[m] a bound on how far any surface point of collider k moves during the step, in
        the frame of its placement at the step's start: 1.6 x the largest world displacement of
        a vertex between the step's ends (surface points are convex combinations of vertices;
        the slerp's arc is at most pi/2 times its chord)."""
        a, b = self.start[k], self.start[k + 1]
        V0, V1 = control.mesh_vertices[a:b], control.mesh_target[a:b]
        if f1 is f0 and np.array_equal(V0, V1):
            return 0.0
        w0 = (V0 * f0.scale) @ f0.rotation.T + f0.translation
        w1 = (V1 * f1.scale) @ f1.rotation.T + f1.translation
        d = w1 - w0
        return 1.6 * float(np.sqrt(np.max(np.einsum("ij,ij->i", d, d))))

    def distances(self, kernels, k, control, frame, q, slots, bound, sweep, thickness, x):
        """(p,) [m] signed distances (open meshes: unsigned) of local points q (p, 3) to collider
        k's mesh at the step's start (its vertices placed under ``frame``'s scale); inf beyond
        bound [m] (mesh_query.mesh_distances). slots (p,) int64 the particles of the points,
        sweep [m] how far the surface moves in the step, thickness [m] the collider's, x (n, 3)
        [m] the positions at the step's start: with them the compiled query gives each particle
        that may touch the surface in the step (within its contact distance and its patch
        margin) a patch, every triangle within the patch margin 2 (travel + sweep) +
        PATCH_SLACK of its hint's distance (travel: how far it went in the step before, a guess
        of this one's), which its queries in the substeps read instead of the BVH while it
        stays near enough to prove their answer (kernels/compiled_patch.py)."""
        sc = np.zeros((1, len(self.start) - 1, 3))
        sc[0, k] = frame.scale
        ids = np.array([k], np.int64)
        rows = self._take_rows(len(q))
        group = self.kernel_args(control.mesh_vertices, control.mesh_target)
        V0 = control.mesh_vertices                # one substep that ends at the step's start
        kernels.place_meshes(V0, V0, self.start, ids, sc, sc, 0, 1, self.still, self.W, self.Wb)
        phi = np.empty(len(q))
        if self._travel is None:                  # x0: the step before's start, still
            d = x - self.x0
            self._travel = np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])
        extra = 2.0 * (self._travel[slots] + sweep) + PATCH_SLACK
        kernels.mesh_distances(q, slots, k, group, float(bound),
                               extra + (thickness + self.radius[slots]), extra, float(sweep),
                               rows, phi)
        given = self.patch_count[rows] >= 0
        if given.any():
            self.patch_row[slots[given], self.column[k]] = rows[given]
            self._patched.append((slots[given], self.column[k]))
        # an open mesh's phi has its skin taken off (mesh_query.SKIN): put it back
        return phi if self.closed[k] else np.abs(phi + SKIN)

    def _take_rows(self, p):
        """(p,) int64 the next p rows of this step's patches (the arrays grown to hold them)."""
        first, self._rows = self._rows, self._rows + p
        if self._rows > len(self.patch_count):
            size = max(self._rows, 2 * len(self.patch_count))
            self.patch_tri = np.zeros((size, PATCH), np.int64)
            self.patch_count = np.full(size, -1, np.int64)
            self.patch_reach = np.zeros(size)
            for ids, column in self._patched:    # their rows are gone
                self.patch_row[ids, column] = -1
            self._patched = []
        return np.arange(first, self._rows, dtype=np.int64)

    def root_boxes(self, k):
        """(lo, hi) (3,) [m] the box of collider k's mesh over this step, rotation-only frame."""
        a = self.node_start[k]
        return self.lo[a], self.hi[a]

    def kernel_args(self, V0, V1):
        """The mesh group of the kernels' arguments (mesh_query.py lists it); V0, V1 (V, 3) the
        Control's local vertices at the step's start and end."""
        return (V0, V1, self.tri, self.W, self.Wb, self.tri_start, self.start, self.node_start,
                self.lo, self.hi, self.right, self.skip, self.t0, self.t1, self.closed,
                self.vert_normal, self.edge_normal, self.ids, self.hint, self.still, self.clear,
                self.column, self.x0, self.patch_row, self.patch_tri, self.patch_count,
                self.patch_reach)

    def clearance(self, k, x, ids, phi, sweep):
        """The collide stage's bound for mesh_query.mesh_far: x (n, 3) [m] the positions at the
        step's start; ids (p,) collider k's candidates, phi (p,) [m] their signed distances to
        it then (open meshes: unsigned), sweep [m] how far its surface moves in the step."""
        self.x0[:] = x
        self.clear[ids, self.column[k]] = phi - sweep
