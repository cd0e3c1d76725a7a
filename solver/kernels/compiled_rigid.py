"""The compiled mirror of collision/rigid.solve_rigid: contacts of rigid bodies solved on the
bodies (that module's docstring gives the constraints, the impulses and the order; Mueller et
al. 2020), with every expression of the NumPy kernel in its order (no fastmath), so the
backends agree bit for bit, whatever the thread count:

- in each pass, two phases (collision/rigid.py, "Normal impulses first"): the normal impulses
  of the contacts between bodies, then of the collider contacts, then their friction in the
  same order, the contacts between bodies in the order opposite to their normal phase's; what
  a contact's friction reads of its normal phase (its normal, weights and approach) is kept
  per contact (RigidContacts.pair_saved, cand_saved);
- the contacts between bodies level by level of rigid_order._nested_order, the parts of a level in
  parallel (they share no movable body), each part's contacts one after another as the NumPy
  kernel takes them (collision/rigid_pairs.py). One parallel region per level with
  PARALLEL_MIN contacts or more, at most five (a smaller level runs on the calling thread):
  a region per colour of a greedy colouring (9 colours at 100 ragdolls, 720 regions a frame,
  about 7 us each on Blender's oneTBB pool) cost more than it gained on two threads (that
  body pass 11.8 to 13.6 ms a frame, measured 2026-11-26);
- the collider contacts with the bodies in parallel, each body's candidates in their order
  (_collider_pass: a collider contact moves its own body only), which is what the NumPy
  kernel's batches colour by colour do to each body.

The static friction anchors (collision/rigid.py) are per contact and per candidate, so each
is read and written by the thread that owns its part or body: the same bits.

The per-contact work is written out in two loops (_body_pass, _collider_pass) with the bodies'
poses in local scalars, and its helpers take scalars only: Numba counts references on every
array handed to a function, inlined ones too, and four corners' positions through a helper
taking seven arrays cost 300 ns a contact, 21 ns written out (measured 2026-11-26).

The two passes are inlined into solve_rigid, which holds their parallel loops (it is the
parallel function): as functions of their own each was a call passing 30 to 50 arrays, about
a microsecond of reference counting, eight calls a substep whether or not the pass had work.
The 100-crate pile's solve, replayed (its frames 60 and 90, two threads): 81 to 73 us and 21
to 14 us a substep, the same bits (2026-11-30).
"""

import numpy as np
from numba import njit, prange

from .compiled_contact import (_MESH, _approx_sdf, _carried,
                               _collider_motion, _combined_friction, _guard_motion, _local_sdf,
                               _particle_distance, _trace)
from .compiled_mesh import mesh_far
from .compiled_options import prange_only
from .compiled_rigid_scalar import (_ACTIVE, _EDGES, _SEGMENTS, _VERTEX_TRI, _coulomb,
                                    _geometry, _impulse, _resp)

# a level of the body pass with fewer contacts than this runs on the calling thread: a parallel
# region costs about 10 us in the substep loop on two threads, more than such a level's work
# (100 ragdolls: levels of 6 to 70 contacts, 0.25 us each, cost 3.6 ms a frame as regions and
# 2.4 ms on one thread; measured 2026-11-27)
PARALLEL_MIN = 96
# fewer collider candidates of rigid bodies than this are solved on the calling thread (a
# parallel region costs more than a few candidates); 256 until 2026-11-30, when at 64 the
# 100-crate pile's 72 at frame 60 (the bottom layer's corners, 25 bodies) went parallel: its
# solve replayed 4.4 to 3.8 ms a step, its median frame 5.4-6.0 to 4.8 ms; 3 ragdolls (184 a
# step) 2.6-2.8 to 2.1 ms a frame, 1 (63) the same (two threads, alternated)
SERIAL_CANDIDATES = 64

