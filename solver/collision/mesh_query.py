"""Mesh collider queries in NumPy: the reference the compiled BVH query (kernels/compiled_mesh.py)
is checked against, bit for bit.

closest() is a brute force over all triangles of one mesh, vectorised in chunks, returning for
every point the closest triangle (the lowest index among equal squared distances) and the
closest point on it by Ericson's Voronoi-region test ("Real-Time Collision Detection", 5.1.5),
written column by column in the same order of operations as the compiled scalar code. The BVH
finds the same triangle because its boxes never prune one that could win or tie (mesh.py).
mesh_sdf() turns it into a signed distance with the pseudo-normal sign (mesh.py's docstring).

The mesh group (MeshSet.kernel_args, the same tuple on both backends): 0 V0, 1 V1 (V, 3) local
vertices at the step's start and end; 2 tri (T, 3) int64; 3 W, 4 Wb (V, 3) [m] vertices at the
substep's end and start (rotation-only frame); 5 tri_start, 6 vertex start, 7 node_start (C + 1,);
8 lo, 9 hi (N, 3) node boxes; 10 right, 11 skip, 12 t0, 13 t1 (N,) int64; 14 closed (C,) bool;
15 vertex pseudo-normals (V, 3); 16 edge pseudo-normals (T, 3, 3); 17 the mesh colliders (M,);
18 (n,) int64 each particle's last closest triangle (the compiled query's first guess only);
19 still (C,) bool: the collider's vertices do not move in this step (place_meshes); 20 clear
(n, M) [m] a lower bound on each candidate's distance to each mesh collider's surface during the
step, less its own motion (mesh_far); 21 (C,) int64 each collider's column in clear (-1: not a
mesh); 22 x0 (n, 3) [m] the positions at the step's start; the compiled queries' patches
(kernels/compiled_patch.py, scratch: they change no answer, so this module reads none): 23 (n, M)
int64 each particle's row for each mesh collider (-1: none), 24 (r, PATCH) int64 the triangles
of each row, 25 (r,) int64 how many (-1: none), 26 (r,) [m] the distance every other triangle
was beyond at the step's start, less the surface's sweep.

Regions: 0 face, 1/2/3 vertex a/b/c, 4 edge ab, 5 edge ac, 6 edge bc; edge pseudo-normal slots
0 = ab, 1 = bc, 2 = ca.
"""

import numpy as np

TINY = 1e-12          # collision/sdf.TINY
CHUNK = 1 << 18       # points x triangles evaluated at once
# [m] an open mesh's surface is this much thicker on both sides: a particle resting on it at a
# zero contact offset would otherwise sit exactly on the sheet, where the side its x* is on
# (the sign of a dot product of nearly zero) is rounding noise, and could be pushed through
SKIN = 1e-4
# [m] mesh_far's slack beyond the skin: far more than the rounding of any distance here
CLEAR_GAP = SKIN + 1e-6


