"""Reference shapes for test_sdf.py: placements, true shapes (analytic inside tests and
parametric surface patches) and a brute-force distance oracle, all independent of solver/sdf.py.
See test_sdf.py's docstring for the method and tolerances."""

import math
import zlib

import numpy as np

import sdf_vectorised as sdf

# ----------------------------------------------------------------------------- placement


def axis_rotation(axis, angle):
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def placement(rot, scale, translation):
    """4x4 matrix [rot diag(scale) | translation] (a negative scale mirrors that axis)."""
    m = np.eye(4)
    m[:3, :3] = rot * np.asarray(scale, dtype=np.float64)
    m[:3, 3] = translation
    return m


# rotation, translation and a per-axis sign (a mirrored placement, as Blender's negative scale)
FRAMES = {
    "identity": (np.eye(3), np.zeros(3), (1, 1, 1)),
    "rotated": (axis_rotation((0.3, -0.5, 0.8), 1.1), np.array([0.7, -1.3, 2.1]), (1, 1, 1)),
    # a half turn about an axis with mixed signs: sdf.to_quaternion used to get these wrong
    "half_turn": (axis_rotation((1.0, -1.0, 0.0), math.pi), np.array([-2.0, 0.5, -0.4]), (1, 1, 1)),
    "mirrored": (axis_rotation((-0.6, 0.2, 0.4), 2.5), np.array([0.1, 3.0, -1.0]), (-1, 1, 1)),
}
# the same half turn written exactly (symmetric): the old formula read its axis as (1, 1, 0)
EXACT_HALF_TURN = (np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]]),
                   np.array([1.0, 1.0, 1.0]), (1, 1, 1))


def to_local(frame, x):
    rot, t, _ = FRAMES[frame]
    return (x - t) @ rot


def to_world(frame, q):
    rot, t, _ = FRAMES[frame]
    return q @ rot.T + t


def world_normal(frame, n):
    return n @ FRAMES[frame][0].T


# ----------------------------------------------------------------------------- true shapes
# Each patch: (f(u, v) -> (k, 3) points, normal(points) -> (k, 3) unit outward normals,
#              u periodic). u, v in [0, 1].


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def ellipsoid_patches(a, b, c, zc=0.0, half=0):
    """The ellipsoid with semi-axes a, b, c centred at (0, 0, zc) as six cube-sphere patches (no
    singular poles); half = +1 / -1 keeps only the part with z >= zc / z <= zc."""
    abc = np.array([a, b, c])

    def make(axis, sign, vlo, vhi):
        i, j = [k for k in range(3) if k != axis]

        def f(u, v):
            d = np.zeros(np.shape(u) + (3,))
            d[..., axis] = sign
            d[..., i] = 2 * u - 1
            d[..., j] = vlo + (vhi - vlo) * v
            p = d / np.linalg.norm(d / abc, axis=-1, keepdims=True)
            p[..., 2] += zc
            return p

        def normal(p):
            w = p.copy()
            w[..., 2] -= zc
            return _unit(w / abc ** 2)
        return f, normal, False

    patches = []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            if half and axis == 2:
                if sign == half:
                    patches.append(make(2, sign, -1.0, 1.0))
            elif half:
                # the side faces: z is their second parameter (j == 2 for axis 0 and 1)
                lo, hi = (0.0, 1.0) if half > 0 else (-1.0, 0.0)
                patches.append(make(axis, sign, lo, hi))
            else:
                patches.append(make(axis, sign, -1.0, 1.0))
    return patches


def tube_patch(a, b, z0, z1):
    def f(u, v):
        th = 2 * math.pi * u
        return np.stack([a * np.cos(th), b * np.sin(th), z0 + (z1 - z0) * v], axis=-1)

    def normal(p):
        return _unit(np.stack([p[..., 0] / a ** 2, p[..., 1] / b ** 2, 0 * p[..., 2]], axis=-1))
    return f, normal, True


def disc_patch(a, b, z, up):
    """Elliptic disc: the square [-1, 1]^2 mapped radially onto the unit disc (no singular
    centre), scaled by a, b."""
    def f(u, v):
        sq = np.stack([2 * u - 1, 2 * v - 1], axis=-1)
        r = np.linalg.norm(sq, axis=-1, keepdims=True)
        disc = sq * np.max(np.abs(sq), axis=-1, keepdims=True) / np.maximum(r, 1e-300)
        zz = np.full(np.shape(u) + (1,), z)
        return np.concatenate([a * disc[..., :1], b * disc[..., 1:], zz], axis=-1)

    def normal(p):
        return np.broadcast_to(np.array([0.0, 0.0, 1.0 if up else -1.0]), p.shape).copy()
    return f, normal, False


def face_patch(half, axis, sign):
    i, j = [k for k in range(3) if k != axis]

    def f(u, v):
        p = np.zeros(np.shape(u) + (3,))
        p[..., axis] = sign * half[axis]
        p[..., i] = (2 * u - 1) * half[i]
        p[..., j] = (2 * v - 1) * half[j]
        return p

    def normal(p):
        n = np.zeros(p.shape)
        n[..., axis] = sign
        return n
    return f, normal, False


