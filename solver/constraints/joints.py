"""Joints between rigid bodies (shape-matching clusters) as XPBD rigid-body joints: Mueller,
Macklin, Chentanez, Jeschke and Kim, "Detailed Rigid Body Simulation with Extended Position Based
Dynamics", SCA 2020 (sections 3.3 and 3.4), on bodies whose frame is read from their particles.

A body is a shape-matching cluster (shapes.py). In each iteration its frame is its centre of mass
and the rotation of its polar decomposition (shapes.polar_rotation, mass weights, no contact
boost):

    c = sum m_i x_i / M,   A = sum m_i (x_i - c) q_i^T = R S,   M = sum m_i,
    I0 = sum m_i (|q_i|^2 1 - q_i q_i^T)   (the rest inertia; world I^-1 = R I0^-1 R^T)

The joints run right after the shape solve, and a rigid cluster (shapes.ShapeSolver.exact:
compliance 0, nothing pinned, no shared particle) leaves it with every particle on its goal
x_i = o + R_s q_i. Then c = o + R_s (sum m_i q_i / M) = o (the rest offsets are measured from
the rest centre of mass) and A = R_s sum m_i q_i q_i^T, whose polar rotation is R_s: the frame is
the goal pose the shape solve just computed, up to rounding, so it is read from there and the
second polar decomposition is skipped (it was a third of the joint solve at 100 ragdolls).

Positional joint (a ball or hinge point), the anchor r_a, r_b in each body's rest frame:

    C = |p_b - p_a|,  p_k = c_k + R_k r_k,  n = (p_b - p_a) / C,
    w_k = 1/M_k + (R_k r_k x n)^T I_k^-1 (R_k r_k x n)
    dlambda = (C - alpha~ lambda) / (w_a + w_b + alpha~),   P = dlambda n
    c_a += P / M_a,  theta_a = I_a^-1 (r_a x P);   c_b -= P / M_b,  theta_b = -I_b^-1 (r_b x P)

Angular constraints remove a rotation vector d (the rotation body a must turn by, relative to
body b): theta = |d|, n = d / theta, w_k = n^T I_k^-1 n, dlambda = (theta - alpha~ lambda) /
(w_a + w_b + alpha~), body a turns by I_a^-1 dlambda n and body b by -I_b^-1 dlambda n. Its d:

    hinge axis      d = a_a x a_b (the joint axis carried by each body)
    angle range     Mueller's limitAngle: phi the angle from v_a to v_b about n (v: a reference
                    direction normal to the axis, carried by each body); outside [lo, hi] the
                    nearest bound b gives d = (rot(n, b) v_a) x v_b. hinge: n = a_a, the rotation
                    of body b about the axis; ball twist: n = (a_a + a_b) / |a_a + a_b|
    swing cone      the same with n = a_a x a_b / |.|, bound: the cone half-angle
    drive           R_a^T R_b -> Q (the target): E = R_b Q^T R_a^T, d = its rotation vector

Each d from a cross product u x v is scaled by 1 / cos(theta / 2) (|d| = 2 sin(theta / 2)), so it
grows with the error up to a half turn. Ranges are tested without an angle: phi lies in
[lo, hi] when cos(phi - m) >= cos(w), m the range's middle and w its half width, with cos and sin
of m, w, lo and hi taken at build time, so the kernels need no transcendental function (NumPy's
and Numba's may round differently; only +, -, *, / and sqrt keep the backends bit-identical).

A body's rotation is updated by the unit quaternion (1, theta / 2) / |.| (Mueller's q += 1/2
[theta, 0] q, normalised), whose matrix needs no square root. After all joints of an iteration
each moved body's particles get the rigid motion x_i <- c + R R0^T (x_i - c0), which keeps its
shape. Bodies with a pinned particle are kinematic (infinite mass). Joints are coloured so that no
two of one colour share a body (the world is no body) and solved colour after colour in a fixed
order: the NumPy kernel batches a colour, the compiled kernel (kernels/compiled_joints.py) runs
joint after joint; both do the same operations, so they agree bit for bit.
"""

import numpy as np