def tri_closest(p0, p1, p2, a0, a1, a2, b0, b1, b2, c0, c1, c2):
    """Closest points of points p on triangles (a, b, c) (broadcast columns). Returns the squared
    distance, the closest point columns, the region and the barycentric weights (wa, wb, wc)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ab0, ab1, ab2 = b0 - a0, b1 - a1, b2 - a2
        ac0, ac1, ac2 = c0 - a0, c1 - a1, c2 - a2
        ap0, ap1, ap2 = p0 - a0, p1 - a1, p2 - a2
        d1 = ab0 * ap0 + ab1 * ap1 + ab2 * ap2
        d2 = ac0 * ap0 + ac1 * ap1 + ac2 * ap2
        bp0, bp1, bp2 = p0 - b0, p1 - b1, p2 - b2
        d3 = ab0 * bp0 + ab1 * bp1 + ab2 * bp2
        d4 = ac0 * bp0 + ac1 * bp1 + ac2 * bp2
        vc = d1 * d4 - d3 * d2
        cp0, cp1, cp2 = p0 - c0, p1 - c1, p2 - c2
        d5 = ab0 * cp0 + ab1 * cp1 + ab2 * cp2
        d6 = ac0 * cp0 + ac1 * cp1 + ac2 * cp2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        in_a = (d1 <= 0) & (d2 <= 0)
        rest = ~in_a
        in_b = rest & (d3 >= 0) & (d4 <= d3)
        rest &= ~in_b
        in_ab = rest & (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        rest &= ~in_ab
        in_c = rest & (d6 >= 0) & (d5 <= d6)
        rest &= ~in_c
        in_ac = rest & (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        rest &= ~in_ac
        e43 = d4 - d3
        e56 = d5 - d6
        in_bc = rest & (va <= 0) & (e43 >= 0) & (e56 >= 0)
        rest &= ~in_bc
        den = va + vb + vc
        in_f = rest & (den > 0)
        in_a = in_a | (rest & ~(den > 0))             # degenerate: vertex a
        v_ab = d1 / (d1 - d3)
        w_ac = d2 / (d2 - d6)
        w_bc = e43 / (e43 + e56)
        inv = 1.0 / den
        v_f = vb * inv
        w_f = vc * inv
        cb0, cb1, cb2 = c0 - b0, c1 - b1, c2 - b2
        conds = [in_a, in_b, in_c, in_ab, in_ac, in_bc, in_f]

        def pick(*vals):
            return np.select(conds, [np.broadcast_to(v, in_a.shape) for v in vals], 0.0)
        q0 = pick(a0, b0, c0, a0 + ab0 * v_ab, a0 + ac0 * w_ac,
                  b0 + cb0 * w_bc, a0 + ab0 * v_f + ac0 * w_f)
        q1 = pick(a1, b1, c1, a1 + ab1 * v_ab, a1 + ac1 * w_ac,
                  b1 + cb1 * w_bc, a1 + ab1 * v_f + ac1 * w_f)
        q2 = pick(a2, b2, c2, a2 + ab2 * v_ab, a2 + ac2 * w_ac,
                  b2 + cb2 * w_bc, a2 + ab2 * v_f + ac2 * w_f)
        region = np.select(conds, [1, 2, 3, 4, 5, 6, 0], 0)
        one, zero = np.ones_like(d1), np.zeros_like(d1)
        wa = np.select(conds, [one, zero, zero, 1.0 - v_ab, 1.0 - w_ac, zero, 1.0 - v_f - w_f])
        wb = np.select(conds, [zero, one, zero, v_ab, zero, 1.0 - w_bc, v_f])
        wc = np.select(conds, [zero, zero, one, zero, w_ac, w_bc, w_f])
    e0, e1, e2 = p0 - q0, p1 - q1, p2 - q2
    return e0 * e0 + e1 * e1 + e2 * e2, q0, q1, q2, region, wa, wb, wc


def closest(q0, q1, q2, k, mesh):
    """Closest triangle (global index) of collider k's mesh for local points q (p,) and its
    closest point data (tri_closest's), by brute force in chunks."""
    tri, W, tri_start = mesh[2], mesh[3], mesh[5]
    t_lo, t_hi = int(tri_start[k]), int(tri_start[k + 1])
    p = q0.size
    best = np.full(p, np.inf)
    bt = np.full(p, t_lo, np.int64)
    step = max(1, CHUNK // max(p, 1))
    for s in range(t_lo, t_hi, step):
        e = min(s + step, t_hi)
        ts = tri[s:e]
        a, b, c = W[ts[:, 0]], W[ts[:, 1]], W[ts[:, 2]]
        d2 = tri_closest(q0[:, None], q1[:, None], q2[:, None], a[:, 0], a[:, 1], a[:, 2],
                         b[:, 0], b[:, 1], b[:, 2], c[:, 0], c[:, 1], c[:, 2])[0]
        j = np.argmin(d2, axis=1)                 # first of equal minima: the lowest index
        dj = d2[np.arange(p), j]
        better = dj < best                        # earlier chunks hold lower indices
        best = np.where(better, dj, best)
        bt = np.where(better, s + j, bt)
    ts = tri[bt]
    a, b, c = W[ts[:, 0]], W[ts[:, 1]], W[ts[:, 2]]
    return (bt,) + tri_closest(q0, q1, q2, a[:, 0], a[:, 1], a[:, 2], b[:, 0], b[:, 1], b[:, 2],
                               c[:, 0], c[:, 1], c[:, 2])


def mesh_sdf(q0, q1, q2, r0, r1, r2, k, mesh):
    """Signed distance phi (p,) [m] of local points q to collider k's mesh, the unit direction
    (g0, g1, g2) in the rotation-only frame, the closest triangle and its barycentric weights.
    r: the points' positions at the substep's start x* (local coordinates in the frame of the
    substep's start), which pick the side of an open mesh (mesh.py)."""
    return _signed(q0, q1, q2, r0, r1, r2, k, mesh, *closest(q0, q1, q2, k, mesh))


def _signed(q0, q1, q2, r0, r1, r2, k, mesh, t, dd, c0, c1, c2, region, wa, wb, wc):
    """mesh_sdf's sign and direction from a closest-point result."""
    tri, W, closed, vert_normal, edge_normal = mesh[2], mesh[3], mesh[14], mesh[15], mesh[16]
    ts = tri[t]
    a, b, c = W[ts[:, 0]], W[ts[:, 1]], W[ts[:, 2]]
    ab0, ab1, ab2 = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1], b[:, 2] - a[:, 2]
    ac0, ac1, ac2 = c[:, 0] - a[:, 0], c[:, 1] - a[:, 1], c[:, 2] - a[:, 2]
    f0 = ab1 * ac2 - ab2 * ac1
    f1 = ab2 * ac0 - ab0 * ac2
    f2 = ab0 * ac1 - ab1 * ac0
    vid = ts[np.arange(t.size), np.clip(region - 1, 0, 2)]
    slot = np.where(region == 4, 0, np.where(region == 6, 1, 2))
    en = edge_normal[t, slot]
    vn = vert_normal[vid]
    is_v = (region >= 1) & (region <= 3)
    N = [np.where(region == 0, f, np.where(is_v, vn[:, j], en[:, j]))
         for j, f in enumerate((f0, f1, f2))]
    e0, e1, e2 = q0 - c0, q1 - c1, q2 - c2
    out = e0 * N[0] + e1 * N[1] + e2 * N[2] >= 0
    if closed[k]:
        side = np.ones(t.size, bool)
    else:
        # the side of x* (r, in the frame of the substep's start) against the same surface
        # point at the substep's start (Wb): a sheet that moves must not change it
        Wb = mesh[4]
        sb = [wa * Wb[ts[:, 0], j] + wb * Wb[ts[:, 1], j] + wc * Wb[ts[:, 2], j] for j in range(3)]
        side = (r0 - sb[0]) * N[0] + (r1 - sb[1]) * N[1] + (r2 - sb[2]) * N[2] >= 0
    inside = out != side
    dist = np.sqrt(dd)
    far = dist > TINY
    dn = np.where(far, dist, 1.0)
    nn = np.sqrt(N[0] * N[0] + N[1] * N[1] + N[2] * N[2])
    ok = nn > TINY
    nd = np.where(ok, nn, 1.0)
    sg = np.where(side, 1.0, -1.0)
    ig = np.where(inside, -1.0, 1.0)
    g0 = np.where(far, e0 / dn * ig, np.where(ok, N[0] / nd, 0.0) * sg)
    g1 = np.where(far, e1 / dn * ig, np.where(ok, N[1] / nd, 0.0) * sg)
    g2 = np.where(far, e2 / dn * ig, np.where(ok, N[2] / nd, 1.0) * sg)
    phi = dist * ig
    if not closed[k]:
        phi = phi - SKIN
    return phi, g0, g1, g2, t, wa, wb, wc


def surface_motion(R, t, Rb, tb, tri_ids, wa, wb, wc, mesh):
    """World displacement over the substep of the material surface points (weights wa, wb, wc
    on triangles tri_ids): its point at the substep's end through (R, t) minus its point at the
    start through (Rb, tb) (W, Wb: the scaled vertices then)."""
    tri, W, Wb = mesh[2], mesh[3], mesh[4]
    ts = tri[tri_ids]
    out = []
    pts = []
    for V in (W, Wb):
        a, b, c = V[ts[:, 0]], V[ts[:, 1]], V[ts[:, 2]]
        pts.append([wa * a[:, j] + wb * b[:, j] + wc * c[:, j] for j in range(3)])
    (w0, w1, w2), (v0, v1, v2) = pts
    for r in range(3):
        now = R[r, 0] * w0 + R[r, 1] * w1 + R[r, 2] * w2 + t[r]
        before = Rb[r, 0] * v0 + Rb[r, 1] * v1 + Rb[r, 2] * v2 + tb[r]
        out.append(now - before)
    return out


def mesh_far(x0, x1, x2, p0, p1, p2, ids, k, offset, mesh):
    """(p,) bool: which particles ids cannot touch mesh collider k in this substep, so its query
    is skipped (the same answer: no contact, no guard). clear = phi0 - sweep (MeshSet.clearance:
    the signed distance at the step's start, less how far any surface point moves in the step)
    bounds the distance to the surface of every point within rho of the particle's position at
    the step's start x0 (the distance is 1-Lipschitz), rho the farther of the position now x and
    the guard's segment start p (x* carried, project._guard); the segment between them lies in
    that ball. Far when clear - rho exceeds the contact offset (thickness + radius) by
    CLEAR_GAP: the end point is out of reach and the guard's segment touches nothing. Only a
    particle outside at the step's start (phi0 > 0) can be far."""
    clear = mesh[20][ids, mesh[21][k]]
    X0 = mesh[22]
    d0, d1, d2 = x0 - X0[ids, 0], x1 - X0[ids, 1], x2 - X0[ids, 2]
    a = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    d0, d1, d2 = p0 - X0[ids, 0], p1 - X0[ids, 1], p2 - X0[ids, 2]
    b = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    rho = np.where(a > b, a, b)
    return (clear > offset + CLEAR_GAP) & (clear - rho - offset > CLEAR_GAP)


def place_meshes(V0, V1, vstart, ids, sc, sb, s, substeps, still, W, Wb):
    """The mesh vertices of substep s of ``substeps`` in the rotation-only frame: W (V, 3) at its
    end (V0 + (V1 - V0) f1, f1 = (s + 1) / substeps, V1 itself for the last substep, times its
    scale sc[s] (S, C, 3)) and Wb at its start (f0 = s / substeps, scale sb[s]). V0, V1 (V, 3)
    local vertices at the step's start and end; vstart (C + 1,) each collider's vertices; ids
    the mesh colliders. A collider whose vertices do not move in the step (still (C,) bool,
    MeshSet.prepare) keeps the W and Wb of substep s - 1 when its scales there were the same
    (_kept): V0 + (V1 - V0) f is then the same bits for every f > 0, so a static or rigidly
    moving mesh is placed twice a step, not once per substep."""
    f0, f1, last = s / substeps, (s + 1) / substeps, s == substeps - 1
    for k in ids:
        if _kept(k, sc, sb, s, substeps, still):
            continue
        a, b = vstart[k], vstart[k + 1]
        P1 = V1[a:b] if last else V0[a:b] + (V1[a:b] - V0[a:b]) * f1
        W[a:b] = P1 * sc[s, k]
        Wb[a:b] = (V0[a:b] + (V1[a:b] - V0[a:b]) * f0) * sb[s, k]


def _kept(k, sc, sb, s, substeps, still):
    """Whether collider k's W and Wb of substep s - 1 are those of substep s (place_meshes):
    not the first substep (W was last written for another step or query), not the last (it
    places V1 itself), vertices still, the same scales."""
    return 0 < s < substeps - 1 and bool(still[k]) and np.array_equal(sc[s, k], sc[s - 1, k]) \
        and np.array_equal(sb[s, k], sb[s - 1, k])


def mesh_distances(q, slots, k, mesh, bound, near, extra, sweep, rows, phi):
    """The collide stage's query: phi (p,) [m] the signed distance (open meshes: unsigned) of
    local points q (p, 3) to collider k's mesh as placed in W; inf where no triangle is nearer
    than bound [m], unless the mesh is closed and the point inside its root box (then it may be
    deep inside: the full query). The compiled mirror searches within the bound only, which is
    what makes the far points cheap, and starts each point's walk from its particle's last
    closest triangle (slots (p,) int64 the particles), and gives the particles the patches
    their substeps' queries answer from (rows (p,) int64 their rows in mesh[24:27], -1: none;
    near, extra (p,) [m] and sweep [m]: compiled_patch._patch). Neither changes an answer, so
    this brute force, whose substeps query by brute force too, reads none and writes none."""
    res = closest(q[:, 0], q[:, 1], q[:, 2], k, mesh)
    lo, hi = mesh[8][mesh[7][k]], mesh[9][mesh[7][k]]
    d0 = np.maximum(np.maximum(lo[0] - q[:, 0], q[:, 0] - hi[0]), 0.0)
    d1 = np.maximum(np.maximum(lo[1] - q[:, 1], q[:, 1] - hi[1]), 0.0)
    d2 = np.maximum(np.maximum(lo[2] - q[:, 2], q[:, 2] - hi[2]), 0.0)
    in_box = d0 * d0 + d1 * d1 + d2 * d2 == 0.0
    keep = (res[1] < bound * bound) | (bool(mesh[14][k]) & in_box)
    phi[:] = np.where(keep, _signed(q[:, 0], q[:, 1], q[:, 2], q[:, 0], q[:, 1], q[:, 2], k,
                                    mesh, *res)[0], np.inf)
