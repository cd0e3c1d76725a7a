"""Joint passes stop island by island (solver/constraints/joints.py, PASSES and TOLERANCE; the
compiled mirror kernels/compiled_joints.py): a ragdoll's joints are solved until they meet the
tolerance, however many passes another, unconnected ragdoll needs.

The check is exact: a ragdoll falling alone and the same ragdoll falling beside a far-away one
that is thrown around (random particle velocities, so its joints need many passes every
iteration) move bit for bit the same. With one convergence test over all joints the quiet
ragdoll got the other's extra passes and moved differently.
"""

import os
import sys

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend
from solver.constraints.joints import JointSolver

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ragdolls  # noqa: E402

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _run(with_other, backend, steps=6):
    b = Builder()
    ragdolls.add_ragdoll(b, np.array([0.0, 0.0, 0.0]), tilt=0.4)
    if with_other:
        ragdolls.add_ragdoll(b, np.array([0.0, 20.0, 0.0]), tilt=0.4)
    model = b.build()
    sim = Simulation(model, substeps=10, backend=backend)
    quiet = 128                        # the first ragdoll's particles
    v = np.zeros((model.particle_count, 3))
    x = np.array(sim.x[:quiet])
    v[:quiet] = np.cross((0.0, 0.4, 0.2), x - x.mean(axis=0))     # a slow turn: small violations
    if with_other:
        v[quiet:] = np.random.default_rng(5).normal(0.0, 4.0, (model.particle_count - quiet, 3))
    sim.set_velocities(np.arange(model.particle_count), v)
    for _ in range(steps):
        sim.step(1 / 24)
    assert model.particle_count == quiet * (2 if with_other else 1)
    return np.array(sim.x[:quiet]), sim


def test_a_ragdoll_does_not_pay_for_another_ragdolls_passes(backend):
    alone, _ = _run(False, backend)
    beside, sim = _run(True, backend)
    assert np.array_equal(alone, beside)
    gap, exc = sim.joint_error()
    assert gap.max() < 2e-3                # both still hold together


def test_joint_islands_follow_free_bodies():
    b = Builder()
    _, p = b.add_capsule_body((0, 0, 1), (0, 0, 1.3), 0.05)
    _, q = b.add_capsule_body((0, 0, 1.3), (0, 0, 1.6), 0.05)
    ids, r = b.add_capsule_body((1, 0, 1), (1, 0, 1.3), 0.05)
    _, s = b.add_capsule_body((1, 0, 1.3), (1, 0, 1.6), 0.05)
    _, t = b.add_capsule_body((2, 0, 1.3), (2, 0, 1.6), 0.05)
    b.pin(ids)                             # r is kinematic: it joins nothing
    b.add_joint(p, q, (0, 0, 1.3))
    b.add_joint(q, None, (0, 0, 1.6))
    b.add_joint(r, s, (1, 0, 1.3))
    b.add_joint(r, t, (1.5, 0, 1.3))
    isl = JointSolver(b.build()).island
    assert isl[0] == isl[1] and len({isl[0], isl[2], isl[3]}) == 3
