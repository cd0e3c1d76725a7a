"""Numba-compiled patches of mesh colliders: a particle's queries of a mesh near it, answered
from a few triangles when that answer can be proved (compiled_mesh.py walks the BVH otherwise).

At the step's start (the collide stage's mesh_distances, which finds each candidate's distance),
a particle within reach of a mesh collider's surface gets a patch: every triangle nearer than
R = d_h + 2 (travel + sweep) + PATCH_SLACK (collision/mesh.py), d_h the distance of its last
closest triangle (the hint; at least the nearest one's), travel how far it went in the step
before (a guess of this one's: a wrong guess costs walks, never an answer), sweep how far any
surface point moves in the step; at most PATCH triangles, else none. In a substep, at x,
moved = |x - x0| from where it was then: a triangle outside the patch was at least R away
from x0 and has moved at most sweep, so it is at least limit = R - sweep - moved from x. The
patch's least (squared distance, index) below limit^2 (less far more than rounding) is then
the least over the whole mesh, the brute force's answer (collision/mesh_query.py), and the
BVH walk is skipped; otherwise the walk answers. The answer is the same either way, so the
backends agree bit for bit and the patches, like the hints, are scratch that checkpoints
skip. The NumPy backend, a brute force, reads none.

Why: a cloth resting on a mesh queries it for most of its particles in every substep, and a
walk of a 50,040-triangle sphere's BVH from its root visits about 40 boxes and the triangles
of every leaf within the distance, where a patch holds about 10 triangles. The 64 x 64 drape
of benchmarks/mesh_collider.py (2026-11-30, two threads, three runs alternated with the code
before): about 880 particles queried in every substep; the substeps of its frame 41 18.9-20.2
to 10.6-11.6 ms, a frame 25.4-27.0 to 20.1-21.0 ms (the mesh's cost 19.5-20.9 to 14.2-15.3),
the same bits.
"""

import numpy as np
from numba import njit, prange

from .compiled_mesh import (_STACK, _box_d2, _hinted, _into, _missing, _signed, _to_world, _tri_at,
                            mesh_closest)
from .compiled_options import prange_only

PATCH = 16          # collision/mesh.PATCH
# a patch's answer stands when its least squared distance is below limit^2 by more than any
# rounding of a triangle's distance; a triangle joins the patch below R^2 grown as much
_PATCH_PROOF = 1.0 - 1e-9
_PATCH_PAD = 1.0 + 1e-9


@njit(cache=True, fastmath=False, inline="always")
def _mesh_distance(R, t, Rb, tb, x0, x1, x2, xp0, xp1, xp2, k, mesh, i):
    """_distance for particle i at x against mesh collider k: its patch first
    (mesh_sdf_near; compiled_contact._particle_distance takes this path)."""
    X0 = mesh[22]                   # where it was at the step's start, its patch's centre
    e0 = x0 - X0[i, 0]
    e1 = x1 - X0[i, 1]
    e2 = x2 - X0[i, 2]
    q0, q1, q2 = _into(R, t, x0, x1, x2)
    r0, r1, r2 = _into(Rb, tb, xp0, xp1, xp2)
    phi, g0, g1, g2, tri, wa, wb, wc = mesh_sdf_near(q0, q1, q2, r0, r1, r2, k, mesh, i,
                                                     np.sqrt(e0 * e0 + e1 * e1 + e2 * e2))
    return _to_world(R, phi, g0, g1, g2, tri, wa, wb, wc)


@njit(cache=True, fastmath=False, inline="always")
def mesh_sdf_near(q0, q1, q2, r0, r1, r2, k, mesh, slot, moved):
    """mesh_sdf for particle slot (>= 0) at q, moved [m] from its place at the step's start:
    its patch first (mesh_closest_near)."""
    t, dd, c0, c1, c2, region, wa, wb, wc = mesh_closest_near(q0, q1, q2, k, mesh, slot, moved)
    return _signed(q0, q1, q2, r0, r1, r2, k, mesh, t, dd, c0, c1, c2, region, wa, wb, wc)


@njit(cache=True, fastmath=False, inline="always")
def mesh_closest_near(p0, p1, p2, k, mesh, slot, moved):
    """mesh_closest (no bound) for particle slot at p, moved [m] from its place at the step's
    start (mesh[22]): its patch answers when it can prove the answer (module docstring), else
    the BVH walk does; the same answer either way. The patch's loop is inlined here, the walk
    is a call (_closest), and only the particles' own projections (compiled_contact
    _mesh_distance) take this path: a call counts references on each array it is passed,
    about as long as a patch's few triangles take (the 64 x 64 drape on a 50,040-triangle
    deforming sphere, 2026-11-30: its substeps 15.6 ms a step with the patch read in a call of
    its own, 10.9 inlined, 22.1 without patches; compiled_mesh._closest says why the walk is a
    call)."""
    col = mesh[21][k]
    if col >= 0:
        row = mesh[23][slot, col]
        if row >= 0:
            res = _patch_closest(p0, p1, p2, mesh[2], mesh[3], mesh[24], mesh[25], row)
            # every triangle outside the patch was patch_reach + sweep away at the step's
            # start, so now at least limit away: the patch's least (d2, index) below that is
            # the answer
            limit = mesh[26][row] - moved
            if res[0] >= 0 and limit > 0 and res[1] < limit * limit * _PATCH_PROOF:
                mesh[18][slot] = res[0]
                return res
    return mesh_closest(p0, p1, p2, k, mesh, np.inf, slot)


