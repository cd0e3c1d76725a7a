"""Signed distance functions of the collider primitives (GAMES103 lecture 4), in world space.

Each collider is a primitive in its own frame, placed by a 4x4 world matrix M = T R S
(translation, rotation, per-axis scale; shear is dropped by orthonormalising R). A point x is
taken into the rotation-only frame, q = R^T (x - t), and the primitive is evaluated there with
its dimensions multiplied by the scale:

    plane     phi = q_z                                   (a half-space; normal = local +Z)
    sphere    phi = |q| - r
    box       d = |q| - h;  phi = |max(d, 0)| + min(max(d_x, d_y, d_z), 0)
    cylinder  d = (|q_xy| - r, |q_z| - depth/2);  phi = |max(d, 0)| + min(max(d), 0)
    capsule   phi = |q - (0, 0, clamp(q_z, -l, l))| - r,  l = max(depth/2 - r, 0)

This is exact for the plane and the box under any scale, for the cylinder and capsule when the
X and Y scales are equal (the radius takes that scale, the depth the Z scale), and for the sphere
under uniform scale. Otherwise (an ellipsoid, an elliptic cylinder) the primitive is evaluated at
u = q / s in its unscaled frame and its distance is divided by the length of the scaled gradient,
phi ~ phi_u / |grad_u / s|: the zero set and the normal on it are exact, the distance away from the
surface is a first-order estimate (tests bound its error). An elliptic cylinder estimates only its
radial distance that way and combines it with the exact axial one as a round cylinder does. A
capsule with s_x != s_y keeps the shape it has with equal scales (total length depth * s_z, caps
radius * max(s_x, s_y) tall) with an elliptic cross-section (semi-axes radius * s_x, radius * s_y)
and half-ellipsoid caps; it is evaluated as a sphere around the nearest axis point in coordinates
divided by (s_x, s_y, max(s_x, s_y)). Projection repeats every iteration, so contacts still
converge onto the exact surface.

All functions are vectorised over points; ``normal`` is the unit gradient of phi in world space.
They are the reference the tests and the broad phase use; the contact solve evaluates the same
SDFs column by column (exact.local_sdf for the exact cases, approx.local_sdf for the first-order
ones), in a fixed order of operations that its compiled mirrors repeat bit for bit. A change to
the geometry here must be made there too.
"""

from collections import namedtuple

import numpy as np

PLANE, SPHERE, BOX, CYLINDER, CAPSULE = range(5)
SHAPE_CODES = {"plane": PLANE, "sphere": SPHERE, "box": BOX, "cylinder": CYLINDER, "capsule": CAPSULE}
SHAPE_NAMES = {v: k for k, v in SHAPE_CODES.items()}

# rotation (3,3) float64 orthonormal columns; translation (3,) [m]; scale (3,) float64 > 0
Frame = namedtuple("Frame", "rotation translation scale")

_TINY = 1e-12


def decompose(matrix, name="matrix"):
    """Split a 4x4 world matrix into a Frame. Raises ValueError naming ``name`` if it is not a
    finite affine 4x4 matrix or a scale is zero."""
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):      # was: numpy's message, which names no argument
        raise ValueError(f"{name}: expected a 4x4 matrix of numbers") from None
    if m.shape != (4, 4):
        raise ValueError(f"{name}: expected a 4x4 matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{name}: contains NaN or infinity")
    # the docstring promised an affine check that was missing: a projective or transposed matrix
    # (translation in the bottom row) was accepted and its translation silently dropped
    if np.max(np.abs(m[3] - (0.0, 0.0, 0.0, 1.0))) > 1e-6:
        raise ValueError(f"{name}: not an affine transform, the bottom row must be (0, 0, 0, 1) "
                         f"(is the matrix transposed?), got {m[3].tolist()}")
    a = m[:3, :3]
    scale = np.linalg.norm(a, axis=0)
    if np.any(scale < 1e-9):
        raise ValueError(f"{name}: a scale is zero (the collider is flat or collapsed)")
    # parallel axes are a zero scale too (the columns' norms alone did not catch it: the nearest
    # rotation of a singular matrix was used and the collider silently took another shape)
    if abs(np.linalg.det(a / scale)) < 1e-6:
        raise ValueError(f"{name}: the axes are (nearly) parallel, so a scale is zero "
                         "(the collider is flat or collapsed)")
    u, _, vt = np.linalg.svd(a / scale)      # nearest orthonormal matrix: drops any shear
    rot = u @ vt
    return Frame(rot, m[:3, 3].copy(), scale)


