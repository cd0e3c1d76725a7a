"""The collider contacts of rigid bodies in the NumPy kernel (collision/rigid.py's
solve_rigid), in the two phases of each pass (collision/rigid.py, "Normal impulses first"): a
colour of candidates (particles of different bodies) against one collider at a time, as one
batch, first the normal impulses (normal_phase), then, once every contact of the pass has its
normal impulse, the friction of those that touched (friction_phase). The compiled mirror
is kernels/compiled_rigid.py's _collider_body and _collider_friction, body by body: the same
operations on each body, in the same order, so the same bits.

The contact is project.py's (signed distance, tunnelling guard, surface motion) at the
particle's place on its body (st, rigid._Solve: the poses while the solve runs); the impulses
and the friction rule are collision/rigid.py's.
"""

import numpy as np

from .frames import MESH
from .mesh_query import mesh_far
from .project import (_carried, _distance, _guard, _motion, _surface_motion, combined_friction,
                      coulomb)


def normal_phase(st, ids, k, shape, approximate, abc, thickness, radius, now, before, moving,
                 mesh, depth, touching, normal, motion, collider, allowance, cand, first, held,
                 saved, acted):
    """The normal impulses of one colour's candidates ids (m,) (particles of different
    bodies) against collider k, cand (m,) their indices; what the friction phase needs is left
    in saved (Qc, 8) and acted (Qc,) (RigidContacts.cand_saved, cand_acted)."""
    acted[cand] = False
    x = st.positions(ids)
    xp = st.before(ids)
    if shape == MESH and ids.size:
        if moving:
            p0, p1, p2 = _carried(now, before, xp[0], xp[1], xp[2])
        else:
            p0, p1, p2 = xp
        with np.errstate(over="ignore", invalid="ignore"):    # a runaway is the step's to report
            far = mesh_far(x[0], x[1], x[2], p0, p1, p2, ids, k, thickness + radius[ids], mesh)
        if far.any():
            keep = ~far
            ids = ids[keep]
            cand = cand[keep]
            x = [v[keep] for v in x]
            xp = [v[keep] for v in xp]
    if not ids.size:
        return
    phi, (n0, n1, n2), surf = _distance(shape, approximate, abc, now, before, k, mesh, x[0],
                                        x[1], x[2], xp[0], xp[1], xp[2])
    pen = phi - thickness - radius[ids]
    xc = np.column_stack(x)
    xpc = np.column_stack(xp)
    _guard(xc, xpc, ids, shape, approximate, abc, thickness, radius, now, before, moving, k,
           mesh, pen, n0, n1, n2, surf)
    hit = pen < 0
    if first:
        held[cand[~hit]] = False
    if not hit.any():
        return
    ids = ids[hit]
    cand = cand[hit]
    d = -pen[hit]
    n = [n0[hit], n1[hit], n2[hit]]
    x = [v[hit] for v in x]
    xp = [v[hit] for v in xp]
    mesh_motion = _surface_motion(now, before, surf, hit, mesh)
    if mesh_motion is not None:
        mo = list(mesh_motion)
    elif moving:
        mo = list(_motion(now, before, x[0] + n[0] * d, x[1] + n[1] * d, x[2] + n[2] * d))
    else:
        mo = [np.zeros_like(d)] * 3
    into = -((x[0] - xp[0] - mo[0]) * n[0] + (x[1] - xp[1] - mo[1]) * n[1]
             + (x[2] - xp[2] - mo[2]) * n[2])
    corr = np.minimum(d, np.maximum(into + allowance, 0.0))
    b = st.body[ids]
    W = st.response(b, x, n)
    lam = corr / W
    st.push(b, x, [n[i] * lam for i in range(3)], 1.0)
    depth[ids] = depth[ids] + lam
    saved[cand] = np.array((*n, *mo, into, lam)).T
    # a contact still pushed out of an overlap deeper than one substep's push takes no
    # friction (collision/rigid.py)
    acted[cand] = ~(corr < d)
    touching[ids] = True
    normal[ids] = np.array(n).T
    motion[ids] = np.array(mo).T
    collider[ids] = k


def friction_phase(st, ids, cand, shape, moving, mu_s, mu_k, friction, depth, used, held,
                   anchor, sums, resting, saved):
    """The friction of one colour's candidates cand (m,) against one collider, of particles
    ids (m,), whose normal impulses this pass applied (normal_phase's saved), from each
    point's motion over the substep relative to the collider surface, or (a held anchor) from
    its slip since it was anchored (collision/rigid.py)."""
    sv = saved[cand].T                  # (8, m): normal, collider motion, into, lambda
    n, mo, into, lam = list(sv[:3]), list(sv[3:6]), sv[6], sv[7]
    b = st.body[ids]
    y = st.positions(ids)
    xp = st.before(ids)
    r = [y[i] - xp[i] - mo[i] for i in range(3)]
    # a held contact on a collider at rest: the slip since it was anchored
    still = shape != MESH and not moving
    h = held[cand] if still else np.zeros(len(cand), bool)
    if h.any():
        for i in range(3):
            r[i] = np.where(h, y[i] - anchor[cand, i], r[i])
    rn = r[0] * n[0] + r[1] * n[1] + r[2] * n[2]
    tv = [r[i] - n[i] * rn for i in range(3)]
    tl = np.sqrt(tv[0] * tv[0] + tv[1] * tv[1] + tv[2] * tv[2])
    dep = np.where(h, sums[cand, 0] + lam, depth[ids])
    u = np.where(h, sums[cand, 1], used[ids])
    big = tl > 1e-300
    need = np.zeros_like(tl)
    dirn = [np.zeros_like(tl) for _ in range(3)]
    if big.any():
        f = np.nonzero(big)[0]
        for i in range(3):
            dirn[i][f] = tv[i][f] / tl[f]
        need[f] = tl[f] / st.response(b[f], [v[f] for v in y], [v[f] for v in dirn])
    mu_s, mu_k = combined_friction(mu_s, mu_k, friction[ids])
    take, static = coulomb(need, u, dep, mu_s, mu_k)
    if big.any():
        f = np.nonzero(big)[0]
        st.push(b[f], [v[f] for v in y], [dirn[i][f] * take[f] for i in range(3)], -1.0)
    used[ids] = used[ids] + take
    if still:
        # an anchor holds a resting contact only: one that arrives (an impact) or slides lets
        # go, and takes this substep's slip again
        sums[cand, 0] = dep
        sums[cand, 1] = u + take
        static = static & (into <= resting)
        held[cand] = static
        y = st.positions(ids)
        new = static & ~h
        for i in range(3):
            anchor[cand[new], i] = y[i][new]
