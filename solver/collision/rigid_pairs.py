"""The contacts between rigid bodies in the NumPy kernel (collision/rigid.py's solve_rigid),
solved one after another in plain floats: the compiled kernel's loop
(kernels/compiled_rigid._body_pass), operation for operation.

The constraints are collision/bodies.py's (vertex-triangle C = s (x_v - p) . n - D, edge-edge
and capsule axes C = (P - Q) . n - D at the closest points, particle pairs C = |x_i - x_j| - D)
and the impulses collision/rigid.py's (Mueller et al., "Detailed Rigid Body Simulation with
Extended Position Based Dynamics", SCA 2020), in two phases of each pass (collision/rigid.py,
"Normal impulses first"): every contact's normal impulse c / (w_a + w_b) (Pairs._normal), then
every contact's friction from its contact points' relative motion now (or, while a resting
contact holds an anchor, from the anchors' gap), |t| / (w_a(t) + w_b(t)) within Coulomb's bound
over the substep or the anchor's span (Pairs._friction; collision/rigid.py, "Static
friction"). Gauss-Seidel takes them one at a time in the order of collision/rigid_order.py's
_nested_order, and batches of independent contacts are small (a four-cube stack: 14 colours
for 20 contacts, when they were coloured), so a NumPy batch paid the call overhead of a few
dozen array operations for one or two contacts (1.2 s a frame for the stack; 0.2 s so); Python
floats round as the compiled kernel does (IEEE 754 doubles, correctly rounded square roots, no
fused operations), so the backends keep the same bits.
"""

import math

import numpy as np

from .bodies import (ACTIVE, DEGENERATE, EDGES, PAIR, PARALLEL, SEGMENT_PARALLEL, SEGMENTS, TOL,
                     VERTEX_TRI)