@njit(cache=True, fastmath=False)
def _solve_part(part, X, Xp, part_start, reverse, idx, kind, side, dist, mu, jit, allowance,
                touch, body, entry, rest, c, R, inv_mass, inv_inertia, moved, first, anchor_on,
                anchor, sums, resting, phase, saved, acted):
    """One part's contacts between bodies, one after another (reversed: last first), in one
    phase of a pass (rigid_pairs.Pairs.solve): 0 the normal impulses (Pairs._normal), 1 the
    friction (Pairs._friction) of the contacts phase 0 left acted, from what it left in saved
    (Q, 8): the work of _body_pass, a call per part, in or out of a parallel region."""
    x = np.empty((3, 4))
    xp = np.empty((3, 4))
    w = np.empty(4)
    S = np.empty((3, 3))
    lo = part_start[part]
    hi = part_start[part + 1]
    for qq in range(hi - lo):
        q = hi - 1 - qq if reverse else lo + qq
        if phase == 1 and not acted[q]:
            continue
        kd = kind[q]
        two = kd == _EDGES or kd == _SEGMENTS
        for j in range(4):
            p = idx[q, j]
            if p < 0:
                for i in range(3):
                    x[i, j] = 0.0
                    xp[i, j] = 0.0
                continue
            b = body[p]
            if b < 0:
                for i in range(3):
                    x[i, j] = X[i, p]
            else:
                e = entry[p]
                for i in range(3):
                    x[i, j] = c[b, i] + (R[b, i, 0] * rest[e, 0] + R[b, i, 1] * rest[e, 1]
                                         + R[b, i, 2] * rest[e, 2])
            for i in range(3):
                xp[i, j] = Xp[i, p]
        ba = body[idx[q, 0]]
        bb = body[idx[q, 2]] if two else body[idx[q, 1]]
        if phase == 0:
            acted[q] = False
            ok, m0, m1, m2, pen, w[0], w[1], w[2], w[3] = _geometry(
                kd, side[q], dist[q], jit[q, 0], jit[q, 1], jit[q, 2], x[0, 0], x[1, 0],
                x[2, 0], x[0, 1], x[1, 1], x[2, 1], x[0, 2], x[1, 2], x[2, 2], x[0, 3],
                x[1, 3], x[2, 3])
            if not (ok and pen > _ACTIVE):
                # a held anchor lets go when apart by more than ``resting`` (rigid_pairs.py)
                if first and not (ok and pen > -resting):
                    anchor_on[q] = False
                continue
            for j in range(4):
                if idx[q, j] < 0:
                    w[j] = 0.0
        else:
            m0 = saved[q, 0]
            m1 = saved[q, 1]
            m2 = saved[q, 2]
            for j in range(4):
                w[j] = saved[q, 3 + j]
        held = phase == 1 and anchor_on[q]
        # the contact points on each side and their relative motion (rigid_pairs._points);
        # held: the same material points, the anchor's weights on the corners now, and their
        # gap
        for i in range(3):
            if held:
                pa = anchor[q, 0] * x[i, 0]
                pa = pa + (anchor[q, 1] * x[i, 1] if two else 0.0)
                pb = 0.0 if two else -anchor[q, 1] * x[i, 1]
                pb = pb - anchor[q, 2] * x[i, 2]
                pb = pb - anchor[q, 3] * x[i, 3]
                u = pa - pb
            else:
                pa = w[0] * x[i, 0]
                pa = pa + (w[1] * x[i, 1] if two else 0.0)
                pb = 0.0 if two else -w[1] * x[i, 1]
                pb = pb - w[2] * x[i, 2]
                pb = pb - w[3] * x[i, 3]
                u = w[0] * (x[i, 0] - xp[i, 0])
                u = u + w[1] * (x[i, 1] - xp[i, 1])
                u = u + w[2] * (x[i, 2] - xp[i, 2])
                u = u + w[3] * (x[i, 3] - xp[i, 3])
            S[0, i] = pa
            S[1, i] = pb
            S[2, i] = u
        if phase == 0:
            n0 = m0
            n1 = m1
            n2 = m2
        else:
            un = S[2, 0] * m0 + S[2, 1] * m1 + S[2, 2] * m2
            t0 = S[2, 0] - m0 * un
            t1 = S[2, 1] - m1 * un
            t2 = S[2, 2] - m2 * un
            tl = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
            if not tl > 1e-300:
                continue
            n0 = t0 / tl
            n1 = t1 / tl
            n2 = t2 / tl
        W = 0.0
        for side_ in range(2):
            b = ba if side_ == 0 else bb
            if b < 0:
                continue
            W = W + _resp(inv_mass[b], c[b, 0], c[b, 1], c[b, 2], R[b, 0, 0], R[b, 0, 1],
                          R[b, 0, 2], R[b, 1, 0], R[b, 1, 1], R[b, 1, 2], R[b, 2, 0],
                          R[b, 2, 1], R[b, 2, 2], inv_inertia[b, 0, 0], inv_inertia[b, 0, 1],
                          inv_inertia[b, 0, 2], inv_inertia[b, 1, 0], inv_inertia[b, 1, 1],
                          inv_inertia[b, 1, 2], inv_inertia[b, 2, 0], inv_inertia[b, 2, 1],
                          inv_inertia[b, 2, 2], S[side_, 0], S[side_, 1], S[side_, 2], n0,
                          n1, n2)
        static = False
        if phase == 0:
            if not W > 0:
                continue
            for j in range(4):
                if idx[q, j] >= 0:
                    touch[idx[q, j]] = True
            into = -(S[2, 0] * m0 + S[2, 1] * m1 + S[2, 2] * m2)
            corr = min(pen, max(into + allowance, 0.0))
            imp = corr / W
            sign = 1.0
            sums[q, 0] += imp
        else:
            used = sums[q, 1]
            imp, static = _coulomb(tl / W, used, sums[q, 0], mu[q], mu[q])
            sums[q, 1] = used + imp
            sign = -1.0
        # the impulse sign imp n on a at P_a, its opposite on b at P_b (Pairs._push)
        for side_ in range(2):
            b = ba if side_ == 0 else bb
            if b < 0:
                continue
            sg = sign if side_ == 0 else -sign
            _impulse(b, S[side_, 0], S[side_, 1], S[side_, 2], (n0 * imp) * sg,
                     (n1 * imp) * sg, (n2 * imp) * sg, c, R, inv_mass, inv_inertia, moved)
        if phase == 0:
            saved[q, 0] = m0
            saved[q, 1] = m1
            saved[q, 2] = m2
            for j in range(4):
                saved[q, 3 + j] = w[j]
            saved[q, 7] = into
            # a contact still pushed out of an overlap takes no friction (rigid.py)
            acted[q] = not corr < pen
        elif not static or saved[q, 7] > resting:
            anchor_on[q] = False
        elif not anchor_on[q] and (kd == _VERTEX_TRI or kd == _EDGES):
            for j in range(4):
                anchor[q, j] = w[j]
            anchor_on[q] = True


