"""Signed distance functions of the collider primitives, in column form: the NumPy copy of the
collider geometry (the compiled copy is kernels/compiled_contact.py; the vectorised one the tests
check both against is tests/solver/sdf_vectorised.py).

Each collider is a primitive in its own frame (frames.py: M = T R S, shear dropped). A point x is
taken into the rotation-only frame q = R^T (x - t) and the primitive is evaluated there with its
dimensions multiplied by the scale (GAMES103 lecture 4):

    plane     phi = q2                                   (a half-space; normal = local +Z)
    sphere    phi = |q| - r
    box       d = |q| - h,  phi = |max(d, 0)| + min(max_i d_i, 0)
    cylinder  d = (|q_xy| - r, |q2| - depth/2),  phi = |max(d, 0)| + min(max(d), 0)
    capsule   phi = |q - (0, 0, clamp(q2, -l, l))| - r,  l = max(depth/2 - r, 0)

This is exact (frames.is_exact) for the plane and the box under any scale, for the cylinder and
capsule when the X and Y scales are equal, and for the sphere under uniform scale. Otherwise (an
ellipsoid, an elliptic cylinder or capsule) the primitive is evaluated in its unscaled frame and
its distance divided by the length of the scaled gradient, a first-order estimate whose zero set
and normal on it are exact (Osher and Fedkiw, "Level Set Methods", ch. 7). With
|v| = sqrt(v0*v0 + v1*v1 + v2*v2) summed in that order and scale (s0, s1, s2):

    ellipsoid   u = (q0/s0, q1/s1, q2/s2),  e = u/|u| (or (0, 0, 1) at the centre)
                g = (e0/s0, e1/s1, e2/s2),  phi = (|u| - r) / |g|,  normal = g / |g|
    capsule     the ellipsoid formula around the nearest axis point: v2 = q2 - clamp(q2, -l, l)
                with l = max(depth/2 s2 - r cap, 0), cap = max(s0, s1), and (s0, s1, cap) for
                the scale (u2 = v2/cap, g2 = e2/cap)
    cylinder    u = (q0/s0, q1/s1), rho = |u|, e = u/rho (or (1, 0) on the axis),
                g = (e0/s0, e1/s1), radial = g/|g|, d0 = (rho - r)/|g| (first order),
                d1 = |q2| - depth/2 s2 (exact); then as the round cylinder:
                phi = |max(d, 0)| + min(max(d0, d1), 0)

Everything is spelled out as scalar formulas over coordinate columns (q0, q1, q2) in a fixed
order of operations (no matrix products, norms, einsum or hypot), because the compiled mirrors
perform exactly these operations per point and the two backends agree bit for bit
(tests/solver/test_backends.py). A change to the geometry here must be made there too.
"""

import numpy as np

from .frames import BOX, CAPSULE, CYLINDER, PLANE, SPHERE, is_exact

TINY = 1e-12


def _unit(v0, v1, v2, fallback):
    n = np.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    ok = n > TINY
    nn = np.where(ok, n, 1.0)
    return (n, np.where(ok, v0 / nn, fallback[0]), np.where(ok, v1 / nn, fallback[1]),
            np.where(ok, v2 / nn, fallback[2]))


