"""Shape matching (Mueller, Heidelberger, Teschner and Gross, "Meshless Deformations Based on
Shape Matching", SIGGRAPH 2005; GAMES103 lecture 4), as an XPBD goal constraint.

For a cluster with rest offsets q_i (from its rest centre of mass) and current positions x_i:

    c = sum m_i x_i / sum m_i,   A = sum m_i (x_i - c) q_i^T,   A = R S (polar decomposition),
    g_i = R q_i + c,             C_i(x) = x_i - g_i  (a vector constraint per particle)

R comes from the singular value decomposition A = U D V^T as U diag(1, 1, det(U V^T)) V^T, so a
reflection is never returned and planar or collinear clusters (rank-deficient A) still give a
proper rotation. The SVD is one-sided Jacobi (Hestenes 1958; Demmel and Veselic, "Jacobi's
method is more accurate than QR", SIAM J. Matrix Anal. Appl. 1992): plane rotations V
orthogonalise the columns of A V, whose norms are then the singular values. It needs no LAPACK,
so the compiled backend runs the same operations (kernels/compiled.py solve_shapes), and it works on A
itself rather than A^T A, so the rotation stays accurate when contact weighting (below) makes A
ill-conditioned. V starts at the principal axes of the cluster's rest shape (rest_basis): a
body moved rigidly has A = R S0 with S0 its rest second moment, so the columns are orthogonal
from the first sweep, where from the identity 3x3 Jacobi turns for four sweeps.

Each particle moves toward its goal with XPBD compliance alpha (0 = rigid; Macklin et al. 2016):
dlambda_i = (-C_i - alpha~ lambda_i) / (w + alpha~), x_i += w dlambda_i,
where w is the cluster's mean inverse mass for every particle (0 for pinned ones). Using one w per
cluster keeps sum m_i dx_i = 0, so a free body's linear momentum is conserved exactly.

Contact: in rigid clusters (compliance 0), particles that touched a collider in this substep
count BOOST times heavier in c and A. A rigid cluster then turns about its contacts instead of
dragging them along, which is what lets a per-particle Coulomb friction hold a whole block still
on a slope (without it, static friction on the bottom particles is averaged away by the free ones
and the block creeps; the same idea as mass scaling in Macklin et al., "Unified Particle Physics
for Real-Time Applications", SIGGRAPH 2014). Soft clusters keep plain mass weights: their goals
follow the body's true centre of mass, and weighting contacts there pumped energy into them.
The bodies of joints (constraints/joints.py) weigh their collider contacts GROUND_BOOST times,
not BOOST: the joint solve moves a body by its true mass and inertia about its centre of mass,
and against a fit that held it on its contacts 1e4 times over, a ragdoll lying on flat ground
never came to rest. Contacts between bodies keep BOOST everywhere (contact_inv_mass below).

Order in the substep (loop.py): the clusters whose fit weighs no collider contact (soft bodies,
plants, and the rigid bodies whose collider contacts are solved on the body after the fit) are
solved before the particles' collider contacts, and the others (rigid clusters weighing their
contacts BOOST or GROUND_BOOST times) after them, as all were until 2026-12-01. A soft body's
goal lies wherever its fit puts it, below the ground under a body that sags (its centre of mass
is lower than its rest shape standing on its lowest points), and solved after the contacts its
fit pulled the touching particles back in every substep: a Suzanne soft body rested 11 to 15 cm
inside a ground plane, and on an open mesh collider (two-sided: a particle keeps the side its
x* is on) those particles then changed sides and the whole body fell through it.

Clusters are coloured so that no two clusters of one colour share a particle (several
overlapping clusters per body are allowed); in the NumPy kernel (solve_shapes below) every colour
is one batched solve, and kernels/compiled.py mirrors it with the same signature. Sums over a
cluster's members use np.bincount, which is documented to add in member order, one after
another, exactly as the compiled kernel's loop does, so the two backends agree bit for bit.
"""

import numpy as np