@njit(cache=True, fastmath=False, inline="always")
def _body_pass(X, Xp, part_start, level_start, reverse, idx, kind, side, dist, mu, jit,
               allowance, touch, body, entry, rest, c, R, inv_mass, inv_inertia, moved, first,
               anchor_on, anchor, sums, resting, phase, saved, acted):
    """rigid_pairs.Pairs.solve, one phase: level by level (reversed: the last level first),
    the parts of a level in parallel (they share no movable body: rigid_order._nested_order),
    each part's contacts one after another (reversed: last first). What two parts may share
    is an immovable corner (a sleeping or pinned particle, read from X, which no contact
    writes), whose touch flag both may set: the same value, read after the pass."""
    levels = level_start.shape[0] - 1
    for li in range(levels):
        lv = levels - 1 - li if reverse else li
        count = part_start[level_start[lv + 1]] - part_start[level_start[lv]]
        if count == 0:
            continue                      # no contact at this level: no parallel region
        if count < PARALLEL_MIN:
            for part in range(level_start[lv], level_start[lv + 1]):
                _solve_part(part, X, Xp, part_start, reverse, idx, kind, side, dist, mu, jit,
                            allowance, touch, body, entry, rest, c, R, inv_mass, inv_inertia,
                            moved, first, anchor_on, anchor, sums, resting, phase, saved, acted)
            continue
        for part in prange(level_start[lv], level_start[lv + 1]):
            _solve_part(part, X, Xp, part_start, reverse, idx, kind, side, dist, mu, jit,
                        allowance, touch, body, entry, rest, c, R, inv_mass, inv_inertia, moved,
                        first, anchor_on, anchor, sums, resting, phase, saved, acted)