def local_sdf(shape, a, b, c, q0, q1, q2):
    """phi and unit gradient columns of an exact primitive at local columns q0, q1, q2.
    (a, b, c): sphere/cylinder/capsule (radius, half depth, 0); box half extents."""
    if shape == PLANE:
        z = np.zeros_like(q2)
        return q2.copy(), z, z.copy(), z + 1.0
    if shape == SPHERE:
        n, g0, g1, g2 = _unit(q0, q1, q2, (0.0, 0.0, 1.0))
        return n - a, g0, g1, g2
    if shape == CAPSULE:
        seg = max(b - a, 0.0)
        v2 = q2 - np.minimum(np.maximum(q2, -seg), seg)
        n, g0, g1, g2 = _unit(q0, q1, v2, (0.0, 0.0, 1.0))
        return n - a, g0, g1, g2
    if shape == BOX:
        s0 = np.where(q0 < 0, -1.0, 1.0)
        s1 = np.where(q1 < 0, -1.0, 1.0)
        s2 = np.where(q2 < 0, -1.0, 1.0)
        d0, d1, d2 = np.abs(q0) - a, np.abs(q1) - b, np.abs(q2) - c
        o0, o1, o2 = np.maximum(d0, 0.0), np.maximum(d1, 0.0), np.maximum(d2, 0.0)
        outside = np.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
        dmax = np.maximum(np.maximum(d0, d1), d2)
        phi = outside + np.minimum(dmax, 0.0)
        out = outside > TINY
        on = np.where(out, outside, 1.0)
        ax0 = (d0 >= d1) & (d0 >= d2)                 # argmax, first wins
        ax1 = ~ax0 & (d1 >= d2)
        ax2 = ~ax0 & ~ax1
        g0 = np.where(out, o0 * s0 / on, np.where(ax0, s0, 0.0))
        g1 = np.where(out, o1 * s1 / on, np.where(ax1, s1, 0.0))
        g2 = np.where(out, o2 * s2 / on, np.where(ax2, s2, 0.0))
        return phi, g0, g1, g2
    if shape == CYLINDER:
        rho = np.sqrt(q0 * q0 + q1 * q1)
        ok = rho > TINY
        rr = np.where(ok, rho, 1.0)
        r0 = np.where(ok, q0 / rr, 1.0)
        r1 = np.where(ok, q1 / rr, 0.0)
        return cylinder_sdf(rho - a, r0, r1, q2, b)
    raise ValueError(f"unknown collider shape code {shape}")


def cylinder_sdf(d0, r0, r1, q2, b):
    """A cylinder's phi and unit gradient columns from its radial distance d0 and radial unit
    direction (r0, r1): combined with the exact axial distance |q2| - b (b = half depth) as
    phi = |max(d, 0)| + min(max(d0, d1), 0). Shared by the round (exact) and elliptic
    (approx_local_sdf, first-order d0) cylinders."""
    d1 = np.abs(q2) - b
    o0, o1 = np.maximum(d0, 0.0), np.maximum(d1, 0.0)
    outside = np.sqrt(o0 * o0 + o1 * o1)
    phi = outside + np.minimum(np.maximum(d0, d1), 0.0)
    sz = np.where(q2 < 0, -1.0, 1.0)
    out = outside > TINY
    on = np.where(out, outside, 1.0)
    radial = d0 > d1
    f = o0 / on
    g0 = np.where(out, r0 * f, np.where(radial, r0, 0.0))
    g1 = np.where(out, r1 * f, np.where(radial, r1, 0.0))
    g2 = np.where(out, o1 * sz / on, np.where(radial, 0.0, sz))
    return phi, g0, g1, g2


def exact_scaled_dims(shape, dims, scale):
    """(a, b, c) of local_sdf for an exact collider of dimensions dims under scale."""
    if shape == BOX:
        return 0.5 * dims[0] * scale[0], 0.5 * dims[1] * scale[1], 0.5 * dims[2] * scale[2]
    return dims[0] * scale[0], 0.5 * dims[1] * scale[2], 0.0


def collider_sdf(shape, approximate, abc, scale, q0, q1, q2):
    """phi and unit gradient columns at local columns q0, q1, q2 of an exact collider
    (local_sdf, abc from scaled_dims) or, with approximate, of a first-order one
    (approx_local_sdf, abc from approx_scaled_dims; scale (3,) its scale)."""
    if approximate:
        return approx_local_sdf(shape, *abc, scale[0], scale[1], q0, q1, q2)
    return local_sdf(shape, *abc, q0, q1, q2)



def approx_scaled_dims(shape, dims, scale):
    """(a, b, c) of local_sdf for a non-exact collider of dimensions dims (radius, depth, 0)
    under scale (3,): sphere (r, 0, s2); cylinder (r, depth/2 s2, 0); capsule (r, l, cap)."""
    r = dims[0]
    if shape == SPHERE:
        return r, 0.0, scale[2]
    if shape == CYLINDER:
        return r, 0.5 * dims[1] * scale[2], 0.0
    if shape == CAPSULE:
        cap = max(scale[0], scale[1])
        return r, max(0.5 * dims[1] * scale[2] - r * cap, 0.0), cap
    raise ValueError(f"shape code {shape} is always exact (no first-order SDF)")