@njit(cache=True, fastmath=False, inline="always")
def _patch_closest(p0, p1, p2, tri, W, patch_tri, patch_count, row):
    """The least (d2, index) over patch ``row``'s triangles, as _closest returns it (tri -1:
    an empty patch)."""
    found = _missing(np.inf)                   # _tri_closest's of triangle bt
    bt = -1
    for m in range(patch_count[row]):
        j = patch_tri[row, m]
        d = _tri_at(p0, p1, p2, tri, W, j)
        if d[0] < found[0] or (d[0] == found[0] and j < bt):
            found, bt = d, j
    return (bt,) + found


@njit(cache=True, fastmath=False)
def _patch(p0, p1, p2, k, tri, W, node_start, lo, hi, right, t0, t1, hint, tri_start, slot,
           near, extra, row, patch_tri, patch_count, patch_reach, sweep):
    """The closest triangle to local point p (as _closest: the least (d2, index)) and, in one
    walk, particle slot's patch into row ``row``: every triangle nearer than R = d_h + extra,
    d_h the distance of its hint (its last closest triangle, mesh[18]: d_h >= the least, so
    the closest is among them), patch_reach[row] = R - sweep. No patch (patch_count[row] = -1)
    and tri = -2, for the caller to walk, when there is no hint, when its distance is beyond
    ``near`` (a particle that will not be a candidate, or seldom near enough to be queried)
    or when more than PATCH triangles are that near (the walk stops at the first too many)."""
    d_h = np.sqrt(_hinted(p0, p1, p2, k, tri, W, hint, tri_start, slot)[1])   # inf: none
    patch_count[row] = -1
    if not d_h <= near:
        return (-2,) + _missing(np.inf)
    reach = d_h + extra
    # a triangle is in the patch when its computed d2 is below R^2 grown by far more than
    # its rounding, so none whose true distance is under R is left out
    take2 = reach * reach * _PATCH_PAD
    found = _missing(np.inf)                   # _tri_closest's of triangle bt
    bt = -1
    count = 0
    stack = np.empty(_STACK, np.int64)
    stack[0] = node_start[k]
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        if _box_d2(lo, hi, i, p0, p1, p2) > take2:
            continue
        if right[i] >= 0:
            stack[top] = right[i]
            stack[top + 1] = i + 1
            top += 2
            continue
        for j in range(t0[i], t1[i]):
            d = _tri_at(p0, p1, p2, tri, W, j)
            if d[0] < take2:
                if count == PATCH:          # too many to be worth reading: no patch
                    return (-2,) + _missing(np.inf)
                patch_tri[row, count] = j
                count += 1
            if d[0] < found[0] or (d[0] == found[0] and j < bt):
                found, bt = d, j
    patch_count[row] = count
    patch_reach[row] = reach - sweep
    if bt >= 0:
        hint[slot] = bt
    return (bt,) + found


@njit(cache=True, parallel=prange_only(), fastmath=False)
def mesh_distances(q, slots, k, mesh, bound, near, extra, sweep, rows, phi):
    """Scalar mirror of mesh_query.mesh_distances: phi (p,) [m] of local points q (p, 3);
    where rows[i] >= 0, particle slots[i]'s patch too (_patch: near[i], extra[i] [m]), sweep
    [m] how far the surface moves in the step."""
    lo = mesh[8]
    hi = mesh[9]
    root = mesh[7][k]
    closed = mesh[14][k]
    for i in prange(q.shape[0]):
        p0 = q[i, 0]
        p1 = q[i, 1]
        p2 = q[i, 2]
        res = (-2,) + _missing(np.inf)
        if rows[i] >= 0:
            res = _patch(p0, p1, p2, k, mesh[2], mesh[3], mesh[7], mesh[8], mesh[9], mesh[10],
                         mesh[12], mesh[13], mesh[18], mesh[5], slots[i], near[i], extra[i],
                         rows[i], mesh[24], mesh[25], mesh[26], sweep)
            if res[0] >= 0 and not res[1] < bound * bound:
                res = (-1,) + _missing(np.inf)
        if res[0] == -2:
            res = mesh_closest(p0, p1, p2, k, mesh, bound * bound, slots[i])
        if res[0] < 0:
            if not (closed and _box_d2(lo, hi, root, p0, p1, p2) == 0.0):
                phi[i] = np.inf
                continue
            res = mesh_closest(p0, p1, p2, k, mesh, np.inf, -1)
        t, dd, c0, c1, c2, region, wa, wb, wc = res
        phi[i] = _signed(p0, p1, p2, p0, p1, p2, k, mesh, t, dd, c0, c1, c2, region, wa, wb,
                         wc)[0]