@njit(cache=True, fastmath=False, inline="always")
def _collider_pass(X, Xp, geo, state, bodies, fric, mesh, allowance, first, phase, resting):
    """rigid_colliders.normal_phase or friction_phase for every candidate: one loop, not a call
    per candidate (a call passing the mesh group's arrays cost a microsecond in reference
    counting, more than the contact). The bodies in parallel, each body's candidates in their
    order (by_body, body_start: RigidContacts.cand_by_body, cand_body_start): a collider
    contact reads and moves its own body and writes its own particle's contact state only, so
    each body sees the operations of the NumPy kernel's colour-by-colour order, and the bits do
    not depend on the thread count. A candidate whose particle, now and a substep ago, is still
    nearer to where the step started (X0) than its clearance there (clear) is skipped: its
    contact would change nothing (solve_rigid). Most are (at 100 ragdolls on the stairs 93 % of
    0.98 M candidates a frame), and a particle has several candidates (a collider each), which
    come one after another in a body's order (by particle, then collider:
    RigidContacts.select), run_next (Qc,) int64 the position in by_body where the next
    particle's start: a particle whose least clearance over its candidates holds (pclear (n,)
    [m], from the step's start) on its body's pose now skips them all in one test, as each
    candidate's own test would (its clearance is at least the least): the same candidates are
    taken, the same bits. Visiting each candidate to find its particle clear was 70 % of this
    pass at 100 ragdolls (measured 2026-11-27). Fewer than SERIAL_CANDIDATES candidates run on
    the calling thread (a few are less work than a parallel region costs). The
    arguments come in solve_rigid's groups: geo (the candidates, the colliders' placements and
    friction), state (the particles' contact state), bodies (the bodies, their poses, the
    step's start and clearances, the candidates by body) and fric (the static friction
    state)."""
    (body, entry, rest, c, Rm, inv_mass, inv_inertia, moved, X0, clear, by_body, body_start,
     pclear, run_next) = bodies
    if by_body.shape[0] < SERIAL_CANDIDATES:
        for g in range(body_start.shape[0] - 1):
            if phase == 0:
                _collider_body(g, X, Xp, geo, state, bodies, fric, mesh, allowance, first)
            else:
                _collider_friction(g, Xp, geo, state, bodies, fric, resting)
    else:
        for g in prange(body_start.shape[0] - 1):
            if phase == 0:
                _collider_body(g, X, Xp, geo, state, bodies, fric, mesh, allowance, first)
            else:
                _collider_friction(g, Xp, geo, state, bodies, fric, resting)


