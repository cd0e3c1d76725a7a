"""The scalar pieces of the compiled rigid contact solve (kernels/compiled_rigid.py): one
contact's geometry, a body's response and impulse at a point, and Coulomb's rule. Each takes
and returns scalars only (the bodies' arrays go in where a helper writes a pose): Numba counts
references on every array handed to a function, inlined ones too (compiled_rigid.py's
docstring has the measurement). The operations are collision/rigid.py's and
collision/rigid_pairs.py's, in their order, so the backends keep the same bits."""

import numpy as np
from numba import njit

from .compiled_bodies import _segment_dots, cross3, face_gram, segment_closest
from .compiled_joints import _rotate

_TOL = 1e-6           # collision/bodies.TOL
_DEGENERATE = 1e-30   # collision/bodies.DEGENERATE
_PARALLEL = 1e-3      # collision/bodies.PARALLEL
_ACTIVE = 1e-9        # collision/bodies.ACTIVE
_PAIR = 0             # collision/bodies.PAIR ...
_VERTEX_TRI = 1
_EDGES = 2
_SEGMENTS = 3


@njit(cache=True, fastmath=False, inline="always")
def _iw9(R00, R01, R02, R10, R11, R12, R20, R21, R22, I00, I01, I02, I10, I11, I12, I20, I21,
         I22, v0, v1, v2):
    """R (I0^-1 (R^T v)): the world inverse inertia times v (constraints/joints._iw)."""
    u0 = R00 * v0 + R10 * v1 + R20 * v2
    u1 = R01 * v0 + R11 * v1 + R21 * v2
    u2 = R02 * v0 + R12 * v1 + R22 * v2
    t0 = I00 * u0 + I01 * u1 + I02 * u2
    t1 = I10 * u0 + I11 * u1 + I12 * u2
    t2 = I20 * u0 + I21 * u1 + I22 * u2
    return (R00 * t0 + R01 * t1 + R02 * t2, R10 * t0 + R11 * t1 + R12 * t2,
            R20 * t0 + R21 * t1 + R22 * t2)


@njit(cache=True, fastmath=False, inline="always")
def _unit_dir(d0, d1, d2, j0, j1, j2):
    """|d| and d / |d|, or the jitter direction j where d is (nearly) zero
    (compiled_bodies._direction)."""
    ln = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if ln > 1e-12:
        return ln, d0 / ln, d1 / ln, d2 / ln
    return ln, j0, j1, j2


@njit(cache=True, fastmath=False, inline="always")
def _geometry(kd, side, D, j0, j1, j2, x00, x10, x20, x01, x11, x21, x02, x12, x22, x03, x13,
              x23):
    """rigid_pairs._scalar_geometry (Pairs._normal's geometry) for one contact from its
    corners (x0k, x1k, x2k), k = 0..3: (ok, m0, m1, m2, pen, w0, w1, w2, w3)."""
    if kd == _VERTEX_TRI:
        e00 = x02 - x01
        e01 = x12 - x11
        e02 = x22 - x21
        e10 = x03 - x01
        e11 = x13 - x11
        e12 = x23 - x21
        nx, ny, nz = cross3(e00, e01, e02, e10, e11, e12)
        ln2 = nx * nx + ny * ny + nz * nz
        if not ln2 > _DEGENERATE:
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        ln = np.sqrt(ln2)
        nx = nx / ln
        ny = ny / ln
        nz = nz / ln
        d0 = x00 - x01
        d1 = x10 - x11
        d2 = x20 - x21
        d00, d01, d11, d20, d21 = face_gram(e00, e01, e02, e10, e11, e12, d0, d1, d2)
        den = d00 * d11 - d01 * d01
        bb = (d11 * d20 - d01 * d21) / den
        bc = (d00 * d21 - d01 * d20) / den
        ba = 1.0 - bb - bc
        if not (ba >= -_TOL and bb >= -_TOL and bc >= -_TOL):
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        m0 = side * nx
        m1 = side * ny
        m2 = side * nz
        return True, m0, m1, m2, D - (d0 * m0 + d1 * m1 + d2 * m2), 1.0, -ba, -bb, -bc
    if kd == _PAIR:
        ln, m0, m1, m2 = _unit_dir(x00 - x01, x10 - x11, x20 - x21, j0, j1, j2)
        return True, m0, m1, m2, D - ln, 1.0, -1.0, 0.0, 0.0
    # two segments: p q = corners 0 1, u w = corners 2 3 (compiled_bodies._segment_vectors)
    d10 = x01 - x00
    d11 = x11 - x10
    d12 = x21 - x20
    d20 = x03 - x02
    d21 = x13 - x12
    d22 = x23 - x22
    r0 = x00 - x02
    r1 = x10 - x12
    r2 = x20 - x22
    if kd == _EDGES:
        a, e, b, c, f = _segment_dots(d10, d11, d12, d20, d21, d22, r0, r1, r2)
        nx, ny, nz = cross3(d10, d11, d12, d20, d21, d22)
        ln2 = nx * nx + ny * ny + nz * nz
        if not ln2 > _PARALLEL * (a * e):
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        den = a * e - b * b
        ln = np.sqrt(ln2)
        sp = (b * f - c * e) / den
        tp = (a * f - b * c) / den
        if not (sp >= 0.0 and sp <= 1.0 and tp >= 0.0 and tp <= 1.0):
            return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        turn = -side if nx * j0 + ny * j1 + nz * j2 < 0.0 else side
        m0 = turn * (nx / ln)
        m1 = turn * (ny / ln)
        m2 = turn * (nz / ln)
        dn = ((r0 + sp * d10) - tp * d20) * m0 + ((r1 + sp * d11) - tp * d21) * m1 \
            + ((r2 + sp * d12) - tp * d22) * m2
        return True, m0, m1, m2, D - dn, 1.0 - sp, sp, -(1.0 - tp), -tp
    sp, tp = segment_closest(*_segment_dots(d10, d11, d12, d20, d21, d22, r0, r1, r2))
    ln, m0, m1, m2 = _unit_dir((r0 + sp * d10) - tp * d20, (r1 + sp * d11) - tp * d21,
                               (r2 + sp * d12) - tp * d22, j0, j1, j2)
    return True, m0, m1, m2, D - ln, 1.0 - sp, sp, -(1.0 - tp), -tp


