"""First-order SDFs of the non-exact colliders (sdf.is_exact false), in column form.

These are the same geometry and semantics as sdf.evaluate_local's non-exact branches (sdf.py's
module docstring explains them), spelled out as scalar formulas over coordinate columns
(q0, q1, q2) of the rotation-only frame in a fixed order of operations: no matrix products, no
np.linalg.norm, no hypot, no einsum. kernels_contact._approx_sdf performs exactly these
operations per point, so the NumPy and compiled backends agree bit for bit
(tests/solver/test_backends.py). sdf.evaluate stays the vectorised reference the tests and the
broad phase use; the contact solve (exact.project, exact.project_points) uses this form.

With |v| = sqrt(v0*v0 + v1*v1 + v2*v2) summed in that order and scale (s0, s1, s2):

    ellipsoid   u = (q0/s0, q1/s1, q2/s2),  e = u/|u| (or (0, 0, 1) at the centre)
                g = (e0/s0, e1/s1, e2/s2),  phi = (|u| - r) / |g|,  normal = g / |g|
    capsule     the ellipsoid formula around the nearest axis point: v2 = q2 - clamp(q2, -l, l)
                with l = max(depth/2 s2 - r cap, 0), cap = max(s0, s1), and (s0, s1, cap) for
                the scale (u2 = v2/cap, g2 = e2/cap)
    cylinder    u = (q0/s0, q1/s1), rho = |u|, e = u/rho (or (1, 0) on the axis),
                g = (e0/s0, e1/s1), radial = g/|g|, d0 = (rho - r)/|g| (first order),
                d1 = |q2| - depth/2 s2 (exact); then as the round cylinder:
                phi = |max(d, 0)| + min(max(d0, d1), 0)

Source: GAMES103 lecture 4 (signed distance functions), the first-order distance
phi_u / |grad phi_u| of a level set (Osher and Fedkiw, "Level Set Methods", ch. 7).
"""

import numpy as np

from . import exact, sdf

TINY = 1e-12     # the same guard as sdf._TINY and exact.TINY


def scaled_dims(shape, dims, scale):
    """(a, b, c) of local_sdf for a non-exact collider of dimensions dims (radius, depth, 0)
    under scale (3,): sphere (r, 0, s2); cylinder (r, depth/2 s2, 0); capsule (r, l, cap)."""
    r = dims[0]
    if shape == sdf.SPHERE:
        return r, 0.0, scale[2]
    if shape == sdf.CYLINDER:
        return r, 0.5 * dims[1] * scale[2], 0.0
    if shape == sdf.CAPSULE:
        cap = max(scale[0], scale[1])
        return r, max(0.5 * dims[1] * scale[2] - r * cap, 0.0), cap
    raise ValueError(f"shape code {shape} is always exact (no first-order SDF)")


def local_sdf(shape, a, b, c, s0, s1, q0, q1, q2):
    """phi (k,) [m] and unit gradient columns (k,) of a non-exact collider at local columns
    q0, q1, q2 (k,) [m]; (a, b, c) from scaled_dims, s0, s1 the collider's X and Y scales."""
    if shape == sdf.CYLINDER:
        u0 = q0 / s0
        u1 = q1 / s1
        rho = np.sqrt(u0 * u0 + u1 * u1)
        ok = rho > TINY
        rr = np.where(ok, rho, 1.0)
        e0 = np.where(ok, u0 / rr, 1.0) / s0
        e1 = np.where(ok, u1 / rr, 0.0) / s1
        gn = np.sqrt(e0 * e0 + e1 * e1)        # >= 1 / max(s0, s1) > 0: never zero
        r0 = e0 / gn
        r1 = e1 / gn
        return exact.cylinder_sdf((rho - a) / gn, r0, r1, q2, b)
    if shape == sdf.SPHERE:
        v2 = q2
    elif shape == sdf.CAPSULE:
        v2 = q2 - np.minimum(np.maximum(q2, -b), b)
    else:
        raise ValueError(f"shape code {shape} is always exact (no first-order SDF)")
    u0 = q0 / s0
    u1 = q1 / s1
    u2 = v2 / c
    n = np.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
    ok = n > TINY
    nn = np.where(ok, n, 1.0)
    g0 = np.where(ok, u0 / nn, 0.0) / s0
    g1 = np.where(ok, u1 / nn, 0.0) / s1
    g2 = np.where(ok, u2 / nn, 1.0) / c
    gn = np.maximum(np.sqrt(g0 * g0 + g1 * g1 + g2 * g2), TINY)
    return (n - a) / gn, g0 / gn, g1 / gn, g2 / gn