class Pairs:
    """The contacts between bodies, solved one after another in plain floats: the compiled
    kernel's loop (kernels/compiled_rigid._body_pass), operation for operation (module
    docstring)."""

    def __init__(self, st, idx, kind, side, dist, mu, jit):
        self.idx = idx.tolist()
        self.kind, self.side, self.dist = kind.tolist(), side.tolist(), dist.tolist()
        self.mu, self.jit = mu.tolist(), jit.tolist()
        flat = np.unique(idx[idx >= 0])
        bodies = st.body[flat]
        on = bodies >= 0
        xs = st.X[:, flat].T.tolist()
        xps = st.Xp[:, flat].T.tolist()
        q = st.q[st.entry[flat[on]]].tolist()
        ids, bs = flat.tolist(), bodies.tolist()
        self.corner = {}          # particle: (body, rest offset or None, x now (fixed), x*)
        k = 0
        for j, pid in enumerate(ids):
            if bs[j] >= 0:
                self.corner[pid] = (bs[j], q[k], None, xps[j])
                k += 1
            else:
                self.corner[pid] = (-1, None, xs[j], xps[j])
        self.bodies = sorted({b for b in bs if b >= 0})

    def solve(self, st, part_start, level_start, reverse, allowance, touch, first, anchor_on,
              anchor, sums, resting, phase, saved, acted):
        """One phase of a pass over the levels of parts (collision/rigid.py,
        RigidContacts.select), each part's contacts in their order; reversed: the last level
        first, each part's contacts last first. Phase 0 applies the normal impulses and leaves
        in saved (Q, 8) and acted (Q,) what phase 1, the friction, reads
        (RigidContacts.pair_saved, pair_acted)."""
        c = {b: st.c[b].tolist() for b in self.bodies}
        R = {b: st.R[b].ravel().tolist() for b in self.bodies}
        Ii = {b: st.inv_inertia[b].ravel().tolist() for b in self.bodies}
        im = {b: float(st.inv_mass[b]) for b in self.bodies}
        moved = set()
        touched = set()
        starts, levels = part_start.tolist(), level_start.tolist()
        for li in range(len(levels) - 1):
            lv = len(levels) - 2 - li if reverse else li
            for part in range(levels[lv], levels[lv + 1]):
                lo, hi = starts[part], starts[part + 1]
                for q in (range(hi - 1, lo - 1, -1) if reverse else range(lo, hi)):
                    if phase == 0:
                        self._normal(q, c, R, Ii, im, moved, touched, allowance, first,
                                     anchor_on, sums, resting, saved, acted)
                    elif acted[q]:
                        self._friction(q, c, R, Ii, im, moved, anchor_on, anchor, sums,
                                       resting, saved)
        for b in moved:
            st.c[b] = c[b]
            st.R[b] = np.array(R[b]).reshape(3, 3)
            st.moved[b] = True
        if touched:
            touch[list(touched)] = True

    def _point(self, p, c, R):
        """Particle p (or -1) now: on its body's pose, fixed, or 0."""
        if p < 0:
            return 0.0, 0.0, 0.0
        b, q, x, _ = self.corner[p]
        if b < 0:
            return x[0], x[1], x[2]
        cb, r = c[b], R[b]
        return (cb[0] + (r[0] * q[0] + r[1] * q[1] + r[2] * q[2]),
                cb[1] + (r[3] * q[0] + r[4] * q[1] + r[5] * q[2]),
                cb[2] + (r[6] * q[0] + r[7] * q[1] + r[8] * q[2]))

    def _sides(self, q):
        """The movable bodies on contact q's two sides (-1 for none) and whether its first
        two corners are one edge (edge-edge, capsule axes)."""
        ix = self.idx[q]
        two = self.kind[q] == EDGES or self.kind[q] == SEGMENTS
        ba = self.corner[ix[0]][0]
        bb = self.corner[ix[2]][0] if two else self.corner[ix[1]][0]
        return ix, two, ba, bb

    def _normal(self, q, c, R, Ii, im, moved, touched, allowance, first, anchor_on, sums,
                resting, saved, acted):
        """Contact q's normal impulse c / (w_a + w_b) along its normal m (from b to a)."""
        acted[q] = False
        ix, two, ba, bb = self._sides(q)
        kd = self.kind[q]
        x = [self._point(p, c, R) for p in ix]
        xp = [self.corner[p][3] if p >= 0 else (0.0, 0.0, 0.0) for p in ix]
        j0, j1, j2 = self.jit[q]
        ok, m0, m1, m2, pen, w0, w1, w2, w3 = _scalar_geometry(
            kd, self.side[q], self.dist[q], j0, j1, j2, x)
        if not (ok and pen > ACTIVE):
            # apart at a substep's start by more than ``resting``: the anchor lets go. A
            # resting contact between bodies reads just apart there (both bodies fell by the
            # same g h^2 in the prediction, and the substep before left it at contact or a
            # hair off): letting go there re-anchored it at every substep where it had
            # slipped, so a lateral load crept (collision/rigid.py, "Static friction")
            if first and not (ok and pen > -resting):
                anchor_on[q] = False
            return
        w = [w0 if ix[0] >= 0 else 0.0, w1 if ix[1] >= 0 else 0.0, w2 if ix[2] >= 0 else 0.0,
             w3 if ix[3] >= 0 else 0.0]
        S = _points(w, x, xp, two)
        W = 0.0
        for side_, b in enumerate((ba, bb)):
            if b >= 0:
                W = W + _scalar_response(im[b], c[b], R[b], Ii[b], S[side_], m0, m1, m2)
        if not W > 0:
            return
        for p in ix:
            if p >= 0:
                touched.add(p)
        into = -(S[2][0] * m0 + S[2][1] * m1 + S[2][2] * m2)
        corr = min(pen, max(into + allowance, 0.0))
        lam = corr / W
        sums[q, 0] += lam
        self._push(ba, bb, S, m0, m1, m2, lam, 1.0, c, R, Ii, im, moved)
        saved[q] = (m0, m1, m2, w[0], w[1], w[2], w[3], into)
        acted[q] = not corr < pen

    def _friction(self, q, c, R, Ii, im, moved, anchor_on, anchor, sums, resting, saved):
        """Contact q's friction from its contact points' relative motion over the substep
        now, or (while it holds an anchor) from the anchors' gap, within Coulomb's bound; then
        a resting contact that held takes an anchor: its weights on its corners now
        (collision/rigid.py, "Static friction")."""
        ix, two, ba, bb = self._sides(q)
        m0, m1, m2, w0, w1, w2, w3, into = saved[q].tolist()
        w = [w0, w1, w2, w3]
        x = [self._point(p, c, R) for p in ix]
        xp = [self.corner[p][3] if p >= 0 else (0.0, 0.0, 0.0) for p in ix]
        held = anchor_on[q]
        # held: the same material points, the anchor's weights on the corners now
        S = _points([float(v) for v in anchor[q]], x, None, two) if held else \
            _points(w, x, xp, two)
        un = S[2][0] * m0 + S[2][1] * m1 + S[2][2] * m2
        t0 = S[2][0] - m0 * un
        t1 = S[2][1] - m1 * un
        t2 = S[2][2] - m2 * un
        tl = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
        if not tl > 1e-300:
            return
        n0 = t0 / tl
        n1 = t1 / tl
        n2 = t2 / tl
        W = 0.0
        for side_, b in enumerate((ba, bb)):
            if b >= 0:
                W = W + _scalar_response(im[b], c[b], R[b], Ii[b], S[side_], n0, n1, n2)
        need = tl / W
        dep = sums[q, 0]
        used = sums[q, 1]
        # project.coulomb's rule, on scalars (a call per contact and pass: this loop is plain
        # floats, as the compiled kernel's)
        if need + used <= self.mu[q] * dep:
            imp = need
            static = True
        else:
            imp = min(max(self.mu[q] * dep - used, 0.0), need)
            static = False
        sums[q, 1] = used + imp
        self._push(ba, bb, S, n0, n1, n2, imp, -1.0, c, R, Ii, im, moved)
        kd = self.kind[q]
        if not static or into > resting:
            anchor_on[q] = False
        elif not anchor_on[q] and (kd == VERTEX_TRI or kd == EDGES):
            anchor[q] = w
            anchor_on[q] = True

    @staticmethod
    def _push(ba, bb, S, n0, n1, n2, imp, sign, c, R, Ii, im, moved):
        """The impulse sign imp n on a at P_a (S[0]), its opposite on b at P_b (S[1])."""
        for side_, b in enumerate((ba, bb)):
            if b < 0:
                continue
            sg = sign if side_ == 0 else -sign
            _scalar_impulse(im[b], c[b], R, b, Ii[b], S[side_], (n0 * imp) * sg,
                            (n1 * imp) * sg, (n2 * imp) * sg)
            moved.add(b)