@njit(cache=True, fastmath=False, inline="always")
def _collider_body(g, X, Xp, geo, state, bodies, held_state, mesh, allowance, first):
    """_collider_pass's normal phase for body g's candidates (by_body[body_start[g]:
    body_start[g + 1]]): rigid_colliders.normal_phase, leaving what the friction phase reads in
    saved (Qc, 8) and acted (Qc,)."""
    (cand_particle, cand_collider, shape, approximate, abc, thickness, radius, R, t, s, Rb, tb, sb,
     moving, mu_s, mu_k, friction) = geo
    (depth, used, touching, normal, motion, collider) = state
    (body, entry, rest, c, Rm, inv_mass, inv_inertia, moved, X0, clear, by_body, body_start,
     pclear, run_next) = bodies
    held, anchor, sums, saved, acted = held_state
    for g2 in range(body_start[g], body_start[g + 1]):
        acted[by_body[g2]] = False
    gg = body_start[g]
    while gg < body_start[g + 1]:
        nxt = run_next[gg]          # the particle's candidates: by_body[gg:nxt]
        p = cand_particle[by_body[gg]]
        b = body[p]
        e = entry[p]
        pc = pclear[p]
        if pc > 0:
            y0 = c[b, 0] + (Rm[b, 0, 0] * rest[e, 0] + Rm[b, 0, 1] * rest[e, 1]
                            + Rm[b, 0, 2] * rest[e, 2]) - X0[0, p]
            y1 = c[b, 1] + (Rm[b, 1, 0] * rest[e, 0] + Rm[b, 1, 1] * rest[e, 1]
                            + Rm[b, 1, 2] * rest[e, 2]) - X0[1, p]
            y2 = c[b, 2] + (Rm[b, 2, 0] * rest[e, 0] + Rm[b, 2, 1] * rest[e, 1]
                            + Rm[b, 2, 2] * rest[e, 2]) - X0[2, p]
            z0 = Xp[0, p] - X0[0, p]
            z1 = Xp[1, p] - X0[1, p]
            z2 = Xp[2, p] - X0[2, p]
            if pc * pc > max(y0 * y0 + y1 * y1 + y2 * y2, z0 * z0 + z1 * z1 + z2 * z2):
                if first:
                    for g2 in range(gg, nxt):
                        held[by_body[g2]] = False   # apart (the NumPy kernel finds it so)
                gg = nxt
                continue
        for g2 in range(gg, nxt):
            jj = by_body[g2]
            k = cand_collider[jj]
            x0 = c[b, 0] + (Rm[b, 0, 0] * rest[e, 0] + Rm[b, 0, 1] * rest[e, 1]
                            + Rm[b, 0, 2] * rest[e, 2])
            x1 = c[b, 1] + (Rm[b, 1, 0] * rest[e, 0] + Rm[b, 1, 1] * rest[e, 1]
                            + Rm[b, 1, 2] * rest[e, 2])
            x2 = c[b, 2] + (Rm[b, 2, 0] * rest[e, 0] + Rm[b, 2, 1] * rest[e, 1]
                            + Rm[b, 2, 2] * rest[e, 2])
            xp0 = Xp[0, p]
            xp1 = Xp[1, p]
            xp2 = Xp[2, p]
            cl = clear[jj]
            if cl > 0:
                a0 = x0 - X0[0, p]
                a1 = x1 - X0[1, p]
                a2 = x2 - X0[2, p]
                b0 = xp0 - X0[0, p]
                b1 = xp1 - X0[1, p]
                b2 = xp2 - X0[2, p]
                if cl * cl > max(a0 * a0 + a1 * a1 + a2 * a2, b0 * b0 + b1 * b1 + b2 * b2):
                    if first:
                        held[jj] = False
                    continue
            sh = shape[k]
            th = thickness[k]
            rad = radius[p]
            tri = -1
            wa = 0.0
            wb = 0.0
            wc = 0.0
            if sh != _MESH and not moving[k]:
                # a primitive at rest (the common case): _distance's operations on scalars, no
                # frame views made per candidate
                d0 = x0 - t[k, 0]
                d1 = x1 - t[k, 1]
                d2 = x2 - t[k, 2]
                q0 = d0 * R[k, 0, 0] + d1 * R[k, 1, 0] + d2 * R[k, 2, 0]
                q1 = d0 * R[k, 0, 1] + d1 * R[k, 1, 1] + d2 * R[k, 2, 1]
                q2 = d0 * R[k, 0, 2] + d1 * R[k, 1, 2] + d2 * R[k, 2, 2]
                if approximate[k]:
                    phi, g0, g1, g2 = _approx_sdf(sh, abc[k, 0], abc[k, 1], abc[k, 2], s[k, 0],
                                                  s[k, 1], q0, q1, q2)
                else:
                    phi, g0, g1, g2 = _local_sdf(sh, abc[k, 0], abc[k, 1], abc[k, 2], q0,
                                                 q1, q2)
                n0 = R[k, 0, 0] * g0 + R[k, 0, 1] * g1 + R[k, 0, 2] * g2
                n1 = R[k, 1, 0] * g0 + R[k, 1, 1] * g1 + R[k, 1, 2] * g2
                n2 = R[k, 2, 0] * g0 + R[k, 2, 1] * g1 + R[k, 2, 2] * g2
                pen = phi - th - rad
                e0 = x0 - xp0
                e1 = x1 - xp1
                e2 = x2 - xp2
                length = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
                least = _guard_motion(sh, approximate[k], abc[k, 0], abc[k, 1], abc[k, 2])
                if length > max(th + rad, least) and pen < length:
                    hit, pen_h, h0, h1, h2, htri, ha, hb, hc = _trace(
                        sh, approximate[k], abc[k, 0], abc[k, 1], abc[k, 2], R[k], t[k], s[k],
                        Rb[k], tb[k], th, rad, xp0, xp1, xp2, e0, e1, e2, length, x0, x1, x2,
                        xp0, xp1, xp2, k, mesh)
                    if hit and not (pen < 0 and n0 * h0 + n1 * h1 + n2 * h2 > 0):
                        pen = pen_h
                        n0 = h0
                        n1 = h1
                        n2 = h2
                if not pen < 0:
                    if first:
                        held[jj] = False
                    continue
                m0 = 0.0
                m1 = 0.0
                m2 = 0.0
            else:
                Rk, tk, sk, Rbk, tbk, sbk = R[k], t[k], s[k], Rb[k], tb[k], sb[k]
                if moving[k]:
                    p0, p1, p2 = _carried(Rk, tk, sk, Rbk, tbk, sbk, xp0, xp1, xp2)
                else:
                    p0 = xp0
                    p1 = xp1
                    p2 = xp2
                if sh == _MESH and mesh_far(x0, x1, x2, p0, p1, p2, p, k, th + rad, mesh):
                    continue
                a, bq, cq = abc[k, 0], abc[k, 1], abc[k, 2]
                phi, n0, n1, n2, tri, wa, wb, wc = _particle_distance(
                    sh, approximate[k], a, bq, cq, Rk, tk, sk, Rbk, tbk, x0, x1, x2, xp0, xp1,
                    xp2, k, mesh, p)
                pen = phi - th - rad
                if not (sh == _MESH and not mesh[14][k]):
                    e0 = x0 - p0
                    e1 = x1 - p1
                    e2 = x2 - p2
                    length = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
                    if length > max(th + rad, _guard_motion(sh, approximate[k], a, bq, cq)) \
                            and pen < length:
                        hit, pen_h, h0, h1, h2, htri, ha, hb, hc = _trace(
                            sh, approximate[k], a, bq, cq, Rk, tk, sk, Rbk, tbk, th, rad, p0,
                            p1, p2, e0, e1, e2, length, x0, x1, x2, xp0, xp1, xp2, k, mesh)
                        if hit and not (pen < 0 and n0 * h0 + n1 * h1 + n2 * h2 > 0):
                            pen = pen_h
                            n0 = h0
                            n1 = h1
                            n2 = h2
                            tri = htri
                            wa = ha
                            wb = hb
                            wc = hc
                if not pen < 0:
                    if first:
                        held[jj] = False
                    continue
                d = -pen
                m0, m1, m2 = _collider_motion(sh, Rk, tk, sk, Rbk, tbk, sbk, moving[k],
                                              x0 + n0 * d, x1 + n1 * d, x2 + n2 * d, tri,
                                              wa, wb, wc, mesh)
            d = -pen
            into = -((x0 - xp0 - m0) * n0 + (x1 - xp1 - m1) * n1 + (x2 - xp2 - m2) * n2)
            corr = min(d, max(into + allowance, 0.0))
            W = _resp(inv_mass[b], c[b, 0], c[b, 1], c[b, 2], Rm[b, 0, 0], Rm[b, 0, 1],
                      Rm[b, 0, 2], Rm[b, 1, 0], Rm[b, 1, 1], Rm[b, 1, 2], Rm[b, 2, 0],
                      Rm[b, 2, 1], Rm[b, 2, 2], inv_inertia[b, 0, 0], inv_inertia[b, 0, 1],
                      inv_inertia[b, 0, 2], inv_inertia[b, 1, 0], inv_inertia[b, 1, 1],
                      inv_inertia[b, 1, 2], inv_inertia[b, 2, 0], inv_inertia[b, 2, 1],
                      inv_inertia[b, 2, 2], x0, x1, x2, n0, n1, n2)
            lam = corr / W
            _impulse(b, x0, x1, x2, (n0 * lam) * 1.0, (n1 * lam) * 1.0, (n2 * lam) * 1.0, c,
                     Rm, inv_mass, inv_inertia, moved)
            depth[p] = depth[p] + lam
            saved[jj, 0] = n0
            saved[jj, 1] = n1
            saved[jj, 2] = n2
            saved[jj, 3] = m0
            saved[jj, 4] = m1
            saved[jj, 5] = m2
            saved[jj, 6] = into
            saved[jj, 7] = lam
            # a contact still pushed out of an overlap takes no friction (collision/rigid.py)
            acted[jj] = not corr < d
            touching[p] = True
            normal[p, 0] = n0
            normal[p, 1] = n1
            normal[p, 2] = n2
            motion[p, 0] = m0
            motion[p, 1] = m1
            motion[p, 2] = m2
            collider[p] = k
        gg = nxt