BOOST = 1.0e4
# the weight of a collider contact in the fit of a joint's body (module docstring): 1e4 there
# fought the joint solve, which moves the body by its true mass about its centre of mass, and a
# ragdoll lying on flat ground never came to rest (its upper body turned about the pelvis at
# 0.1 to 0.6 m/s); at 10 or 100 it sleeps within 0.9 to 3.1 s, at 1 a landing bone sank 9.5 cm
# into the ground. Contacts between bodies keep BOOST: they weigh a touched particle of a rigid
# body as the whole body (contact_inv_mass), which conserves momentum only while it is large.
GROUND_BOOST = 100.0
# one-sided Jacobi on A scaled to a largest entry of 1 (so no scale of A over- or underflows):
# a column pair counts as orthogonal when |b_p . b_q| <= JACOBI_EPS |b_p| |b_q|, or when
# b_p . b_q is negligible next to A itself (<= JACOBI_TINY: the noise columns of a collinear or
# planar cluster, which the relative test would keep turning forever); 3x3 then converges in 3
# to 5 sweeps, and the cap only guards NaN input
JACOBI_EPS = 1e-15
JACOBI_TINY = 1e-30
JACOBI_SWEEPS = 12
_PAIRS = ((0, 1), (0, 2), (1, 2))
# A's second column counts as zero (a collinear cluster) below this fraction of its largest
RANK_TOL = 1e-12
# pseudo-inverse cut-off of the inertia tensor (numpy.linalg.pinv's default rcond)
PINV_RCOND = 1e-15


def jacobi_columns(a, basis=None):
    """One-sided Jacobi on (K, 3, 3) matrices. Returns B = (A / m) V with orthogonal columns,
    the rotation V (both (K, 3, 3)) and the scale m (K,), A's largest absolute entry (1 for
    A = 0). Column j of B is sigma_j u_j / m of the SVD A = U diag(sigma) V^T.
    basis (K, 3, 3) rotations, optional: V starts there instead of at the identity (B at
    (A / m) basis). Any start converges to the same columns; one near V saves sweeps."""
    a = np.asarray(a, dtype=np.float64)
    m = np.zeros(len(a))
    for i in range(3):
        for j in range(3):              # a running maximum that skips NaN, as the kernel's does
            e = np.abs(a[:, i, j])
            m = np.where(e > m, e, m)
    m = np.where(m > 0, m, 1.0)
    b = a / m[:, None, None]
    if basis is None:
        v = np.zeros_like(b)
        v[:, 0, 0] = v[:, 1, 1] = v[:, 2, 2] = 1.0
    else:
        v = np.array(basis, dtype=np.float64)
        a = b
        b = np.empty_like(a)
        for i in range(3):
            for j in range(3):
                b[:, i, j] = a[:, i, 0] * v[:, 0, j] + a[:, i, 1] * v[:, 1, j] \
                    + a[:, i, 2] * v[:, 2, j]
    for _ in range(JACOBI_SWEEPS):
        turned = False
        for p, q in _PAIRS:
            bp0, bp1, bp2 = b[:, 0, p], b[:, 1, p], b[:, 2, p]
            bq0, bq1, bq2 = b[:, 0, q], b[:, 1, q], b[:, 2, q]
            alpha = bp0 * bp0 + bp1 * bp1 + bp2 * bp2
            beta = bq0 * bq0 + bq1 * bq1 + bq2 * bq2
            gamma = bp0 * bq0 + bp1 * bq1 + bp2 * bq2
            size = np.abs(gamma)
            rot = (size > JACOBI_EPS * np.sqrt(alpha * beta)) & (size > JACOBI_TINY)
            if not rot.any():
                continue
            # the rotation that zeroes b_p . b_q (Golub and Van Loan, section 8.5)
            zeta = (beta - alpha) / (2.0 * np.where(rot, gamma, 1.0))
            t = np.where(zeta >= 0, 1.0, -1.0) / (np.abs(zeta) + np.sqrt(1.0 + zeta * zeta))
            rot &= t != 0.0
            if not rot.any():
                continue
            turned = True
            c = 1.0 / np.sqrt(1.0 + t * t)
            s = c * t
            for mat in (b, v):
                for i in range(3):
                    mp = mat[:, i, p].copy()
                    mq = mat[:, i, q]
                    mat[:, i, p] = np.where(rot, c * mp - s * mq, mp)
                    mat[:, i, q] = np.where(rot, s * mp + c * mq, mq)
        if not turned:
            break
    return b, v, m