from ..sleep import islands
from .shapes import _sums, polar_rotation

KIND_BALL, KIND_HINGE = 0, 1
JOINT_KINDS = {"ball": KIND_BALL, "hinge": KIND_HINGE}
# [rad/(N m)] the drive compliance at strength 1/2: compliance = DRIVE_COMPLIANCE (1/s - 1)
DRIVE_COMPLIANCE = 1e-2
# Gauss-Seidel passes over the joints per iteration: the body frames are read from the particles
# once and carried through the passes, and the particles moved once after them, so a pass costs
# a few hundred operations per joint. Passes stop, island by island (the joints joined through
# free bodies: one ragdoll), once a pass met no rigid violation above TOLERANCE in the island
# (positional [m], angular [rad]; compliant constraints and drives do not count), at most PASSES
# of them: a ragdoll in the air needs one, one whose limbs fight contacts with the stairs up to
# a dozen, and a settled ragdoll no longer pays for the passes of another that tumbles (the
# islands share no free body, so an island's result does not depend on the others').
# Measured on ragdolls tumbling down stairs (benchmarks/ragdolls.py, 10 ragdolls, 20 substeps):
# a fixed single pass left gaps up to 2.5 mm, a fixed 4 passes 1.3 mm and 2 degrees of limit
# excursion, up to 8 passes with this tolerance 0.24 mm and 1.1 degrees
PASSES = 8
TOLERANCE = np.array([1e-4, 1e-3])
# below these a direction or a distance counts as zero (no correction)
TINY = 1e-12
# floor of cos^2(theta / 2) when scaling a cross product to 2 sin(theta / 2)
HALF_TURN = 1e-12


def range_terms(lo, hi):
    """(8,) [flag, cos m, sin m, cos w, cos lo, sin lo, cos hi, sin hi] of an angle range
    [lo, hi] (m its middle, w its half width); flag 0 (no limit) for None or a full turn."""
    if lo is None or hi - lo >= 2.0 * np.pi:
        return np.zeros(8)
    m, w = 0.5 * (lo + hi), 0.5 * (hi - lo)
    return np.array([1.0, np.cos(m), np.sin(m), np.cos(w), np.cos(lo), np.sin(lo), np.cos(hi),
                     np.sin(hi)])