def _points(w, x, xp, two):
    """[P_a, P_b, u]: the contact points on each side from the corners' weights w on their
    corners x (4 points), and their relative motion u over the substep from the corners a
    substep ago xp, or (xp None) the gap P_a - P_b."""
    S = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        pa = w[0] * x[0][i]
        pa = pa + (w[1] * x[1][i] if two else 0.0)
        pb = 0.0 if two else -w[1] * x[1][i]
        pb = pb - w[2] * x[2][i]
        pb = pb - w[3] * x[3][i]
        S[0][i] = pa
        S[1][i] = pb
        if xp is None:
            S[2][i] = pa - pb
            continue
        u = w[0] * (x[0][i] - xp[0][i])
        u = u + w[1] * (x[1][i] - xp[1][i])
        u = u + w[2] * (x[2][i] - xp[2][i])
        u = u + w[3] * (x[3][i] - xp[3][i])
        S[2][i] = u
    return S


def _scalar_iw(r, ii, v0, v1, v2):
    """R (I0^-1 (R^T v)) on a row-major rotation r and inverse inertia ii (9 floats each)."""
    u0 = r[0] * v0 + r[3] * v1 + r[6] * v2
    u1 = r[1] * v0 + r[4] * v1 + r[7] * v2
    u2 = r[2] * v0 + r[5] * v1 + r[8] * v2
    t0 = ii[0] * u0 + ii[1] * u1 + ii[2] * u2
    t1 = ii[3] * u0 + ii[4] * u1 + ii[5] * u2
    t2 = ii[6] * u0 + ii[7] * u1 + ii[8] * u2
    return (r[0] * t0 + r[1] * t1 + r[2] * t2, r[3] * t0 + r[4] * t1 + r[5] * t2,
            r[6] * t0 + r[7] * t1 + r[8] * t2)