def _column_norms(b):
    return [np.sqrt(b[:, 0, j] * b[:, 0, j] + b[:, 1, j] * b[:, 1, j] + b[:, 2, j] * b[:, 2, j])
            for j in range(3)]


def _order(n):
    """Indices (K,) of the largest, middle and smallest of three (K,) norms; ties go to the
    lower index (the compiled kernel compares the same way)."""
    n0, n1, n2 = n
    o1 = np.where((n0 >= n1) & (n0 >= n2), 0, np.where(n1 >= n2, 1, 2))
    lo = np.where(o1 == 0, 1, 0)                    # the two that remain, lo < hi
    hi = np.where(o1 == 2, 1, 2)
    n_lo = np.choose(lo, n)
    n_hi = np.choose(hi, n)
    o2 = np.where(n_lo >= n_hi, lo, hi)
    return o1, o2, 3 - o1 - o2


def _col(m, j):
    """Column j (K,) per matrix of (K, 3, 3), as three (K,) component arrays."""
    k = np.arange(m.shape[0])
    return m[k, 0, j], m[k, 1, j], m[k, 2, j]


def polar_rotation(a, basis=None):
    """(K, 3, 3) rotations R of the polar decomposition A = R S, reflections removed; basis
    (K, 3, 3), optional, Jacobi's start (jacobi_columns)."""
    b, v, _ = jacobi_columns(a, basis)     # R does not depend on A's scale
    norms = _column_norms(b)
    o1, o2, o3 = _order(norms)
    n1 = np.choose(o1, norms)
    b1, b2 = _col(b, o1), _col(b, o2)
    v1, v2, v3 = _col(v, o1), _col(v, o2), _col(v, o3)
    full = n1 > 1e-300                              # else A = 0: no rotation to find
    n1s = np.where(full, n1, 1.0)
    u1 = [b1[i] / n1s for i in range(3)]
    # u2: b2 made orthogonal to u1; for a collinear cluster (b2 ~ 0) any unit vector normal to
    # u1 does, and the one nearest v2 (or v3) twists the cluster least
    r, rn = _normal_part(u1, b2)
    e, en = _normal_part(u1, v2)
    f, fn = _normal_part(u1, v3)
    ok = rn > RANK_TOL * n1s
    use_e = en >= 0.5
    rs = np.where(ok, rn, 1.0)
    es = np.where(use_e, en, 1.0)
    fs = np.where(use_e, 1.0, fn)
    u2 = [np.where(ok, r[i] / rs, np.where(use_e, e[i] / es, f[i] / fs)) for i in range(3)]
    u3 = _cross(u1, u2)
    w3 = _cross(v1, v2)                             # det [v1 v2 w3] = +1
    rot = np.empty((len(n1), 3, 3))
    for i in range(3):
        for j in range(3):
            rot[:, i, j] = np.where(full, u1[i] * v1[j] + u2[i] * v2[j] + u3[i] * w3[j],
                                    1.0 if i == j else 0.0)
    return rot


def _normal_part(u, y):
    """y minus its component along the unit vector u, and its norm (columns as lists)."""
    d = u[0] * y[0] + u[1] * y[1] + u[2] * y[2]
    e = [y[i] - d * u[i] for i in range(3)]
    return e, np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def pinv_apply(a, y):
    """pinv(A) y for (K, 3, 3) matrices A and (K, 3) vectors y [as lists of three (K,)], by
    one-sided Jacobi: pinv(A) y = sum_j v_j (b_j . y) / (|b_j|^2 m) over |b_j| > rcond max |b|,
    with B = (A / m) V."""
    b, v, scale = jacobi_columns(a)        # b = (A / scale) V
    norms = _column_norms(b)
    big = np.maximum(np.maximum(norms[0], norms[1]), norms[2])
    out = [np.zeros_like(y[0]) for _ in range(3)]
    for j in range(3):
        keep = norms[j] > PINV_RCOND * big
        nn = np.where(keep, norms[j] * norms[j], 1.0)
        coef = np.where(keep, (b[:, 0, j] * y[0] + b[:, 1, j] * y[1] + b[:, 2, j] * y[2]) / nn
                        / scale, 0.0)
        for i in range(3):
            out[i] = out[i] + v[:, i, j] * coef
    return out