def drive_compliance(strength):
    """[rad/(N m)] XPBD compliance of the pose drive at strength s in (0, 1]:
    DRIVE_COMPLIANCE (1/s - 1), so 1 is rigid; strength 0 is no drive (inf)."""
    s = np.asarray(strength, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(s > 0, DRIVE_COMPLIANCE * (1.0 / np.where(s > 0, s, 1.0) - 1.0), np.inf)


class JointSolver:
    """Every joint's and jointed body's solve arrays, allocated once (J = joints, K = clusters;
    row K of the body arrays is the world: at the origin, unrotated, infinite mass)."""

    def __init__(self, model):
        k = len(model.shape_cluster_start) - 1
        j = len(model.joint_kind)
        start, particles = model.shape_cluster_start, model.shape_particles
        mass = model.particle_mass[particles]
        q = model.shape_rest_offset
        local = model.shape_cluster
        self.inv_mass = np.zeros(k + 1)                  # (K + 1,) [1/kg], 0 = kinematic
        self.inv_inertia = np.zeros((k + 1, 3, 3))       # (K + 1, 3, 3) rest frame [1/(kg m^2)]
        if k:
            total = _sums(local, k, mass)
            qq = np.einsum("ei,ei->e", q, q)
            inertia = np.zeros((k, 3, 3))
            for a in range(3):
                for b in range(3):
                    t = (qq if a == b else 0.0) - q[:, a] * q[:, b]
                    inertia[:, a, b] = _sums(local, k, mass * t)
            pinned = _sums(local, k, (model.particle_inv_mass[particles] == 0).astype(float)) > 0
            self.inv_mass[:k] = np.where(pinned, 0.0, 1.0 / total)
            self.inv_inertia[:k] = np.linalg.pinv(inertia) * (~pinned)[:, None, None]
        self.bodies = model.jointed_clusters             # (B,) clusters that carry a joint
        self.body_free = np.zeros(k + 1, bool)           # (K + 1,) bool moved by joints
        self.body_free[:k] = self.inv_mass[:k] > 0
        sizes = np.diff(start)[self.bodies]
        # (E,) the entries of the jointed bodies, body after body, and (B + 1,) their offsets
        self.entries = np.concatenate([np.arange(start[b], start[b + 1]) for b in self.bodies]) \
            if len(self.bodies) else np.zeros(0, np.int64)
        self.entry_start = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        # no particle in two jointed bodies, so the compiled kernel moves them in parallel
        pid = particles[self.entries]
        self.disjoint = len(np.unique(pid)) == len(pid)
        # scratch: each body's frame at the iteration's start (c0, R0) and now (c, R)
        self.c0 = np.zeros((k + 1, 3))
        self.R0 = np.zeros((k + 1, 3, 3))
        self.c = np.zeros((k + 1, 3))
        self.R = np.zeros((k + 1, 3, 3))
        self.R0[:] = self.R[:] = np.eye(3)
        self.moved = np.zeros(k + 1, bool)
        body = model.joint_body
        self.body = np.where(body >= 0, body, k).astype(np.int64)     # (J, 2) world -> row K
        self.anchor = model.joint_anchor                 # (J, 2, 3) [m] rest frame (world: world)
        self.axis = model.joint_axis                     # (J, 3) unit, build pose
        self.perp = model.joint_perp                     # (J, 3) unit, normal to the axis
        self.kind = model.joint_kind.astype(np.int64)    # (J,)
        lim = model.joint_limits
        self.swing = np.zeros((j, 3))                    # (J, 3) [flag, cos s, sin s]
        self.range = np.zeros((j, 8))                    # (J, 8) range_terms: hinge / twist
        for i in range(j):
            a, b, c = lim[i]
            if self.kind[i] == KIND_HINGE:
                self.range[i] = range_terms(None if np.isnan(a) else a, b)
            else:
                if not np.isnan(a) and a < np.pi:
                    self.swing[i] = (1.0, np.cos(a), np.sin(a))
                self.range[i] = range_terms(None if np.isnan(b) else b, c)
        self.order = model.joint_order                   # (J,) int64 solve order (by colour)
        self.color_offsets = model.joint_color_offsets   # (colours + 1,) into order
        self.alpha = np.zeros(j)                         # (J,) positional compliance / h^2
        self.drive_on = np.zeros(j, bool)                # (J,) bool
        self.drive_alpha = np.zeros(j)                   # (J,) drive compliance / h^2
        self.lam = np.zeros((j, 2))                      # (J, 2) positional, drive multipliers
        self.compliance = model.joint_compliance
        self.passes = PASSES
        # (J,) int64 the island of each joint: joints joined through free bodies (kinematic
        # bodies and the world join nothing: the joint solve never moves them); passes stop
        # island by island. (I,) bool scratch: the islands that met the tolerance
        ba, bb = self.body[:, 0], self.body[:, 1]
        fa, fb = self.body_free[ba], self.body_free[bb]
        lab = islands(k + 1, np.column_stack([ba[fa & fb], bb[fa & fb]]))
        _, isl = np.unique(np.where(fa, lab[ba], lab[bb]), return_inverse=True)
        self.island = isl.reshape(j).astype(np.int64)
        self.island_done = np.zeros(int(self.island.max()) + 1 if j else 0, bool)
        # (J,) int64 the solve order regrouped island by island (stable: colour after colour
        # within an island) and (I + 1,) int64 each island's offsets into it, for the compiled
        # kernel, which runs the islands in parallel
        self.island_order = self.order[np.argsort(self.island[self.order], kind="stable")] \
            .astype(np.int64)
        self.island_start = np.concatenate(
            ([0], np.cumsum(np.bincount(self.island, minlength=len(self.island_done))))) \
            .astype(np.int64)

    @property
    def count(self):
        return len(self.kind)

    def begin_step(self, h, drive):
        """This step's alpha~ from the positional compliance and the Control's drive strengths
        (J,) in [0, 1]."""
        np.divide(self.compliance, h * h, out=self.alpha)
        np.greater(drive, 0.0, out=self.drive_on)
        self.drive_alpha[:] = np.where(self.drive_on, drive_compliance(drive), 0.0) / (h * h)

    def kernel_args(self, target):
        """The joints group of loop.run_substeps' arguments (target: (J, 3, 3) the Control's
        drive targets)."""
        return (self.bodies, self.entries, self.entry_start, self.inv_mass, self.inv_inertia,
                self.body_free, self.c0, self.R0, self.c, self.R, self.moved, self.body,
                self.anchor, self.axis, self.perp, self.kind, self.swing, self.range, self.alpha,
                self.drive_on, self.drive_alpha, target, self.lam, self.order, self.color_offsets,
                self.island, self.island_done, self.island_order, self.island_start, self.passes,
                TOLERANCE, self.disjoint)


# --------------------------------------------------------------------- vector helpers (lists)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _mul(m, v):
    """m v for (k, 3, 3) m and a list of three (k,). The three rows at once by broadcasting,
    each the same sum of the same products, left to right, as the compiled kernel's: five
    NumPy calls instead of fifteen (most calls turn one body or a few)."""
    out = (m[:, :, 0] * v[0][:, None] + m[:, :, 1] * v[1][:, None]) + m[:, :, 2] * v[2][:, None]
    return [out[:, 0], out[:, 1], out[:, 2]]


def _tmul(m, v):
    """m^T v (as _mul)."""
    out = (m[:, 0, :] * v[0][:, None] + m[:, 1, :] * v[1][:, None]) + m[:, 2, :] * v[2][:, None]
    return [out[:, 0], out[:, 1], out[:, 2]]


def _iw(R, Iinv, v):
    """World inverse inertia times v: R (I0^-1 (R^T v))."""
    return _mul(R, _mul(Iinv, _tmul(R, v)))


def _unit(v, on):
    """v / |v| where on and |v| > TINY; the updated mask."""
    n = np.sqrt(_dot(v, v))
    on = on & (n > TINY)
    inv = 1.0 / np.where(on, n, 1.0)                # one division, three products
    return [v[i] * inv for i in range(3)], on


def _half_scaled(u, v):
    """u x v (|u x v| = sin theta for unit u, v) scaled to 2 sin(theta / 2)."""
    d = _cross(u, v)
    inv = 1.0 / np.sqrt(np.maximum((1.0 + _dot(u, v)) * 0.5, HALF_TURN))
    return [d[i] * inv for i in range(3)]


def _rotate(R, th):
    """R turned by the unit quaternion (1, th / 2) / |.|: (k, 3, 3) rotation per row. The
    product's nine entries are taken at once by broadcasting, each the same sum of the same
    products as the compiled kernel's (summed left to right), so the bits are the same: a
    few NumPy calls instead of forty, where most calls turn one body or a few."""
    hx, hy, hz = th[0] * 0.5, th[1] * 0.5, th[2] * 0.5
    xx, yy, zz = hx * hx, hy * hy, hz * hz
    s2 = 2.0 * (1.0 / (1.0 + (xx + yy + zz)))
    xy, xz, yz = hx * hy, hx * hz, hy * hz
    d = np.array(((1.0 - s2 * (yy + zz), s2 * (xy - hz), s2 * (xz + hy)),
                  (s2 * (xy + hz), 1.0 - s2 * (xx + zz), s2 * (yz - hx)),
                  (s2 * (xz - hy), s2 * (yz + hx), 1.0 - s2 * (xx + yy)))).transpose(2, 0, 1)
    # out[:, i, j] = d[:, i, 0] R[:, 0, j] + d[:, i, 1] R[:, 1, j] + d[:, i, 2] R[:, 2, j]
    return (d[:, :, 0, None] * R[:, None, 0, :] + d[:, :, 1, None] * R[:, None, 1, :]) \
        + d[:, :, 2, None] * R[:, None, 2, :]


class _Batch:
    """The bodies of one colour's joints, read from and written back to the body arrays."""

    def __init__(self, ba, bb, c, R, inv_mass, inv_inertia, free, tol):
        self.ids = (ba, bb)
        self.free = [free[ba], free[bb]]      # kinematic bodies and the world never change
        self.c = [c[ba].T, c[bb].T]           # (3, k) [m] each side's centres
        self.R = [R[ba], R[bb]]
        self.m = [inv_mass[ba], inv_mass[bb]]
        self.I = [inv_inertia[ba], inv_inertia[bb]]
        self.err = np.zeros(len(ba))   # (k,) each joint's largest rigid violation / tolerance
        self.tol = tol

    def turn(self, d, alpha, lam, on, rigid=True):
        """Remove the rotation vector d (body a turns by +, body b by -) with compliance
        alpha (k,) and multipliers lam (k,) (updated where on). A rigid constraint's angle
        counts toward the pass's largest error (self.err)."""
        n, on = _unit(d, on)
        th = np.sqrt(_dot(d, d))
        ia = _iw(self.R[0], self.I[0], n)
        ib = _iw(self.R[1], self.I[1], n)
        wa = _dot(n, ia)
        wb = _dot(n, ib)
        den = wa + wb + alpha
        on = on & (den > 0)
        dl = (th - alpha * lam) / np.where(on, den, 1.0)
        lam[:] = np.where(on, lam + dl, lam)
        # the turns I^-1 (dlambda n) as dlambda (I^-1 n): I^-1 n is already known
        self._turn_bodies([dl * ia[i] for i in range(3)], [-(dl * ib[i]) for i in range(3)], on)
        if rigid:
            self._error(th / self.tol[1], on)

    def _error(self, e, on):
        """Keep each joint's largest e (violations over their tolerance) where on."""
        self.err = np.where(on & (e > self.err), e, self.err)

    def _turn_bodies(self, ta, tb, on):
        for k, t in ((0, ta), (1, tb)):
            go = on & self.free[k]
            self.R[k] = np.where(go[:, None, None], _rotate(self.R[k], t), self.R[k])

    def store(self, c, R, moved):
        for k in (0, 1):
            go = self.free[k]
            b = self.ids[k][go]
            c[b] = self.c[k].T[go]
            R[b] = self.R[k][go]
            moved[b] = True


def _limit(batch, n, va, vb, rng, on):
    """Mueller's limitAngle: the angle from va to vb about n (all normal to n, unit) kept in the
    range rng (k, 8) (range_terms); corrects the joints where on and outside."""
    cphi = _dot(va, vb)
    sphi = _dot(_cross(va, vb), n)
    inside = cphi * rng[:, 1] + sphi * rng[:, 2] >= rng[:, 3]
    on = on & ~inside
    upper = sphi * rng[:, 1] - cphi * rng[:, 2] > 0
    cb = np.where(upper, rng[:, 6], rng[:, 4])
    sb = np.where(upper, rng[:, 7], rng[:, 5])
    w = _cross(n, va)
    vt = [cb * va[i] + sb * w[i] for i in range(3)]
    d = _half_scaled(vt, vb)
    zero = np.zeros(len(cb))
    batch.turn(d, zero, zero.copy(), on)


def _plane_unit(v, n, on):
    """v projected on the plane normal to unit n, normalised."""
    d = _dot(v, n)
    return _unit([v[i] - d * n[i] for i in range(3)], on)


def _solve_batch(js, body, anchor, axis, perp, kind, swing, rng, alpha, drive_on, drive_alpha,
                 target, lam, c, R, inv_mass, inv_inertia, moved, free, tolerance):
    bt = _Batch(body[js, 0], body[js, 1], c, R, inv_mass, inv_inertia, free, tolerance)
    k = len(js)
    every = np.ones(k, bool)
    # drive toward the target relative rotation Q: E = R_b Q^T R_a^T
    on = drive_on[js]
    if on.any():
        Q = target[js]
        Ra, Rb = bt.R
        T = np.empty((k, 3, 3))
        for i in range(3):
            for j in range(3):
                T[:, i, j] = Ra[:, i, 0] * Q[:, 0, j] + Ra[:, i, 1] * Q[:, 1, j] \
                    + Ra[:, i, 2] * Q[:, 2, j]
        E = np.empty((k, 3, 3))
        for i in range(3):
            for j in range(3):
                E[:, i, j] = Rb[:, i, 0] * T[:, j, 0] + Rb[:, i, 1] * T[:, j, 1] \
                    + Rb[:, i, 2] * T[:, j, 2]
        s = np.sqrt(np.maximum((1.0 + (E[:, 0, 0] + E[:, 1, 1] + E[:, 2, 2])) * 0.25, HALF_TURN))
        d = [(E[:, 2, 1] - E[:, 1, 2]) * 0.5 / s, (E[:, 0, 2] - E[:, 2, 0]) * 0.5 / s,
             (E[:, 1, 0] - E[:, 0, 1]) * 0.5 / s]
        dl = lam[js, 1]
        bt.turn(d, drive_alpha[js], dl, on, rigid=False)
        lam[js, 1] = dl
    u = [axis[js, i] for i in range(3)]
    v = [perp[js, i] for i in range(3)]
    zero = np.zeros(k)
    hinge = kind[js] == KIND_HINGE
    if hinge.any():
        a_a, a_b = _mul(bt.R[0], u), _mul(bt.R[1], u)
        bt.turn(_half_scaled(a_a, a_b), zero, zero.copy(), hinge)
        lim = hinge & (rng[js, 0] > 0)
        if lim.any():
            n = _mul(bt.R[0], u)
            va, on = _plane_unit(_mul(bt.R[0], v), n, lim)
            vb, on = _plane_unit(_mul(bt.R[1], v), n, on)
            _limit(bt, n, va, vb, rng[js], on)
    cone = ~hinge & (swing[js, 0] > 0)
    if cone.any():
        a_a, a_b = _mul(bt.R[0], u), _mul(bt.R[1], u)
        cos_t = _dot(a_a, a_b)
        n, on = _unit(_cross(a_a, a_b), cone & (cos_t < swing[js, 1]))
        w = _cross(n, a_a)
        at = [swing[js, 1] * a_a[i] + swing[js, 2] * w[i] for i in range(3)]
        bt.turn(_half_scaled(at, a_b), zero, zero.copy(), on)
    twist = ~hinge & (rng[js, 0] > 0)
    if twist.any():
        a_a, a_b = _mul(bt.R[0], u), _mul(bt.R[1], u)
        n, on = _unit([a_a[i] + a_b[i] for i in range(3)], twist)
        va, on = _plane_unit(_mul(bt.R[0], v), n, on)
        vb, on = _plane_unit(_mul(bt.R[1], v), n, on)
        _limit(bt, n, va, vb, rng[js], on)
    # the positional joint: anchors together
    ra = _mul(bt.R[0], [anchor[js, 0, i] for i in range(3)])
    rb = _mul(bt.R[1], [anchor[js, 1, i] for i in range(3)])
    d = list((bt.c[1] + np.array(rb)) - (bt.c[0] + np.array(ra)))
    n, on = _unit(d, every)
    cval = np.sqrt(_dot(d, d))
    na, nb = _cross(ra, n), _cross(rb, n)
    ia = _iw(bt.R[0], bt.I[0], na)
    ib = _iw(bt.R[1], bt.I[1], nb)
    wa = bt.m[0] + _dot(na, ia)
    wb = bt.m[1] + _dot(nb, ib)
    al = alpha[js]
    den = wa + wb + al
    on = on & (den > 0)
    lp = lam[js, 0]
    dl = (cval - al * lp) / np.where(on, den, 1.0)
    lam[js, 0] = np.where(on, lp + dl, lp)
    dn = dl * np.array(n)                                    # (3, k) dlambda n
    bt.c[0] = np.where(on & bt.free[0], bt.c[0] + bt.m[0] * dn, bt.c[0])
    bt.c[1] = np.where(on & bt.free[1], bt.c[1] - bt.m[1] * dn, bt.c[1])
    # I^-1 (r x dlambda n) = dlambda I^-1 (r x n)
    bt._turn_bodies([dl * ia[i] for i in range(3)], [-(dl * ib[i]) for i in range(3)], on)
    bt._error(cval / tolerance[0], on & (al == 0))
    bt.store(c, R, moved)
    return bt.err


def body_frames_of(X, particles, rest_offset, mass, entries, entry_start, bodies):
    """(B, 3) centres [m] and (B, 3, 3) rotations of clusters ``bodies``, whose entries are
    ``entries`` body after body (entry_start (B + 1,)): mass-weighted centre and polar rotation."""
    k = len(bodies)
    local = np.repeat(np.arange(k), np.diff(entry_start))
    pid = particles[entries]
    m = mass[entries]
    q = rest_offset[entries]
    msum = _sums(local, k, m)
    c = [_sums(local, k, X[i, pid] * m) / msum for i in range(3)]
    dx = [X[i, pid] - c[i][local] for i in range(3)]
    a = np.empty((k, 3, 3))
    for i in range(3):
        for j in range(3):
            a[:, i, j] = _sums(local, k, dx[i] * (m * q[:, j]))
    return np.column_stack(c) if k else np.zeros((0, 3)), polar_rotation(a)


def solve_joints(X, particles, rest_offset, mass, shape_origin, shape_rot, shape_exact, bodies,
                 entries, entry_start, inv_mass, inv_inertia, body_free, c0, R0, c, R, moved,
                 body, anchor, axis, perp, kind, swing, rng, alpha, drive_on, drive_alpha, target,
                 lam, order, color_offsets, island, island_done, island_order, island_start,
                 passes, tolerance, disjoint):
    """The NumPy kernel: passes over the joints, colour after colour (each colour one batch),
    in place on X (3, n) [m], until each island's joints met the tolerance (its joints are then
    left out of the later passes). particles, rest_offset, mass, shape_origin, shape_rot,
    shape_exact: the shapes group's arrays (the last three as ShapeSolver.origin, rot, exact:
    the goal pose of the shape solve that ran just before); the rest as
    JointSolver.kernel_args (c0, R0, c, R, moved, island_done: scratch; island_order,
    island_start and disjoint serve the compiled kernel)."""
    if len(bodies):
        exact = shape_exact[bodies]
        if exact.all():
            cb, Rb = shape_origin[bodies], shape_rot[bodies]
        else:
            cb, Rb = body_frames_of(X, particles, rest_offset, mass, entries, entry_start,
                                    bodies)
            cb = np.where(exact[:, None], shape_origin[bodies], cb)
            Rb = np.where(exact[:, None, None], shape_rot[bodies], Rb)
        c0[bodies] = cb
        R0[bodies] = Rb
        c[bodies] = cb
        R[bodies] = Rb
    moved[:] = False
    island_done[:] = False
    errs = np.zeros(len(island))               # (J,) each joint's error in its last pass
    for _ in range(passes):
        for g in range(len(color_offsets) - 1):
            js = order[color_offsets[g]:color_offsets[g + 1]]
            js = js[~island_done[island[js]]]
            if len(js):
                errs[js] = _solve_batch(js, body, anchor, axis, perp, kind, swing, rng, alpha,
                                        drive_on, drive_alpha, target, lam, c, R, inv_mass,
                                        inv_inertia, moved, body_free, tolerance)
        worst = np.zeros(len(island_done))
        np.maximum.at(worst, island, errs)
        island_done |= worst < 1.0
        if island_done.all():
            break
    # each moved body's particles: the rigid motion from (c0, R0) to (c, R)
    if not len(bodies):
        return
    local = np.repeat(np.arange(len(bodies)), np.diff(entry_start))
    b = bodies[local]
    go = moved[b]
    pid = particles[entries]
    Rn, Ro = R[b], R0[b]
    M = np.empty(Rn.shape)
    for i in range(3):
        for j in range(3):
            M[:, i, j] = Rn[:, i, 0] * Ro[:, j, 0] + Rn[:, i, 1] * Ro[:, j, 1] \
                + Rn[:, i, 2] * Ro[:, j, 2]
    r = [X[i, pid] - c0[b, i] for i in range(3)]
    t = _mul(M, r)
    for i in range(3):
        X[i, pid] = np.where(go, c[b, i] + t[i], X[i, pid])