@njit(cache=True, fastmath=False, inline="always")
def _collider_friction(g, Xp, geo, state, bodies, held_state, resting):
    """_collider_pass's friction phase for body g's candidates that touched in its normal
    phase (rigid_colliders.friction_phase): from each point's motion relative to the collider after
    the normal impulses, or (a held anchor on a collider at rest) from its slip since it was
    anchored."""
    (cand_particle, cand_collider, shape, approximate, abc, thickness, radius, R, t, s, Rb, tb, sb,
     moving, mu_s, mu_k, friction) = geo
    (depth, used, touching, normal, motion, collider) = state
    (body, entry, rest, c, Rm, inv_mass, inv_inertia, moved, X0, clear, by_body, body_start,
     pclear, run_next) = bodies
    held, anchor, sums, saved, acted = held_state
    for g2 in range(body_start[g], body_start[g + 1]):
        jj = by_body[g2]
        if not acted[jj]:
            continue
        p = cand_particle[jj]
        k = cand_collider[jj]
        b = body[p]
        e = entry[p]
        n0 = saved[jj, 0]
        n1 = saved[jj, 1]
        n2 = saved[jj, 2]
        lam = saved[jj, 7]
        y0 = c[b, 0] + (Rm[b, 0, 0] * rest[e, 0] + Rm[b, 0, 1] * rest[e, 1]
                        + Rm[b, 0, 2] * rest[e, 2])
        y1 = c[b, 1] + (Rm[b, 1, 0] * rest[e, 0] + Rm[b, 1, 1] * rest[e, 1]
                        + Rm[b, 1, 2] * rest[e, 2])
        y2 = c[b, 2] + (Rm[b, 2, 0] * rest[e, 0] + Rm[b, 2, 1] * rest[e, 1]
                        + Rm[b, 2, 2] * rest[e, 2])
        r0 = y0 - Xp[0, p] - saved[jj, 3]
        r1 = y1 - Xp[1, p] - saved[jj, 4]
        r2 = y2 - Xp[2, p] - saved[jj, 5]
        # a held contact on a collider at rest: the slip since it was anchored
        still = shape[k] != _MESH and not moving[k]
        h = still and held[jj]
        if h:
            r0 = y0 - anchor[jj, 0]
            r1 = y1 - anchor[jj, 1]
            r2 = y2 - anchor[jj, 2]
        rn = r0 * n0 + r1 * n1 + r2 * n2
        t0 = r0 - n0 * rn
        t1 = r1 - n1 * rn
        t2 = r2 - n2 * rn
        tl = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
        dep = sums[jj, 0] + lam if h else depth[p]
        u = sums[jj, 1] if h else used[p]
        need = 0.0
        u0 = 0.0
        u1 = 0.0
        u2 = 0.0
        if tl > 1e-300:
            u0 = t0 / tl
            u1 = t1 / tl
            u2 = t2 / tl
            need = tl / _resp(inv_mass[b], c[b, 0], c[b, 1], c[b, 2], Rm[b, 0, 0],
                              Rm[b, 0, 1], Rm[b, 0, 2], Rm[b, 1, 0], Rm[b, 1, 1],
                              Rm[b, 1, 2], Rm[b, 2, 0], Rm[b, 2, 1], Rm[b, 2, 2],
                              inv_inertia[b, 0, 0], inv_inertia[b, 0, 1],
                              inv_inertia[b, 0, 2], inv_inertia[b, 1, 0],
                              inv_inertia[b, 1, 1], inv_inertia[b, 1, 2],
                              inv_inertia[b, 2, 0], inv_inertia[b, 2, 1],
                              inv_inertia[b, 2, 2], y0, y1, y2, u0, u1, u2)
        ms, mk = _combined_friction(mu_s[k], mu_k[k], friction[p])
        take, static = _coulomb(need, u, dep, ms, mk)
        if tl > 1e-300:
            _impulse(b, y0, y1, y2, (u0 * take) * -1.0, (u1 * take) * -1.0,
                     (u2 * take) * -1.0, c, Rm, inv_mass, inv_inertia, moved)
        used[p] = used[p] + take
        if still:
            # an anchor holds a resting contact only (collision/rigid.py)
            sums[jj, 0] = dep
            sums[jj, 1] = u + take
            static = static and saved[jj, 6] <= resting
            held[jj] = static
            if static and not h:
                for i in range(3):
                    anchor[jj, i] = c[b, i] + (Rm[b, i, 0] * rest[e, 0] + Rm[b, i, 1]
                                               * rest[e, 1] + Rm[b, i, 2] * rest[e, 2])