@njit(cache=True, fastmath=False, inline="always")
def _resp(im, c0, c1, c2, R00, R01, R02, R10, R11, R12, R20, R21, R22, I00, I01, I02, I10, I11,
          I12, I20, I21, I22, P0, P1, P2, n0, n1, n2):
    """rigid._Solve.response of one body, from its pose and inertia in scalars."""
    r0 = P0 - c0
    r1 = P1 - c1
    r2 = P2 - c2
    x0 = r1 * n2 - r2 * n1
    x1 = r2 * n0 - r0 * n2
    x2 = r0 * n1 - r1 * n0
    a0, a1, a2 = _iw9(R00, R01, R02, R10, R11, R12, R20, R21, R22, I00, I01, I02, I10, I11, I12,
                      I20, I21, I22, x0, x1, x2)
    return im + (x0 * a0 + x1 * a1 + x2 * a2)


@njit(cache=True, fastmath=False, inline="always")
def _impulse(b, P0, P1, P2, p0, p1, p2, c, R, inv_mass, inv_inertia, moved):
    """The impulse p (already signed) at P on body b: c += p / M, R turned by I^-1 (r x p)
    (rigid._Solve.push)."""
    r0 = P0 - c[b, 0]
    r1 = P1 - c[b, 1]
    r2 = P2 - c[b, 2]
    im = inv_mass[b]
    c[b, 0] = c[b, 0] + p0 * im
    c[b, 1] = c[b, 1] + p1 * im
    c[b, 2] = c[b, 2] + p2 * im
    h0, h1, h2 = _iw9(R[b, 0, 0], R[b, 0, 1], R[b, 0, 2], R[b, 1, 0], R[b, 1, 1], R[b, 1, 2],
                      R[b, 2, 0], R[b, 2, 1], R[b, 2, 2], inv_inertia[b, 0, 0],
                      inv_inertia[b, 0, 1], inv_inertia[b, 0, 2], inv_inertia[b, 1, 0],
                      inv_inertia[b, 1, 1], inv_inertia[b, 1, 2], inv_inertia[b, 2, 0],
                      inv_inertia[b, 2, 1], inv_inertia[b, 2, 2], r1 * p2 - r2 * p1,
                      r2 * p0 - r0 * p2, r0 * p1 - r1 * p0)
    _rotate(R, b, h0, h1, h2)
    moved[b] = True


@njit(cache=True, fastmath=False, inline="always")
def _coulomb(need, used, depth, mu_s, mu_k):
    """Coulomb's bound on a friction impulse [kg m] (collision/rigid.py): (taken, static) for
    ``need`` the impulse that stops the slip, ``used`` the friction taken and ``depth`` the
    normal impulse summed over the same span: all of it while need + used <= mu_s depth
    (static), else what mu_k depth leaves."""
    if need + used <= mu_s * depth:
        return need, True
    return min(max(mu_k * depth - used, 0.0), need), False