class Shape:
    """A true shape in the collider's rotation-only frame (scale applied)."""

    def __init__(self, patches, inside, size, exact=None, smooth=None):
        self.patches = patches          # list of (f, normal, periodic)
        self.inside = inside            # q -> bool, analytic
        self.size = size                # [m] smallest half-extent
        self.exact = exact              # q -> signed distance (analytic), or None
        self.smooth = smooth            # q -> bool: phi is C1 around q (away from medial axis)


def ellipsoid(a, b, c):
    def inside(q):
        return (q[:, 0] / a) ** 2 + (q[:, 1] / b) ** 2 + (q[:, 2] / c) ** 2 < 1

    exact = smooth = None
    if a == b == c:
        def exact(q):
            return np.linalg.norm(q, axis=1) - a

        def smooth(q):
            return np.linalg.norm(q, axis=1) > 0.05 * a
    return Shape(ellipsoid_patches(a, b, c), inside, min(a, b, c), exact, smooth)


def box(half):
    half = np.asarray(half, dtype=np.float64)

    def inside(q):
        return np.all(np.abs(q) < half, axis=1)

    def exact(q):
        nearest = np.clip(q, -half, half)
        out = np.linalg.norm(q - nearest, axis=1)
        depth = np.min(half - np.abs(q), axis=1)
        return np.where(inside(q), -depth, out)

    def smooth(q):
        # inside, the gradient jumps where the two nearest faces are equally near
        gaps = np.sort(half - np.abs(q), axis=1)
        return ~inside(q) | (gaps[:, 1] - gaps[:, 0] > 0.01 * half.min())

    patches = [face_patch(half, ax, sg) for ax in range(3) for sg in (-1, 1)]
    return Shape(patches, inside, half.min(), exact, smooth)


def cylinder(a, b, hz):
    def inside(q):
        return ((q[:, 0] / a) ** 2 + (q[:, 1] / b) ** 2 < 1) & (np.abs(q[:, 2]) < hz)

    exact = smooth = None
    if a == b:
        def exact(q):
            rho = np.hypot(q[:, 0], q[:, 1])
            dr, dz = rho - a, np.abs(q[:, 2]) - hz
            out = np.hypot(np.maximum(dr, 0), np.maximum(dz, 0))
            return np.where(inside(q), np.maximum(dr, dz), out)

        def smooth(q):
            rho = np.hypot(q[:, 0], q[:, 1])
            dr, dz = rho - a, np.abs(q[:, 2]) - hz
            return ~inside(q) | ((np.abs(dr - dz) > 0.01 * min(a, hz)) & (rho > 0.01 * a))
    patches = [tube_patch(a, b, -hz, hz), disc_patch(a, b, hz, True), disc_patch(a, b, -hz, False)]
    return Shape(patches, inside, min(a, b, hz), exact, smooth)


def capsule(a, b, cap, seg):
    """Elliptic capsule: cross-section semi-axes a, b; half-ellipsoid caps of height cap centred
    at z = +-seg (a == b == cap: the round capsule of radius a)."""
    def inside(q):
        w = q[:, 2] - np.clip(q[:, 2], -seg, seg)
        return (q[:, 0] / a) ** 2 + (q[:, 1] / b) ** 2 + (w / cap) ** 2 < 1

    exact = smooth = None
    if a == b == cap:
        def exact(q):
            axis = np.zeros_like(q)
            axis[:, 2] = np.clip(q[:, 2], -seg, seg)
            return np.linalg.norm(q - axis, axis=1) - a

        def smooth(q):
            axis = np.zeros_like(q)
            axis[:, 2] = np.clip(q[:, 2], -seg, seg)
            return np.linalg.norm(q - axis, axis=1) > 0.05 * a
    patches = ([tube_patch(a, b, -seg, seg)] + ellipsoid_patches(a, b, cap, seg, +1)
               + ellipsoid_patches(a, b, cap, -seg, -1))
    return Shape(patches, inside, min(a, b, cap), exact, smooth)


# ----------------------------------------------------------------------------- distance oracle


def _patch_distance(q, f, periodic, n=32, levels=10, fine=9):
    """Unsigned distance from points q (P, 3) to one patch: a 32 x 32 sampling, then ten rounds
    of a 9 x 9 grid search around the best sample, each 3 / 8 of the previous spacing wide
    (final parameter spacing ~1e-6 of a coarse cell)."""
    u = np.linspace(0.0, 1.0, n)
    uu, vv = (g.ravel() for g in np.meshgrid(u, u, indexing="ij"))
    d2 = ((q[:, None, :] - f(uu, vv)[None]) ** 2).sum(-1)
    k = d2.argmin(axis=1)
    u0, v0 = uu[k], vv[k]
    step = 1.0 / (n - 1)
    offs = np.linspace(-1.5, 1.5, fine)
    rows = np.arange(len(q))
    for _ in range(levels):
        cu = np.repeat(u0[:, None] + step * offs[None, :], fine, axis=1)     # (P, fine^2)
        cv = np.tile(v0[:, None] + step * offs[None, :], (1, fine))
        cu = np.mod(cu, 1.0) if periodic else np.clip(cu, 0.0, 1.0)
        cv = np.clip(cv, 0.0, 1.0)
        pts = f(cu, cv)                                                       # (P, fine^2, 3)
        d2 = ((q[:, None, :] - pts) ** 2).sum(-1)
        k = d2.argmin(axis=1)
        u0, v0 = cu[rows, k], cv[rows, k]
        step *= 3.0 / (fine - 1)
    return np.sqrt(d2[rows, k])


