"""Compiled kernels of the particles' own motion: air drag and wind (forces.py), the Verlet
prediction and the squared motion that the step's once-a-frame reads measure (integrator.py),
the surface normals drag reads, the two parallel passes that open and close each substep of
the compiled loop (compiled_loop.py), and the colliders' restitution of its velocity pass.

The same arithmetic as the NumPy kernels, operation for operation (compiled.py's docstring), so
the backends agree bit for bit. Every loop here gives each iteration a particle of its own (or
writes only its own drag entry), so no thread count changes a bit.
Importing this module requires Numba; backend.py imports it lazily.
"""

import math

import numpy as np
from numba import njit, prange

from .compiled_contact import release_one
from .compiled_options import prange_only


@njit(cache=True, fastmath=False, inline="always")
def _predict_one(X, Xp, a_h2, keep, lim, clamp, p):
    """Particle p's Verlet prediction (integrator.predict)."""
    dx = X[0, p] - Xp[0, p]
    dy = X[1, p] - Xp[1, p]
    dz = X[2, p] - Xp[2, p]
    Xp[0, p] = X[0, p]
    Xp[1, p] = X[1, p]
    Xp[2, p] = X[2, p]
    dx *= keep[p]
    dy *= keep[p]
    dz *= keep[p]
    dx += a_h2[0, p]
    dy += a_h2[1, p]
    dz += a_h2[2, p]
    if clamp:
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        f = min(1.0, lim[p] / max(length, 1e-300))
        dx *= f
        dy *= f
        dz *= f
    X[0, p] += dx
    X[1, p] += dy
    X[2, p] += dz


@njit(cache=True, parallel=prange_only(), fastmath=False)
def predict(X, Xp, a_h2, keep, lim):
    """Verlet prediction (integrator.predict) on (3, n) rows; keep (n,) velocity fraction kept;
    lim (n,) speed*h or empty."""
    clamp = lim.shape[0] > 0
    for p in prange(X.shape[1]):
        _predict_one(X, Xp, a_h2, keep, lim, clamp, p)


@njit(cache=True, fastmath=False, inline="always")
def _drag_one(X, Xp, i, q, drift, normal, along_normal, decay, g_h2):
    """Particle i's (drag entry q's) exact exponential drag over a substep (forces.apply_drag)."""
    x0 = X[0, i]
    x1 = X[1, i]
    x2 = X[2, i]
    d0 = x0 - Xp[0, i]
    d1 = x1 - Xp[1, i]
    d2 = x2 - Xp[2, i]
    r0 = d0 - drift[0, q]
    r1 = d1 - drift[1, q]
    r2 = d2 - drift[2, q]
    if along_normal[q]:
        n0 = normal[0, q]
        n1 = normal[1, q]
        n2 = normal[2, q]
        rn = r0 * n0 + r1 * n1 + r2 * n2
        gn = g_h2[0] * n0 + g_h2[1] * n1 + g_h2[2] * n2
        f = rn * (1.0 - decay[q]) + gn
        Xp[0, i] = x0 - (d0 - n0 * f)
        Xp[1, i] = x1 - (d1 - n1 * f)
        Xp[2, i] = x2 - (d2 - n2 * f)
    else:
        e = decay[q]
        Xp[0, i] = x0 - (drift[0, q] + r0 * e - g_h2[0])
        Xp[1, i] = x1 - (drift[1, q] + r1 * e - g_h2[1])
        Xp[2, i] = x2 - (drift[2, q] + r2 * e - g_h2[2])


@njit(cache=True, parallel=prange_only(), fastmath=False)
def apply_drag(X, Xp, ids, drift, normal, along_normal, decay, g_h2):
    """Scalar mirror of forces.apply_drag: exact exponential drag over a substep, on x*; ids
    unique, so each iteration touches its own particle."""
    for q in prange(ids.shape[0]):
        _drag_one(X, Xp, ids[q], q, drift, normal, along_normal, decay, g_h2)


