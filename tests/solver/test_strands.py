"""Strands with bend and twist stiffness (issue 10, item 10; solver/strands.py): a tree made of
edges stands still, holds its branches' direction about the trunk, and sways back after a gust.
Before, a tree of edges with Jakobsen's support sticks sagged at full stiffness and its branch
swivelled about the trunk (the contrast runs here too). Runs on the backend VERLET_BACKEND
selects (scripts/test.sh runs both)."""

import numpy as np
import pytest

from solver import Builder, Simulation
from solver.geometry import strand_areas, strand_supports

DT = 1.0 / 24.0


def _tree():
    """A 1.4 m trunk of 7 edges with a 0.8 m branch of 4 edges leaving it at 1 m, slightly off
    the x-z plane; rooted by its two lowest vertices. (x (12, 3), edges (11, 2))."""
    trunk = np.column_stack([np.zeros(8), np.zeros(8), np.linspace(0.0, 1.4, 8)])
    branch = np.column_stack([np.linspace(0.2, 0.8, 4), np.full(4, 0.05),
                              1.0 + np.linspace(0.05, 0.2, 4)])
    edges = [(i, i + 1) for i in range(7)] + [(5, 8)] + [(8 + i, 9 + i) for i in range(3)]
    return np.vstack([trunk, branch]), np.array(edges)


def _simulate(joints, compliance, frames=72, kick=None, wind=None, damping=0.0, substeps=40):
    """The tree's vertex positions (frames + 1, 12, 3), built with joints (add_strands) or with
    support sticks; kick: (ids, velocities) given at the start; wind: (velocity, frames) on
    for the first frames."""
    x, e = _tree()
    b = Builder()
    area = strand_areas(x, e, 0.02)
    if joints:
        ids, _ = b.add_strands(x, e, mass=0.05, area=area, bend_compliance=compliance)
    else:
        ids = b.add_particles(x, mass=0.05, area=area)
        b.add_sticks(ids[e])
        b.add_sticks(ids[strand_supports(e)], compliance=compliance)
    b.pin(ids[:2])
    sim = Simulation(b.build(), damping=damping, substeps=substeps)
    if kick is not None:
        sim.set_velocities(ids[kick[0]], kick[1])
    out = [np.array(sim.x[ids])]
    for f in range(frames):
        if wind is not None:
            sim.set_wind(wind[0] if f < wind[1] else (0.0, 0.0, 0.0))
        sim.step(DT)
        out.append(np.array(sim.x[ids]))
    return np.array(out)


def _swivel(xs):
    """(frames,) angle [deg] of the branch tip about the trunk (Z) axis, from its start."""
    tip = xs[:, 11]
    return np.degrees(np.unwrap(np.arctan2(tip[:, 1], tip[:, 0]) - np.arctan2(tip[0, 1],
                                                                              tip[0, 0])))


def test_tree_stands_still_at_full_stiffness():
    """At full bend stiffness (compliance 0) and no wind, for 3 s: no vertex moves more than
    3 cm from where it was modelled (2.2 cm measured: one iteration per substep is not quite
    rigid), and the branch tip turns less than 1 degree about the trunk. Support sticks at the
    same stiffness let the trunk fold (> 1 m)."""
    xs = _simulate(True, 0.0)
    assert np.linalg.norm(xs - xs[0], axis=2).max() < 0.03
    assert np.abs(_swivel(xs)).max() < 1.0
    old = _simulate(False, 0.0)
    assert np.linalg.norm(old - old[0], axis=2).max() > 1.0


def test_twist_about_the_trunk_is_held():
    """The branch kicked sideways at 0.5 m/s about the trunk axis (a torque the trunk must
    resist in twist): it swings, then, with damping 0.9, is back within 1 degree of where it
    started after 3 s. Support sticks hold no twist: at the same stiffness the branch keeps
    turning (more than 10 degrees; 15.7 measured and still going)."""
    kick = (np.arange(8, 12), np.tile([0.0, 0.5, 0.0], (4, 1)))
    xs = _simulate(True, 0.0, kick=kick, damping=0.9)
    swivel = _swivel(xs)
    assert np.abs(swivel).max() > 1.0                  # the kick turned it
    assert abs(swivel[-1]) < 1.0
    old = _swivel(_simulate(False, 0.0, kick=kick, damping=0.9))
    assert np.abs(old).max() > 10.0


def test_tree_sways_back_after_a_gust():
    """Bend compliance 1e-4 m/N, a 12 m/s gust for 1 s then 3 s of still air (damping 0.9, 20
    substeps): the tree
    bends downwind (the branch tip by more than 2 cm; 5 cm measured) and then sways back to
    within 5 mm of where the same tree stands without the gust (1.3 mm measured)."""
    still = _simulate(True, 1e-4, frames=96, damping=0.9, substeps=20)
    gust = _simulate(True, 1e-4, frames=96, wind=((12.0, 6.0, 0.0), 24), damping=0.9,
                     substeps=20)
    assert np.linalg.norm(gust[:25, 11] - still[:25, 11], axis=1).max() > 0.02
    assert np.linalg.norm(gust[-1] - still[-1], axis=1).max() < 0.005


def test_strand_errors_name_the_cause():
    b = Builder()
    with pytest.raises(ValueError, match="edges: a strand needs edges"):
        b.add_strands(np.zeros((2, 3)), np.zeros((0, 2), np.int64))
    with pytest.raises(ValueError, match="vertices 0 and 1 of edge 0 coincide"):
        b.add_strands(np.zeros((2, 3)), [[0, 1]])
    with pytest.raises(ValueError, match="bend_compliance"):
        b.add_strands(np.eye(3), [[0, 1], [1, 2]], bend_compliance=-1.0)
    assert b._n == 0                                    # nothing half-added