def oracle_distance(shape, q):
    """Signed distance of local points q to the true shape: brute force, sign analytic."""
    d = np.min([_patch_distance(q, f, per) for f, _, per in shape.patches], axis=0)
    return np.where(shape.inside(q), -d, d)


def surface_samples(shape, rng, count):
    """Random points on the true surface (local) and their outward unit normals."""
    pts, nrm = [], []
    for i, (f, normal, _) in enumerate(shape.patches):
        k = count // len(shape.patches) + (i < count % len(shape.patches))
        # keep off the poles / rims by a hair so every normal is well defined
        u, v = rng.uniform(0, 1, k), rng.uniform(0.002, 0.998, k)
        p = f(u, v)
        pts.append(p)
        nrm.append(normal(p))
    return np.concatenate(pts), np.concatenate(nrm)


def near_surface(shape, rng, count, lo=0.002, hi=0.05):
    """Points at distance d in [lo, hi] x size on both sides of the surface: (q, offset d with
    sign, surface point, normal). Outside points are exactly at distance d (convex shape)."""
    p, n = surface_samples(shape, rng, count)
    d = rng.uniform(lo, hi, len(p)) * shape.size * np.where(np.arange(len(p)) % 2, 1.0, -1.0)
    return p + d[:, None] * n, d, p, n


# ----------------------------------------------------------------------------- cases
# name -> (shape code, dims as passed to sdf (radius, depth, 0) / box full extents,
#          scale magnitudes, true shape in the scaled rotation-only frame)

CASES = {
    "sphere": (sdf.SPHERE, (0.8, 0.0, 0.0), (1.3, 1.3, 1.3), ellipsoid(1.04, 1.04, 1.04)),
    "box": (sdf.BOX, (1.0, 0.6, 1.6), (1.2, 0.7, 2.0), box((0.6, 0.21, 1.6))),
    "cylinder": (sdf.CYLINDER, (0.5, 1.5, 0.0), (1.5, 1.5, 0.8), cylinder(0.75, 0.75, 0.6)),
    # radius 0.4 * 1.2 = 0.48, depth 2 * 0.9 = 1.8: straight part +-(0.9 - 0.48)
    "capsule": (sdf.CAPSULE, (0.4, 2.0, 0.0), (1.2, 1.2, 0.9), capsule(0.48, 0.48, 0.48, 0.42)),
}
APPROX_CASES = {
    "ellipsoid": (sdf.SPHERE, (0.8, 0.0, 0.0), (1.0, 1.4, 0.8), ellipsoid(0.8, 1.12, 0.64)),
    "elliptic_cylinder": (sdf.CYLINDER, (0.5, 1.5, 0.0), (1.2, 0.9, 1.1),
                          cylinder(0.6, 0.45, 0.825)),
    # caps radius * max(s_x, s_y) = 0.52 tall, straight part +-(2 * 1.1 / 2 - 0.52)
    "elliptic_capsule": (sdf.CAPSULE, (0.4, 2.0, 0.0), (1.0, 1.3, 1.1),
                         capsule(0.4, 0.52, 0.52, 0.58)),
}
# |phi - d| / |d| for points 0.2 % .. 5 % of the smallest half-extent from the surface; measured
# worst over all frames: ellipsoid 0.62 %, elliptic cylinder 0.18 %, elliptic capsule 0.16 %
APPROX_BOUND = 0.02


def frame_of(case, frame, cases=None):
    code, dims, scale, shape = (cases or {**CASES, **APPROX_CASES})[case]
    rot, t, mirror = FRAMES[frame]
    m = placement(rot, np.multiply(scale, mirror), t)
    return code, np.asarray(dims, dtype=np.float64), sdf.decompose(m), shape, m


def seed(*key):
    """A reproducible seed per test case (str hashes vary between runs)."""
    return zlib.crc32(repr(key).encode())


def fd_gradient(code, dims, frame, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(3):
        e = np.zeros(3)
        e[i] = eps
        g[:, i] = (sdf.evaluate(code, dims, frame, x + e)[0]
                   - sdf.evaluate(code, dims, frame, x - e)[0]) / (2 * eps)
    return g


def random_points(shape, rng, count, pad=1.4):
    """Uniform points in a box 1.4 x the shape's bounding box (local), off the surface."""
    ext = np.max([np.abs(f(*np.meshgrid(np.linspace(0, 1, 9), np.linspace(0, 1, 9)))).reshape(-1, 3)
                  .max(axis=0) for f, _, _ in shape.patches], axis=0)
    return rng.uniform(-pad, pad, (count, 3)) * ext