# below this many particles the substep's opening and closing passes (drag_and_predict,
# close_substep) run on the calling thread: their few nanoseconds a particle cost less than a
# parallel region's wait (10 ragdolls, 1,760 particles: 14.5 us a call on two threads inside
# Blender, about 7 on one; 100 ragdolls, 17,600: 45 us on two; measured 2026-11-27)
LOOP_SERIAL_BELOW = 4096


@njit(cache=True, parallel=prange_only(), fastmath=False)
def drag_and_predict(X, Xp, drag_slot, drift, normal, along_normal, decay, g_h2, a_h2, keep,
                     lim, X_pred, copy_pred, depth, used, touching):
    """A substep's opening in one parallel pass (what the compiled loop runs): each particle's
    drag (drag_slot (n,) int64 its entry in the drag arrays, -1 for none), then its
    prediction, the same operations on the same particle as apply_drag and predict one after
    the other (the NumPy loop's order), with one wait instead of two. The same pass copies the
    prediction into X_pred (3, n) when copy_pred (restitution measures from it; the loop
    corrects the pinned particles after placing them) and clears the particle's contact
    scratch (depth, used (n,) [m], touching (n,) bool): serial loops over every particle
    cost a 65k-particle cloth more than a tenth of its one-thread time per frame."""
    clamp = lim.shape[0] > 0
    if X.shape[1] < LOOP_SERIAL_BELOW:
        for p in range(X.shape[1]):
            _open_one(X, Xp, drag_slot, drift, normal, along_normal, decay, g_h2, a_h2, keep,
                      lim, clamp, X_pred, copy_pred, depth, used, touching, p)
        return
    for p in prange(X.shape[1]):
        _open_one(X, Xp, drag_slot, drift, normal, along_normal, decay, g_h2, a_h2, keep, lim,
                  clamp, X_pred, copy_pred, depth, used, touching, p)


@njit(cache=True, fastmath=False, inline="always")
def _open_one(X, Xp, drag_slot, drift, normal, along_normal, decay, g_h2, a_h2, keep, lim,
              clamp, X_pred, copy_pred, depth, used, touching, p):
    """drag_and_predict for particle p."""
    q = drag_slot[p]
    if q >= 0:
        _drag_one(X, Xp, p, q, drift, normal, along_normal, decay, g_h2)
    _predict_one(X, Xp, a_h2, keep, lim, clamp, p)
    if copy_pred:
        X_pred[0, p] = X[0, p]
        X_pred[1, p] = X[1, p]
        X_pred[2, p] = X[2, p]
    depth[p] = 0.0
    used[p] = 0.0
    touching[p] = False


@njit(cache=True, parallel=prange_only(), fastmath=False)
def close_substep(X, Xp, lift, lifted):
    """A substep's closing in one parallel pass: the overlap resolved without speed moved into
    x* (release_overlap, per particle) and the count of non-finite coordinates of X (0 when
    the substep is sound)."""
    bad = 0
    if X.shape[1] < LOOP_SERIAL_BELOW:
        for i in range(X.shape[1]):
            bad += _close_one(X, Xp, lift, lifted, i)
        return bad
    for i in prange(X.shape[1]):
        bad += _close_one(X, Xp, lift, lifted, i)
    return bad


@njit(cache=True, fastmath=False, inline="always")
def _close_one(X, Xp, lift, lifted, i):
    """close_substep for particle i: 1 when a coordinate is not finite, else 0."""
    release_one(Xp, lift, lifted, i)
    if math.isfinite(X[0, i]) and math.isfinite(X[1, i]) and math.isfinite(X[2, i]):
        return 0
    return 1


# below this many particles squared_motion runs on the calling thread: called from Python, a
# parallel region first wakes the threads (100 crates, 800 particles: 20 us a call on two
# threads, against 4 us on one)
SERIAL_BELOW = 16384