def _scalar_response(im, cb, r, ii, P, n0, n1, n2):
    r0 = P[0] - cb[0]
    r1 = P[1] - cb[1]
    r2 = P[2] - cb[2]
    x0 = r1 * n2 - r2 * n1
    x1 = r2 * n0 - r0 * n2
    x2 = r0 * n1 - r1 * n0
    a0, a1, a2 = _scalar_iw(r, ii, x0, x1, x2)
    return im + (x0 * a0 + x1 * a1 + x2 * a2)


def _scalar_impulse(im, cb, R, b, ii, P, p0, p1, p2):
    """The impulse p (signed) at P on body b: its centre cb (list, in place) and rotation R[b]
    (replaced) (constraints/joints._rotate's formula)."""
    r0 = P[0] - cb[0]
    r1 = P[1] - cb[1]
    r2 = P[2] - cb[2]
    cb[0] = cb[0] + p0 * im
    cb[1] = cb[1] + p1 * im
    cb[2] = cb[2] + p2 * im
    r = R[b]
    t0, t1, t2 = _scalar_iw(r, ii, r1 * p2 - r2 * p1, r2 * p0 - r0 * p2, r0 * p1 - r1 * p0)
    hx = t0 * 0.5
    hy = t1 * 0.5
    hz = t2 * 0.5
    s = 1.0 / (1.0 + (hx * hx + hy * hy + hz * hz))
    d = (1.0 - 2.0 * s * (hy * hy + hz * hz), 2.0 * s * (hx * hy - hz), 2.0 * s * (hx * hz + hy),
         2.0 * s * (hx * hy + hz), 1.0 - 2.0 * s * (hx * hx + hz * hz), 2.0 * s * (hy * hz - hx),
         2.0 * s * (hx * hz - hy), 2.0 * s * (hy * hz + hx), 1.0 - 2.0 * s * (hx * hx + hy * hy))
    out = [0.0] * 9
    for j in range(3):
        a0, a1, a2 = r[j], r[3 + j], r[6 + j]
        out[j] = d[0] * a0 + d[1] * a1 + d[2] * a2
        out[3 + j] = d[3] * a0 + d[4] * a1 + d[5] * a2
        out[6 + j] = d[6] * a0 + d[7] * a1 + d[8] * a2
    R[b] = out


