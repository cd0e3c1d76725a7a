"""Collider placement: a 4x4 world matrix split into a Frame (rotation, translation, scale),
and frames interpolated across the substeps of a step (translation and scale linearly, rotation by
quaternion slerp), plus the collider shape codes. The geometry of each shape is sdf.py's.

Each collider is a primitive in its own frame, placed by a 4x4 world matrix M = T R S
(translation, rotation, per-axis scale; shear is dropped by orthonormalising R).
"""

from collections import namedtuple

import numpy as np

PLANE, SPHERE, BOX, CYLINDER, CAPSULE, MESH = range(6)
SHAPE_CODES = {"plane": PLANE, "sphere": SPHERE, "box": BOX, "cylinder": CYLINDER, "capsule": CAPSULE,
               "mesh": MESH}
SHAPE_NAMES = {v: k for k, v in SHAPE_CODES.items()}

# rotation (3,3) float64 orthonormal columns; translation (3,) [m]; scale (3,) float64 > 0
Frame = namedtuple("Frame", "rotation translation scale")

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


class Placements:
    """decompose with a memory, for Simulation.set_collider_matrix: Blender sets every collider
    every frame, mostly to the matrix it already had. The same matrix again gives back the Frame
    it gave last time (no SVD), and a Frame equal to the collider's placement now gives back
    that placement's own object, which is how the collide stage and the substeps know a
    collider is at rest (the same object; colliders.py) without comparing its arrays."""

    def __init__(self, count):
        self.matrix = [None] * count         # (C,) the last (4, 4) matrix per collider, or None
        self.frame = [None] * count          # (C,) the Frame decompose gave for it

    def place(self, k, matrix, now):
        """The Frame of 4x4 ``matrix`` for collider k, whose placement now is ``now``."""
        try:
            m = np.asarray(matrix, dtype=np.float64)
        except (TypeError, ValueError):
            m = None                         # decompose below says what is wrong with it
        if m is not None and self.matrix[k] is not None and np.array_equal(m, self.matrix[k]):
            frame = self.frame[k]
        else:
            frame = decompose(matrix, "matrix")
            self.matrix[k], self.frame[k] = m.copy(), frame
        return now if same(frame, now) else frame


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
    """Rotation matrices (..., 3, 3) of unit quaternions q (..., 4) (w, x, y, z)."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=np.float64), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)],
        axis=-2)


def _slerp(r0, r1, frac):
    """(k, 3, 3) rotations a fraction frac (k,) of the way from r0 to r1 (3, 3), by spherical
    interpolation of their quaternions (linear where they are within 0.9995); a mirrored r1 is
    kept as it is."""
    mirror = np.linalg.det(r1) < 0
    q0, q1 = to_quaternion(r0), to_quaternion(r1)
    dot = float(q0 @ q1)
    if dot < 0:
        q1, dot = -q1, -dot
    if dot > 0.9995:
        q = q0 + frac[:, None] * (q1 - q0)
    else:
        theta = np.arccos(dot)
        q = (np.sin((1 - frac) * theta)[:, None] * q0
             + np.sin(frac * theta)[:, None] * q1) / np.sin(theta)
    rot = from_quaternion(q / np.linalg.norm(q, axis=1)[:, None])
    if mirror:
        rot *= np.array([1.0, 1.0, -1.0])
    return rot


def interpolate(f0, f1, s):
    """Frame a fraction s in [0, 1] of the way from f0 to f1: translation and scale linear,
    rotation by spherical interpolation (a mirrored rotation is kept as it is)."""
    if s >= 1.0:
        return f1
    # Equal frames give f0 itself and an unchanged rotation stays bit-exact (was: always a round
    # trip through a quaternion, off by rounding; colliders.py tells a collider at rest by identity,
    # so a checkpoint whose frames were rebuilt, e.g. read back from a file, resumed with a
    # "moving" collider and did not reproduce the run bit for bit).
    same_rot = np.array_equal(f0.rotation, f1.rotation)
    if same_rot and np.array_equal(f0.translation, f1.translation) \
            and np.array_equal(f0.scale, f1.scale):
        return f0
    if same_rot:
        return Frame(f0.rotation, f0.translation + s * (f1.translation - f0.translation),
                     f0.scale + s * (f1.scale - f0.scale))
    rot = _slerp(f0.rotation, f1.rotation, np.array([s]))[0]
    return Frame(rot, f0.translation + s * (f1.translation - f0.translation),
                 f0.scale + s * (f1.scale - f0.scale))


def interpolate_steps(f0, f1, substeps):
    """The frames at the ends of the ``substeps`` substeps from f0 to f1, as arrays: rotation
    (S, 3, 3), translation (S, 3) [m], scale (S, 3); the same frames as
    interpolate(f0, f1, (s + 1) / S) for every s (the last is f1 exactly), computed at once.
    Returns (rotation, translation, scale, moving): moving False when the frames are equal
    (interpolate then gives f0 itself: at rest)."""
    S = int(substeps)
    frac = (np.arange(S - 1) + 1.0) / S                     # (S - 1,) all but the last
    rot = np.empty((S, 3, 3))
    same_rot = np.array_equal(f0.rotation, f1.rotation)
    if same_rot and np.array_equal(f0.translation, f1.translation) \
            and np.array_equal(f0.scale, f1.scale):
        rot[:] = f0.rotation
        return rot, np.tile(f0.translation, (S, 1)), np.tile(f0.scale, (S, 1)), False
    if same_rot:
        rot[:-1] = f0.rotation
    else:
        rot[:-1] = _slerp(f0.rotation, f1.rotation, frac)
    rot[-1] = f1.rotation
    trans = np.vstack([f0.translation + frac[:, None] * (f1.translation - f0.translation),
                       f1.translation])
    scale = np.vstack([f0.scale + frac[:, None] * (f1.scale - f0.scale), f1.scale])
    return rot, trans, scale, True


def same(f0, f1):
    """Whether frames f0 and f1 place a collider identically (a collider at rest)."""
    return f0 is f1 or (np.array_equal(f0.rotation, f1.rotation)
                        and np.array_equal(f0.translation, f1.translation)
                        and np.array_equal(f0.scale, f1.scale))


def to_local(frame, x):
    """(n, 3) points x [m] in the rotation-only frame of the collider."""
    return (x - frame.translation) @ frame.rotation


def is_exact(shape, scale):
    """Whether the SDF is exact for this shape under this scale (sdf.py's module docstring)."""
    if shape in (PLANE, BOX, MESH):           # a mesh's vertices take the scale (mesh.py)
        return True
    # equal to float32 precision: Blender's matrices are float32, so a uniformly scaled, rotated
    # object has scales that differ in the 7th digit
    sx, sy, sz = scale
    if shape == SPHERE:
        return abs(sx - sy) <= 1e-6 * sx and abs(sx - sz) <= 1e-6 * sx
    return abs(sx - sy) <= 1e-6 * sx