@njit(cache=True, parallel=prange_only(), fastmath=False)
def solve_rigid(X, Xp, particles, rest_offset, origin, rot, rigid, shape, approximate, abc,
                thickness, radius, R, t, s, Rb, tb, sb, moving, mu_s, mu_k, friction, mesh, depth,
                used, touching, normal, motion, collider, allowance, X0, clear):
    """Scalar mirror of collision/rigid.solve_rigid (the same arguments). Unlike it, it skips
    a collider candidate that is still clear of its collider: X0 (3, n) [m] the step's start,
    clear (Qc,) [m] each candidate's clearance there (compiled_candidates.candidate_clearance,
    as project_colliders uses it): a particle within that distance of X0, now and a substep
    ago, is outside the collider's offset surface on the whole segment between, so its
    contact, tunnelling guard included, changes nothing (the same bits as the NumPy kernel,
    which takes every candidate). At 100 ragdolls on the stairs: 6,700 candidates a step, most
    of them clear."""
    (body, entry, inv_mass, inv_inertia, bodies, entries, entry_body, moved, idx, kind,
     side, dist, mu, jit, part_start, cand_particle, cand_collider, cand_start, touch,
     passes) = (rigid[0], rigid[1], rigid[2], rigid[3], rigid[4], rigid[5], rigid[6],
                 rigid[9], rigid[10], rigid[11], rigid[12], rigid[13],
                 rigid[14], rigid[15], rigid[16], rigid[17], rigid[18], rigid[19], rigid[20],
                 rigid[21])
    if bodies.shape[0] == 0:
        return
    # the passes move the fit's poses in place (the NumPy kernel moves copies, rigid[7] and
    # rigid[8], and writes back the moved ones: the same values); a copy in and out was a
    # sixth of this solve at 100 ragdolls
    c = origin
    Rm = rot
    for m in range(bodies.shape[0]):
        moved[bodies[m]] = False
    # the collider pass's arguments, grouped in tuples: it is inlined, and a call with more than
    # 30 arguments is made with *args, which Numba cannot inline (nor pass it a tuple holding
    # a tuple: mesh)
    geo = (cand_particle, cand_collider, shape, approximate, abc, thickness, radius, R, t, s, Rb,
           tb, sb, moving, mu_s, mu_k, friction)
    state = (depth, used, touching, normal, motion, collider)
    body_args = (body, entry, rest_offset, c, Rm, inv_mass, inv_inertia, moved, X0, clear,
                 rigid[23], rigid[24], rigid[26], rigid[27])
    fric = (rigid[31], rigid[32], rigid[33], rigid[38], rigid[39])
    for p in range(passes):
        # every contact's normal impulse, then every contact's friction (collision/rigid.py)
        for phase in range(2):
            _body_pass(X, Xp, part_start, rigid[25], (p + phase) % 2 == 1, idx, kind, side,
                       dist, mu, jit, allowance, touch, body, entry, rest_offset, c, Rm,
                       inv_mass, inv_inertia, moved, p == 0, rigid[28], rigid[29], rigid[30],
                       rigid[34][0], phase, rigid[36], rigid[37])
            _collider_pass(X, Xp, geo, state, body_args, fric, mesh, allowance, p == 0, phase,
                           rigid[34][0])
    # the moved bodies' particles on their poses
    for m in range(entries.shape[0]):
        b = entry_body[m]
        if not moved[b]:
            continue
        e = entries[m]
        p = particles[e]
        for i in range(3):
            X[i, p] = c[b, i] + (Rm[b, i, 0] * rest_offset[e, 0] + Rm[b, i, 1] * rest_offset[e, 1]
                                 + Rm[b, i, 2] * rest_offset[e, 2])