def _scalar_geometry(kd, side, D, j0, j1, j2, x):
    """_geometry for one contact from its corners x (4 points): (ok, m0, m1, m2, pen, w0, w1,
    w2, w3), the compiled kernel's operations (compiled_rigid_scalar._geometry)."""
    none = (False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    (x00, x10, x20), (x01, x11, x21), (x02, x12, x22), (x03, x13, x23) = x
    if kd == VERTEX_TRI:
        e00, e01, e02 = x02 - x01, x12 - x11, x22 - x21
        e10, e11, e12 = x03 - x01, x13 - x11, x23 - x21
        nx = e01 * e12 - e02 * e11
        ny = e02 * e10 - e00 * e12
        nz = e00 * e11 - e01 * e10
        ln2 = nx * nx + ny * ny + nz * nz
        if not ln2 > DEGENERATE:
            return none
        ln = math.sqrt(ln2)
        nx, ny, nz = nx / ln, ny / ln, nz / ln
        d0, d1, d2 = x00 - x01, x10 - x11, x20 - x21
        d00 = e00 * e00 + e01 * e01 + e02 * e02
        d01 = e00 * e10 + e01 * e11 + e02 * e12
        d11 = e10 * e10 + e11 * e11 + e12 * e12
        d20 = d0 * e00 + d1 * e01 + d2 * e02
        d21 = d0 * e10 + d1 * e11 + d2 * e12
        den = d00 * d11 - d01 * d01
        bb = (d11 * d20 - d01 * d21) / den
        bc = (d00 * d21 - d01 * d20) / den
        ba = 1.0 - bb - bc
        if not (ba >= -TOL and bb >= -TOL and bc >= -TOL):
            return none
        m0, m1, m2 = side * nx, side * ny, side * nz
        return True, m0, m1, m2, D - (d0 * m0 + d1 * m1 + d2 * m2), 1.0, -ba, -bb, -bc
    if kd == PAIR:
        ln, m0, m1, m2 = _scalar_dir(x00 - x01, x10 - x11, x20 - x21, j0, j1, j2)
        return True, m0, m1, m2, D - ln, 1.0, -1.0, 0.0, 0.0
    d10, d11, d12 = x01 - x00, x11 - x10, x21 - x20
    d20, d21, d22 = x03 - x02, x13 - x12, x23 - x22
    r0, r1, r2 = x00 - x02, x10 - x12, x20 - x22
    a = d10 * d10 + d11 * d11 + d12 * d12
    e = d20 * d20 + d21 * d21 + d22 * d22
    b = d10 * d20 + d11 * d21 + d12 * d22
    cc = d10 * r0 + d11 * r1 + d12 * r2
    f = d20 * r0 + d21 * r1 + d22 * r2
    if kd == EDGES:
        nx = d11 * d22 - d12 * d21
        ny = d12 * d20 - d10 * d22
        nz = d10 * d21 - d11 * d20
        ln2 = nx * nx + ny * ny + nz * nz
        if not ln2 > PARALLEL * (a * e):
            return none
        den = a * e - b * b
        ln = math.sqrt(ln2)
        sp = (b * f - cc * e) / den
        tp = (a * f - b * cc) / den
        if not (sp >= 0.0 and sp <= 1.0 and tp >= 0.0 and tp <= 1.0):
            return none
        turn = -side if nx * j0 + ny * j1 + nz * j2 < 0.0 else side
        m0, m1, m2 = turn * (nx / ln), turn * (ny / ln), turn * (nz / ln)
        dn = ((r0 + sp * d10) - tp * d20) * m0 + ((r1 + sp * d11) - tp * d21) * m1 \
            + ((r2 + sp * d12) - tp * d22) * m2
        return True, m0, m1, m2, D - dn, 1.0 - sp, sp, -(1.0 - tp), -tp
    sp, tp = _scalar_closest(a, e, b, cc, f)
    ln, m0, m1, m2 = _scalar_dir((r0 + sp * d10) - tp * d20, (r1 + sp * d11) - tp * d21,
                                 (r2 + sp * d12) - tp * d22, j0, j1, j2)
    return True, m0, m1, m2, D - ln, 1.0 - sp, sp, -(1.0 - tp), -tp


def _scalar_dir(d0, d1, d2, j0, j1, j2):
    ln = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if ln > 1e-12:
        return ln, d0 / ln, d1 / ln, d2 / ln
    return ln, j0, j1, j2


def _scalar_closest(a, e, b, c, f):
    """bodies.segment_closest for one pair, from its dot products (compiled_bodies')."""
    if not a > 0.0:
        a = 1.0
    if not e > 0.0:
        e = 1.0
    den = a * e - b * b
    su = -c / a
    sw = (b - c) / a
    if den > SEGMENT_PARALLEL * (a * e):
        s = (b * f - c * e) / den
    else:
        s = 0.5 * (max(min(su, sw), 0.0) + min(max(su, sw), 1.0))
    s = min(max(s, 0.0), 1.0)
    t = (b * s + f) / e
    if t < 0.0:
        s = min(max(su, 0.0), 1.0)
    elif t > 1.0:
        s = min(max(sw, 0.0), 1.0)
    return s, min(max(t, 0.0), 1.0)