def _sums(local, k, values):
    """Per-cluster sums (k,) of (e,) values, added in member order (see module docstring)."""
    return np.bincount(local, weights=values, minlength=k)


class ShapeSolver:
    """Every cluster's solve arrays, allocated once (K = clusters, e = cluster entries); the
    substep loop (loop.py) runs solve_shapes and damp_shapes on them."""

    def __init__(self, model):
        self.particles = model.shape_particles                # (e,) int64
        self.rest_offset = model.shape_rest_offset            # (e, 3) float64 [m]
        self.start = model.shape_cluster_start                # (K + 1,) int64
        self.color_offsets = model.shape_color_offsets        # (colours + 1,) int64 clusters
        self.mass = model.particle_mass[self.particles]       # (e,) float64 [kg]
        cluster = model.shape_cluster                         # (e,) int64
        k = len(self.start) - 1
        csize = np.diff(self.start)
        mean_mass = _sums(cluster, k, self.mass) / np.maximum(csize, 1)
        pinned = model.particle_inv_mass[self.particles] == 0
        # (e,) float64 [1/kg] the cluster's mean inverse mass, 0 for pinned entries
        self.w = np.where(pinned, 0.0, 1.0 / mean_mass[cluster]) if k else np.zeros(0)
        self.cluster = cluster                                # (e,) int64 cluster of each entry
        self.compliance = np.zeros(len(self.particles))      # (e,) float64 [m/N] this step's
        self.rigid = np.zeros(len(self.particles), bool)      # (e,) bool entry of a rigid cluster
        self.damping = np.zeros(k)                            # (K,) float64 fraction per second
        self.any_damped = False
        self.keep = np.ones(k)                                # (K,) (1 - damping)^h
        self.lam = np.zeros((len(self.particles), 3))        # (e, 3) float64 accumulated
        self.alpha = np.zeros(len(self.particles))           # (e,) alpha / h^2
        # the goal pose solve_shapes gave each cluster in the last solve: g_e = origin + rot q_e
        self.origin = np.zeros((k, 3))                       # (K, 3) float64 [m]
        self.rot = np.zeros((k, 3, 3))                       # (K, 3, 3) float64 rotation
        self.rot[:] = np.eye(3)
        # (K,) bool clusters whose particles end each solve on that goal (compliance 0, nothing
        # pinned, no particle shared with another cluster), so the joints read the body's frame
        # there instead of a second polar decomposition; set per step in begin_step
        self.exact = np.zeros(k, bool)
        # (K,) bool the same clusters, read by the contacts solved on rigid bodies
        # (collision/rigid.py): kept apart from exact, which only tells the joints where to
        # read a body's frame
        self.rigid_body = np.zeros(k, bool)
        shared = np.bincount(self.particles, minlength=model.particle_count)[self.particles] > 1
        # (e,) bool entries that can never end on their cluster's goal: pinned or shared
        self._loose = pinned | shared
        self.cluster_mass = _sums(cluster, k, self.mass)      # (K,) float64 [kg]
        # (K, 3, 3) float64 rotations: the principal axes of each cluster's rest shape, where
        # Jacobi starts (polar_rotation's basis). A body moved rigidly has A = R S with S its
        # rest second moment, so from there Jacobi checks one sweep and stops, where from the
        # identity it turned for four (a third of 100 ragdolls' frame)
        self.basis = rest_basis(self.rest_offset, cluster, self.mass, k)
        self._no_skip = np.zeros(k, bool)                     # (K,) bool: every cluster solved
        self._inv_mass = model.particle_inv_mass              # (n,) float64 [1/kg]
        # (n,) float64 [1/kg] what contacts between bodies weigh each particle (begin_step)
        self.contact_inv_mass = self._inv_mass
        self._rigid_seen = None                               # (e,) bool rigid when it was set
        # (e,) float64 each entry's weight factor in the fit when its particle touches another
        # body / only a collider (module docstring): BOOST in rigid clusters, GROUND_BOOST for a
        # collider contact of a joint's body, 1 elsewhere; set in begin_step when the rigidity
        # changes
        jointed = np.zeros(k, bool)
        jointed[model.jointed_clusters] = True
        self._jointed = jointed[cluster] if k else np.zeros(0, bool)
        self._jointed_cluster = jointed                       # (K,) bool a joint's body
        self.body_boost = np.ones(len(self.particles))
        self.collider_boost = np.ones(len(self.particles))
        # (K,) bool the clusters whose fit weighs this substep's collider contacts (an entry's
        # collider_boost is not 1): the substep solves them after the particles' collider
        # contacts, and every other cluster before them (kernel_args)
        self.weighs_contacts = np.zeros(k, bool)

    def begin_step(self, h, compliance, damping):
        """This step's alpha~, rigidity and damping from the Control's per-cluster compliance
        (K,) [m/N] and damping (K,) [fraction per s], which may change between steps
        (Simulation.set_shape_compliance / set_shape_damping); a few operations per entry per
        step, against substeps x iterations solves."""
        np.take(compliance, self.cluster, out=self.compliance)
        np.equal(self.compliance, 0.0, out=self.rigid)
        np.divide(self.compliance, h * h, out=self.alpha)
        self.damping[:] = damping
        self.any_damped = bool(np.any(damping > 0))
        np.power(1.0 - damping, h, out=self.keep)
        if len(self.exact):
            off = (~self.rigid) | self._loose
            np.equal(_sums(self.cluster, len(self.exact), off.astype(float)), 0.0, out=self.exact)
            self.rigid_body[:] = self.exact
        # a particle of a rigid cluster that touches another body carries its whole body (it
        # counts BOOST times heavier in the fit), so contacts between bodies weigh it as the
        # cluster (1 / its mass; the heaviest of several): each side then moves by its body's
        # mass, and a collision of two bodies made of different particles conserves momentum
        # (weighed by particle, a capsule of 9 particles pushed one of 11 with its end's mass)
        # (it changes only with the rigidity, so it is worked out again only then, with the
        # fit's contact weights)
        if self._rigid_seen is None or not np.array_equal(self.rigid, self._rigid_seen):
            self._rigid_seen = self.rigid.copy()
            self.body_boost[:] = np.where(self.rigid, BOOST, 1.0)
            # an exact body's collider contacts are solved on the body after the fit
            # (collision/rigid.py): the flags they leave must not weigh the next fit
            solved = self.rigid_body[self.cluster] if len(self.exact) else np.zeros(0, bool)
            self.collider_boost[:] = np.where(
                self.rigid & ~solved, np.where(self._jointed, GROUND_BOOST, BOOST), 1.0)
            self.weighs_contacts[:] = _sums(self.cluster, len(self.weighs_contacts),
                                            (self.collider_boost != 1.0).astype(float)) > 0
            self.contact_inv_mass = self._inv_mass
            if self.rigid.any():
                e = np.nonzero(self.rigid)[0]
                p = self.particles[e]
                self.contact_inv_mass = self._inv_mass.copy()
                np.minimum.at(self.contact_inv_mass, p, np.where(
                    self._inv_mass[p] > 0, 1.0 / self.cluster_mass[self.cluster[e]], 0.0))

    def asleep_clusters(self, asleep):
        """(K,) bool the clusters the shape solve may skip this step: those whose particles
        sleep (asleep (s,) int64 sleeping particles; a cluster lies in one island: its members
        are joined), except a joint's bodies: the joint solve, which still runs on a sleeping
        island, reads their frames from this solve's goal poses (joints.py, exact bodies), and
        on stale poses its corrections moved the sleeping bones by up to 0.2 mm inside the
        step (1.5 mm at 5 substeps; found by review)."""
        mask = np.zeros(len(self._inv_mass), bool)
        mask[asleep] = True
        k = len(self.start) - 1
        awake_entries = np.bincount(self.cluster[~mask[self.particles]], minlength=k)
        return (awake_entries == 0) & (np.diff(self.start) > 0) & ~self._jointed_cluster

    def kernel_args(self, skip=None):
        """The shapes group of loop.run_substeps' arguments. skip (K,) bool the clusters the
        solve leaves alone this step (sleeping ones), or None for none. The substep solves the
        clusters in two calls (module docstring, "Order"), each skipping the other's: before
        the particles' collider contacts every cluster whose fit does not weigh them (soft
        bodies, plants, and rigid bodies, whose collider contacts are solved on the bodies
        after the fit), so that those contacts have the last word over their goals; after
        them the rigid clusters whose fit weighs them (weighs_contacts)."""
        skip = self._no_skip if skip is None else skip
        return (self.particles, self.rest_offset, self.start, self.color_offsets, self.mass,
                self.collider_boost, self.w, self.alpha, self.lam, self.body_boost,
                self.damping, self.keep,
                self.any_damped, self.origin, self.rot, self.exact, self.basis,
                skip | self.weighs_contacts, skip | ~self.weighs_contacts)