def to_quaternion(rot):
    """(4,) unit quaternion (w, x, y, z) of an orthonormal 3x3 matrix (a mirror is folded into
    the scale's sign by the caller, which never happens here: decompose keeps det(rot) = +-1)."""
    r = rot if np.linalg.det(rot) > 0 else rot * np.array([1.0, 1.0, -1.0])
    # Shepperd's method: solve for the largest of |w|, |x|, |y|, |z| first and take the others
    # from the off-diagonal sums. (Was: every component from the diagonal with its sign copied from
    # an off-diagonal difference, which is 0 or rounding noise for rotations by ~180 degrees, so
    # e.g. a half turn about (1, -1, 0) came back as one about (1, 1, 0) and a moving collider
    # placed near a half turn swung through wrong orientations between substeps.)
    t = np.array([r[0, 0] + r[1, 1] + r[2, 2], r[0, 0], r[1, 1], r[2, 2]])
    k = int(np.argmax(t))
    if k == 0:
        s = 2.0 * np.sqrt(max(0.0, 1.0 + t[0]))                       # 4 |w|
        q = np.array([s / 4, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s,
                      (r[1, 0] - r[0, 1]) / s])
    elif k == 1:
        s = 2.0 * np.sqrt(max(0.0, 1.0 + r[0, 0] - r[1, 1] - r[2, 2]))  # 4 |x|
        q = np.array([(r[2, 1] - r[1, 2]) / s, s / 4, (r[0, 1] + r[1, 0]) / s,
                      (r[0, 2] + r[2, 0]) / s])
    elif k == 2:
        s = 2.0 * np.sqrt(max(0.0, 1.0 - r[0, 0] + r[1, 1] - r[2, 2]))  # 4 |y|
        q = np.array([(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, s / 4,
                      (r[1, 2] + r[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(max(0.0, 1.0 - r[0, 0] - r[1, 1] + r[2, 2]))  # 4 |z|
        q = np.array([(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s,
                      (r[1, 2] + r[2, 1]) / s, s / 4])
    if q[0] < 0:
        q = -q                                 # the same rotation; keep w >= 0 as before
    return q / np.linalg.norm(q)


def from_quaternion(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def interpolate(f0, f1, s):
    """Frame a fraction s in [0, 1] of the way from f0 to f1: translation and scale linear,
    rotation by spherical interpolation (a mirrored rotation is kept as it is)."""
    if s >= 1.0:
        return f1
    # Equal frames give f0 itself and an unchanged rotation stays bit-exact (was: always a round
    # trip through a quaternion, off by rounding; contact.py tells a collider at rest by identity,
    # so a checkpoint whose frames were rebuilt, e.g. read back from a file, resumed with a
    # "moving" collider and did not reproduce the run bit for bit).
    same_rot = np.array_equal(f0.rotation, f1.rotation)
    if same_rot and np.array_equal(f0.translation, f1.translation) \
            and np.array_equal(f0.scale, f1.scale):
        return f0
    if same_rot:
        return Frame(f0.rotation, f0.translation + s * (f1.translation - f0.translation),
                     f0.scale + s * (f1.scale - f0.scale))
    mirror = np.linalg.det(f1.rotation) < 0
    q0, q1 = to_quaternion(f0.rotation), to_quaternion(f1.rotation)
    dot = float(q0 @ q1)
    if dot < 0:
        q1, dot = -q1, -dot
    if dot > 0.9995:
        q = q0 + s * (q1 - q0)
    else:
        theta = np.arccos(dot)
        q = (np.sin((1 - s) * theta) * q0 + np.sin(s * theta) * q1) / np.sin(theta)
    rot = from_quaternion(q / np.linalg.norm(q))
    if mirror:
        rot = rot * np.array([1.0, 1.0, -1.0])
    return Frame(rot, f0.translation + s * (f1.translation - f0.translation),
                 f0.scale + s * (f1.scale - f0.scale))


def to_local(frame, x):
    """(n, 3) points x [m] in the rotation-only frame of the collider."""
    return (x - frame.translation) @ frame.rotation


def to_world_points(frame, q):
    return q @ frame.rotation.T + frame.translation


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


def is_exact(shape, scale):
    """Whether the SDF is exact for this shape under this scale (see the module docstring)."""
    if shape in (PLANE, BOX):
        return True
    # equal to float32 precision: Blender's matrices are float32, so a uniformly scaled, rotated
    # object has scales that differ in the 7th digit
    sx, sy, sz = scale
    if shape == SPHERE:
        return abs(sx - sy) <= 1e-6 * sx and abs(sx - sz) <= 1e-6 * sx
    return abs(sx - sy) <= 1e-6 * sx


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