def approx_local_sdf(shape, a, b, c, s0, s1, q0, q1, q2):
    """phi (k,) [m] and unit gradient columns (k,) of a non-exact collider at local columns
    q0, q1, q2 (k,) [m]; (a, b, c) from scaled_dims, s0, s1 the collider's X and Y scales."""
    if shape == CYLINDER:
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
        return cylinder_sdf((rho - a) / gn, r0, r1, q2, b)
    if shape == SPHERE:
        v2 = q2
    elif shape == CAPSULE:
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


def placement(shape, dims, scale):
    """(approximate, abc) of a collider of dimensions dims (3,) under scale (3,): whether its SDF
    is the first-order one, and the scaled dimensions (a, b, c) that SDF takes."""
    if is_exact(shape, scale):
        return False, exact_scaled_dims(shape, dims, scale)
    return True, approx_scaled_dims(shape, dims, scale)


def enclosing(shape, dims, scale):
    """(abc, ratio) for a broad phase that must not miss a first-order collider (placement's
    approximate case): abc the dimensions of the exact primitive of the same shape that
    encloses it, and ratio = rho in (0, 1] such that wherever that primitive's exact distance
    d is positive, phi >= rho d for the first-order phi (the module docstring's formulas).

    With s the scale of the formula (the ellipsoid's (s0, s1, s2), the capsule's (s0, s1,
    cap), the cylinder's (s0, s1) across its axis), |u| >= |q| / max(s) and |g| <= 1 / min(s),
    so phi = (|u| - r) / |g| >= (min(s) / max(s)) (|q| - r max(s)): rho = min(s) / max(s), and
    the enclosing primitive takes the radius r max(s) (a cylinder's axial distance is exact,
    and its combination of the two distances is monotone and positively homogeneous). An exact
    SDF is 1-Lipschitz and phi need not be: a point of an edge of length L whose midpoint has
    d(mid) - L / 2 > reach / rho lies nowhere within reach of the first-order collider."""
    s0, s1, s2 = scale
    if shape == SPHERE:
        top, low = max(s0, s1, s2), min(s0, s1, s2)
        return exact_scaled_dims(shape, dims, (top, top, top)), low / top
    top, low = max(s0, s1), min(s0, s1)
    return exact_scaled_dims(shape, dims, (top, top, s2)), low / top


def lower_bound(shape, dims, frame, x):
    """(d, ratio) for points x (n, 3) [m] and a collider placed at frame: d (n,) [m] its exact
    signed distance and ratio 1, or, for a first-order collider, the exact distance of the
    primitive enclosing it and enclosing's ratio; so phi >= ratio d wherever d > 0, and d is
    1-Lipschitz: a test of whether something within m of x may come within M of the collider
    is d < m + M / ratio (Colliders.near_moving)."""
    approximate, _ = placement(shape, dims, frame.scale)
    if not approximate:
        return evaluate(shape, dims, frame, x)[0], 1.0
    abc, ratio = enclosing(shape, dims, frame.scale)
    R, t = frame.rotation, frame.translation
    d0, d1, d2 = x[:, 0] - t[0], x[:, 1] - t[1], x[:, 2] - t[2]
    q0 = d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0]
    q1 = d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1]
    q2 = d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2]
    return local_sdf(shape, *abc, q0, q1, q2)[0], ratio


def evaluate(shape, dims, frame, x):
    """Signed distance phi (n,) [m] of world points x (n, 3) [m] to a collider placed at frame
    (frames.Frame), negative inside, and the unit outward normal (n, 3) in world space."""
    R, t = frame.rotation, frame.translation
    d0, d1, d2 = x[:, 0] - t[0], x[:, 1] - t[1], x[:, 2] - t[2]
    q0 = d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0]
    q1 = d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1]
    q2 = d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2]
    approximate, abc = placement(shape, dims, frame.scale)
    phi, g0, g1, g2 = collider_sdf(shape, approximate, abc, frame.scale, q0, q1, q2)
    normal = np.stack([R[0, 0] * g0 + R[0, 1] * g1 + R[0, 2] * g2,
                       R[1, 0] * g0 + R[1, 1] * g1 + R[1, 2] * g2,
                       R[2, 0] * g0 + R[2, 1] * g1 + R[2, 2] * g2], axis=1)
    return phi, normal