@njit(cache=True, fastmath=False, inline="always")
def _squared_motion_one(A, B, out, i):
    d0 = A[0, i] - B[0, i]
    d1 = A[1, i] - B[1, i]
    d2 = A[2, i] - B[2, i]
    out[i] = d0 * d0 + d1 * d1 + d2 * d2


@njit(cache=True, parallel=prange_only(), fastmath=False)
def squared_motion(A, B, out):
    """Mirror of integrator.squared_motion: out (n,) [m^2] |A_i - B_i|^2 of (3, n) A, B [m]."""
    if A.shape[1] < SERIAL_BELOW:
        for i in range(A.shape[1]):
            _squared_motion_one(A, B, out, i)
    else:
        for i in prange(A.shape[1]):
            _squared_motion_one(A, B, out, i)


@njit(cache=True, parallel=prange_only(), fastmath=False)
def surface_normals(X, tris, tri_start, vertex_tris, ids, out):
    """Mirror of forces.surface_normals: out (3, q) the unit area-weighted normals of particles
    ids (q,) int64 over triangles tris (F, 3) int64 of X (3, n) [m], zero where none. Each
    particle gathers the face normals of its own triangles, vertex_tris[tri_start[i]:
    tri_start[i + 1]] (int64, increasing), in the order NumPy's bincount adds them (by flat
    index), so the sums carry the same bits; a face's normal is recomputed by each of its
    corners rather than stored, which costs less than a second pass over the faces."""
    for v in prange(ids.shape[0]):
        i = ids[v]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for r in range(tri_start[i], tri_start[i + 1]):
            f = vertex_tris[r]
            i0 = tris[f, 0]
            i1 = tris[f, 1]
            i2 = tris[f, 2]
            a0 = X[0, i1] - X[0, i0]
            a1 = X[1, i1] - X[1, i0]
            a2 = X[2, i1] - X[2, i0]
            b0 = X[0, i2] - X[0, i0]
            b1 = X[1, i2] - X[1, i0]
            b2 = X[2, i2] - X[2, i0]
            s0 += a1 * b2 - a2 * b1
            s1 += a2 * b0 - a0 * b2
            s2 += a0 * b1 - a1 * b0
        length = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
        if not length > 0:
            length = 1.0
        out[0, v] = s0 / length
        out[1, v] = s1 / length
        out[2, v] = s2 / length


@njit(cache=True, fastmath=False)
def restitution(X, Xp, X_pred, h, gravity_norm, e_restitution, e_particle, touching, collider,
                normal, motion, rigid_body):
    """Scalar mirror of collision/project.restitution: one particle per iteration (serial: it
    skips all but the few that bounce, and a parallel kernel costs a second of compile)."""
    for i in range(X.shape[1]):
        if not touching[i] or rigid_body[i] >= 0:
            continue
        e = max(e_restitution[collider[i]], e_particle[i])
        if not e > 0:
            continue
        n0 = normal[i, 0]
        n1 = normal[i, 1]
        n2 = normal[i, 2]
        m0 = motion[i, 0]
        m1 = motion[i, 1]
        m2 = motion[i, 2]
        p0 = Xp[0, i]
        p1 = Xp[1, i]
        p2 = Xp[2, i]
        v_arrive = ((X_pred[0, i] - p0 - m0) * n0 + (X_pred[1, i] - p1 - m1) * n1
                    + (X_pred[2, i] - p2 - m2) * n2) / h
        v_now = ((X[0, i] - p0 - m0) * n0 + (X[1, i] - p1 - m1) * n1
                 + (X[2, i] - p2 - m2) * n2) / h
        if not v_arrive < -2.0 * gravity_norm * h:
            continue
        dv = (-e * v_arrive - v_now) * h
        Xp[0, i] = p0 - n0 * dv
        Xp[1, i] = p1 - n1 * dv
        Xp[2, i] = p2 - n2 * dv
