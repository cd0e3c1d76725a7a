"""The collider SDFs vectorised over (n, 3) points: the tests' independent reference for the
column-form copy the solver uses (solver/collision/sdf.py) and its compiled mirror
(solver/kernels/compiled_contact.py). Moved here from the solver, which needs one copy per
backend; the formulas are sdf.py's module docstring's.
"""

import numpy as np

# the placement API beside the geometry, so tests reach both through one name
from solver.collision.frames import (  # noqa: F401
    BOX, CAPSULE, CYLINDER, PLANE, SPHERE, Frame, decompose, from_quaternion, interpolate, is_exact,
    to_local, to_quaternion)

_TINY = 1e-12


def _safe_unit(v, fallback):
    n = np.linalg.norm(v, axis=1)
    out = np.where(n[:, None] > _TINY, v / np.maximum(n, _TINY)[:, None], fallback)
    return out, n


def _box(q, half):
    d = np.abs(q) - half
    outside_v = np.maximum(d, 0.0)
    outside = np.linalg.norm(outside_v, axis=1)
    dmax = d.max(axis=1)
    phi = outside + np.minimum(dmax, 0.0)
    sign = np.where(q < 0, -1.0, 1.0)
    axis = np.argmax(d, axis=1)
    inside_g = np.zeros_like(q)
    inside_g[np.arange(q.shape[0]), axis] = sign[np.arange(q.shape[0]), axis]
    out_g = outside_v * sign / np.maximum(outside, _TINY)[:, None]
    grad = np.where((outside > _TINY)[:, None], out_g, inside_g)
    return phi, grad


def _cylinder(q, radius, half_depth, scale_xy=None):
    rho = np.hypot(q[:, 0], q[:, 1])
    radial = np.where((rho > _TINY)[:, None], q[:, :2] / np.maximum(rho, _TINY)[:, None],
                      np.array([1.0, 0.0]))
    d0 = rho - radius
    if scale_xy is not None:
        # Elliptic cross-section, semi-axes radius * scale_xy: only the radial distance is the
        # first-order estimate (the circle's in q / scale divided by its scaled gradient); the
        # axial one stays exact and the two combine as for the round cylinder. (Was: the whole
        # cylinder evaluated in q / s, which compared radial and axial distances in different
        # units, so inside near a rim a particle that came in through a cap was pushed out through
        # the side, in a band up to s_xy / s_z times its depth wide: a flat oval table top. And
        # float32 matrices from Blender take this branch for almost every rotated cylinder.)
        u = q[:, :2] / scale_xy
        rho = np.hypot(u[:, 0], u[:, 1])
        radial = np.where((rho > _TINY)[:, None], u / np.maximum(rho, _TINY)[:, None],
                          np.array([1.0, 0.0])) / scale_xy
        gn = np.linalg.norm(radial, axis=1)
        radial = radial / gn[:, None]
        d0 = (rho - radius) / gn
    d1 = np.abs(q[:, 2]) - half_depth
    o0, o1 = np.maximum(d0, 0.0), np.maximum(d1, 0.0)
    outside = np.hypot(o0, o1)
    phi = outside + np.minimum(np.maximum(d0, d1), 0.0)
    sz = np.where(q[:, 2] < 0, -1.0, 1.0)
    inv = 1.0 / np.maximum(outside, _TINY)
    out_g = np.column_stack([radial * (o0 * inv)[:, None], o1 * sz * inv])
    in_g = np.where((d0 > d1)[:, None], np.column_stack([radial, np.zeros_like(d0)]),
                    np.column_stack([np.zeros_like(radial), sz]))
    grad = np.where((outside > _TINY)[:, None], out_g, in_g)
    return phi, grad


def _capsule(q, radius, half_depth):
    seg = max(half_depth - radius, 0.0)
    c = np.clip(q[:, 2], -seg, seg)
    v = q.copy()
    v[:, 2] -= c
    grad, n = _safe_unit(v, np.array([0.0, 0.0, 1.0]))
    return n - radius, grad


def _primitive(shape, q, dims):
    """Unscaled primitive: dims = (radius, depth) for round shapes, full extents for the box."""
    if shape == SPHERE:
        grad, n = _safe_unit(q, np.array([0.0, 0.0, 1.0]))
        return n - dims[0], grad
    if shape == BOX:
        return _box(q, 0.5 * np.asarray(dims))
    if shape == CYLINDER:
        return _cylinder(q, dims[0], 0.5 * dims[1])
    if shape == CAPSULE:
        return _capsule(q, dims[0], 0.5 * dims[1])
    raise ValueError(f"unknown collider shape code {shape}")


def evaluate_local(shape, dims, frame, q):
    """phi (n,) [m] and unit gradient (n, 3) in the rotation-only frame, for local points q."""
    s = frame.scale
    if shape == PLANE:
        return q[:, 2].copy(), np.broadcast_to(np.array([0.0, 0.0, 1.0]), q.shape).copy()
    if is_exact(shape, s):
        if shape == BOX:
            return _box(q, 0.5 * np.asarray(dims) * s)
        return _primitive(shape, q, (dims[0] * s[0], dims[1] * s[2]))
    if shape == CYLINDER:
        return _cylinder(q, dims[0], 0.5 * dims[1] * s[2], s[:2])
    if shape == CAPSULE:
        # Keep the capsule the same shape as in the exact branch: total length depth * s_z, caps
        # of height radius * max(s_x, s_y) (half-ellipsoids), an elliptic cross-section between.
        # (Was: the unit capsule scaled by s, whose caps are radius * s_z tall, so the shape
        # jumped as soon as s_x != s_y by more than 1e-9 relative, which float32 matrices from
        # Blender do for almost every rotated capsule.) Evaluated as a sphere around the clamped
        # axis point, in coordinates divided by (s_x, s_y, cap).
        cap = max(s[0], s[1])
        seg = max(0.5 * dims[1] * s[2] - dims[0] * cap, 0.0)
        v = q.copy()
        v[:, 2] -= np.clip(q[:, 2], -seg, seg)
        s = np.array([s[0], s[1], cap])
        phi_u, g_u = _primitive(SPHERE, v / s, dims)
    else:
        phi_u, g_u = _primitive(shape, q / s, dims)
    g = g_u / s
    gn = np.maximum(np.linalg.norm(g, axis=1), _TINY)
    return phi_u / gn, g / gn[:, None]


def evaluate(shape, dims, frame, x):
    """Signed distance phi (n,) [m] of world points x (n, 3) [m] to the collider surface
    (negative inside) and the unit outward normal (n, 3) in world space."""
    q = to_local(frame, x)
    phi, g = evaluate_local(shape, dims, frame, q)
    return phi, g @ frame.rotation.T