def rest_basis(rest_offset, cluster, mass, k):
    """(k, 3, 3) rotations V that diagonalise each cluster's rest second moment
    sum m_e (q_e - qbar)(q_e - qbar)^T (mass weights, qbar its centre); rest_offset (e, 3) [m],
    cluster (e,) int64, mass (e,) [kg]. From one-sided Jacobi, so every machine builds the
    same bits."""
    msum = np.maximum(_sums(cluster, k, mass), 1e-300)
    qc = [rest_offset[:, j] - (_sums(cluster, k, mass * rest_offset[:, j]) / msum)[cluster]
          for j in range(3)]
    a = np.empty((k, 3, 3))
    for i in range(3):
        for j in range(3):
            a[:, i, j] = _sums(cluster, k, mass * qc[i] * qc[j])
    return jacobi_columns(a)[1]


def _color_entries(start, c0, c1):
    """Entries of clusters c0..c1-1 (one colour): their slice and each entry's cluster - c0."""
    es, ee = int(start[c0]), int(start[c1])
    local = np.repeat(np.arange(c1 - c0), np.diff(start[c0:c1 + 1]))
    return slice(es, ee), local


def solve_shapes(X, particles, rest_offset, start, color_offsets, mass, collider_boost, w, alpha,
                 lam, touching, body_touch, body_boost, origin, rot, basis, skip):
    """The NumPy kernel: one pass over all clusters, colour after colour, each colour one
    batched solve, in place on X (3, n) [m]. particles (e,) int64, rest_offset (e, 3) [m],
    start (K + 1,) int64, color_offsets (colours + 1,) int64, mass (e,) [kg], w (e,) [1/kg],
    alpha (e,) alpha / h^2, lam (e, 3) accumulated, touching and body_touch (n,) bool the
    particles that touched a collider and another body this substep, collider_boost and
    body_boost (e,) each entry's weight factor for them (ShapeSolver.begin_step), basis
    (K, 3, 3) where each cluster's Jacobi starts (ShapeSolver.basis); skip (K,) bool clusters
    left alone (sleeping ones: Simulation keeps their particles still in the substeps). Writes
    each cluster's goal pose: origin (K, 3) [m] and rot (K, 3, 3), with goal g_e = origin +
    rot q_e (a skipped cluster keeps the last)."""
    x = X.T
    for c0, c1 in zip(color_offsets[:-1], color_offsets[1:]):
        s, local = _color_entries(start, c0, c1)
        k = int(c1 - c0)
        cl = slice(c0, c1)                          # the colour's clusters that take part
        live = ~skip[c0:c1]
        if not live.all():                          # the others' entries left out; the sums
            if not live.any():                      # per cluster keep their order
                continue
            keep = live[local]
            s = np.arange(s.start, s.stop)[keep]
            local = (np.cumsum(live) - 1)[local[keep]]
            cl = np.nonzero(live)[0] + c0
            k = len(cl)
        pid = particles[s]
        xs = x[pid]
        q = rest_offset[s]
        wgt = mass[s] * np.where(body_touch[pid], body_boost[s],
                                 np.where(touching[pid], collider_boost[s], 1.0))
        wsum = _sums(local, k, wgt)
        centre = [_sums(local, k, xs[:, i] * wgt) / wsum for i in range(3)]
        qbar = [_sums(local, k, q[:, i] * wgt) / wsum for i in range(3)]
        dx = [xs[:, i] - centre[i][local] for i in range(3)]
        wq = [wgt * (q[:, j] - qbar[j][local]) for j in range(3)]
        a = np.empty((k, 3, 3))
        for i in range(3):
            for j in range(3):
                a[:, i, j] = _sums(local, k, dx[i] * wq[j])
        rk = polar_rotation(a, basis[cl])
        rot[cl] = rk
        for i in range(3):
            origin[cl, i] = centre[i] - (rk[:, i, 0] * qbar[0] + rk[:, i, 1] * qbar[1]
                                         + rk[:, i, 2] * qbar[2])
        rk = rk[local]
        qc = [q[:, j] - qbar[j][local] for j in range(3)]
        we = w[s]
        al = alpha[s]
        inv_denom = 1.0 / (we + al + 1e-300)        # one division per entry, not three
        lam_s = lam[s]
        for i in range(3):
            goal = rk[:, i, 0] * qc[0] + rk[:, i, 1] * qc[1] + rk[:, i, 2] * qc[2] \
                + centre[i][local]
            dlam = (goal - xs[:, i] - al * lam_s[:, i]) * inv_denom
            lam_s[:, i] = lam_s[:, i] + dlam
            xs[:, i] = xs[:, i] + we * dlam
        lam[s] = lam_s
        x[pid] = xs


