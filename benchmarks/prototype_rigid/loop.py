"""The product's compiled substep loop (solver/kernels/compiled_loop.py) with the prototype's
rigid-contact stage (rigid.py) spliced in: built from the loop's current source at import, so it
never goes stale; each edit is checked to apply. With mode 0 the spliced loop is the product's
(the crate pile gives the product's figures to the digit); with mode 1 the particle projections
of body contacts and colliders are skipped, the shape fit weighs plain masses (no contact
boost: the flags it reads are clear while it runs), and rigid.rigid_contacts solves the
contacts on the bodies right after it.

    patch(sim, mode=1, passes=2, reverse=True)    # sim.step then runs the prototype
"""

import os
import types

import numpy as np
from numba import njit  # noqa: F401  (the generated source's decorator)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _edit(src, old, new):
    if src.count(old) != 1:
        raise RuntimeError(
            "prototype loop: the product's loop changed, cannot splice at "
            f"{old!r}; the prototype runs against the solver it was measured on (commit "
            "da2f5d2: git worktree add /tmp/proto da2f5d2, and run it there); the product has "
            "since built it in (solver/collision/rigid.py)")
    return src.replace(old, new)


def _build():
    src = open(os.path.join(ROOT, "solver", "kernels", "compiled_loop.py")).read()
    src = _edit(src, "@njit(cache=True, fastmath=False)\ndef run_substeps",
                "@njit(cache=False, fastmath=False)\ndef run_substeps")
    src = _edit(src, "bodies, counts, scalars):",
                "bodies, counts, scalars, proto):\n"
                "    (qoff, Mb, I0inv, pb, bc, bR, plane_on, mode, passes, reverse) = proto")
    src = _edit(src, "            for _ in range(contact_iterations if any_bodies else 0):",
                "            for _ in range(contact_iterations if (any_bodies and mode == 0) "
                "else 0):")
    src = _edit(src, "            if by_particle.shape[0]:\n                project_colliders",
                "            if by_particle.shape[0] and mode != 1:\n"
                "                project_colliders")
    src = _edit(src, "                             m_body_boost, m_origin, m_rot, m_basis)\n",
                "                             m_body_boost, m_origin, m_rot, m_basis)\n"
                "            if mode >= 1:\n"
                "                rigid_contacts(X, Xp, m_particles, m_start, m_mass, qoff, Mb, "
                "I0inv, pb, m_rot, b_idx, b_kind, b_side, b_dist, b_mu, b_jit, allowance, "
                "c_thickness, radius, c_mu_s, touching, b_touch, bc, bR, plane_on, passes, "
                "reverse)\n")
    src = src.replace("from .", "from solver.kernels.")
    mod = types.ModuleType("prototype_rigid_loop")
    from rigid import rigid_contacts
    mod.__dict__["rigid_contacts"] = rigid_contacts
    exec(compile(src, "prototype_rigid_loop", "exec"), mod.__dict__)
    return mod.run_substeps


run_substeps = _build()


def body_arrays(sim):
    """Per rigid cluster: the rest offsets from its centre of mass (e, 3) [m], mass M (K,) [kg],
    inverse inertia in the build pose I0^-1 (K, 3, 3) [1/(kg m^2)], and each particle's body
    (n,) int64 (-1: no rigid body: a pinned or shared cluster's particles)."""
    sh = sim.shapes
    K = len(sh.start) - 1
    pb = np.full(sim.model.particle_count, -1, np.int64)
    qoff = np.empty((len(sh.particles), 3))
    M, I0inv = np.zeros(K), np.zeros((K, 3, 3))
    for k in range(K):                      # set-up only, once per simulation
        s = slice(sh.start[k], sh.start[k + 1])
        m, q = sh.mass[s], sh.rest_offset[s]
        q = q - (m[:, None] * q).sum(0) / m.sum()
        qoff[s], M[k] = q, m.sum()
        inertia = (m * (q * q).sum(1)).sum() * np.eye(3) - np.einsum("e,ei,ej->ij", m, q, q)
        I0inv[k] = np.linalg.inv(inertia)
        if not sh._loose[s].any():
            pb[sh.particles[s]] = k
    return qoff, M, I0inv, pb, K


def patch(sim, mode=1, passes=2, reverse=True):
    """Make sim.step run the spliced loop (mode 0: the product's contacts; 1: the prototype's)."""
    qoff, M, I0inv, pb, K = body_arrays(sim)
    proto = (qoff, M, I0inv, pb, np.zeros((K, 3)), np.zeros((K, 3, 3)),
             len(sim.model.collider_shape) > 0 and mode == 1, mode, passes, reverse)
    sim.kernels = _Table(sim.kernels, lambda *a: run_substeps(*a, proto))
    return sim


class _Table:
    """The simulation's kernel table with run_substeps replaced."""

    def __init__(self, table, run):
        self._table, self.run_substeps = table, run

    def __getattr__(self, name):
        return getattr(self._table, name)