def damp_shapes(X, Xp, particles, start, color_offsets, mass, damping, keep):
    """The NumPy kernel: remove the fraction ``damping`` per second of each damped cluster's
    deformation velocity: the part of the substep's displacement u = x - x* that is not the
    cluster's rigid motion u_cm + w x r (w = I^-1 L from its mass-weighted angular momentum).
    Linear and angular momentum are unchanged (Mueller et al., "Position Based Dynamics", 2007,
    section 3.5). Writes Xp (3, n), the positions a substep ago, only, so positions stay where the
    constraints put them. keep (K,) (1 - damping)^h; other arrays as solve_shapes."""
    x, x_prev = X.T, Xp.T
    for c0, c1 in zip(color_offsets[:-1], color_offsets[1:]):
        damped = np.nonzero(damping[c0:c1] > 0)[0] + c0
        if not damped.size:
            continue
        s, local_all = _color_entries(start, c0, c1)
        is_damped = damping[local_all + c0] > 0
        entries = np.arange(s.start, s.stop)[is_damped]
        local = np.searchsorted(damped, local_all[is_damped] + c0)
        k = damped.size
        kp = keep[damped][local]
        pid = particles[entries]
        m = mass[entries]
        xs = x[pid]
        u = [xs[:, i] - x_prev[pid, i] for i in range(3)]
        msum = _sums(local, k, m)
        c = [_sums(local, k, xs[:, i] * m) / msum for i in range(3)]
        u_cm = [_sums(local, k, u[i] * m) / msum for i in range(3)]
        r = [xs[:, i] - c[i][local] for i in range(3)]
        ang = [_sums(local, k, g * m) for g in _cross(r, u)]
        rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
        inertia = np.empty((k, 3, 3))
        for i in range(3):
            for j in range(3):
                t = rr - r[i] * r[i] if i == j else -(r[i] * r[j])
                inertia[:, i, j] = _sums(local, k, t * m)
        omega = [o[local] for o in pinv_apply(inertia, ang)]
        spin = _cross(omega, r)
        for i in range(3):
            rigid = u_cm[i][local] + spin[i]
            x_prev[pid, i] = xs[:, i] - (rigid + (u[i] - rigid) * kp)
