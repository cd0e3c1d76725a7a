"""The particles' boxes over a step and the rounds' stray test (collision/boxes.py, the kernel
table's step_boxes and strays), on both backends, against numbers worked out by hand: a
particle's box is its predicted sweep grown by its radius and a margin, a pinned particle's
sweeps to its target, a group's box holds its particles' boxes, a watched particle's centre box
is its box less its radius, and the stray test measures how far a particle ended outside it in
its tolerance.
"""

import numpy as np
import pytest

from solver import backend as _backend
from solver.kernels import table

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])

H, DT, SLACK, GROW = 0.001, 0.04, 1e-3, 0.1


def _scene():
    """Four particles in two groups: 0 moving at 2 m/s along x under gravity, 1 at rest, 2
    pinned and sent 0.3 m up, 3 moving at 1 m/s along -y; (x, xp, acc, pinned, target, radius,
    by_group, group_start, watched)."""
    x = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    xp = x - np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, -1.0, 0.0]]) * H
    acc = np.zeros((4, 3))
    acc[0, 2] = -10.0
    pinned = np.array([2], np.int64)
    target = np.array([[0.0, 2.0, 0.3]])
    radius = np.array([0.01, 0.02, 0.0, 0.005])
    group = np.array([0, 1, 0, 1])
    by_group = np.argsort(group, kind="stable")
    return (np.asfortranarray(x), np.asfortranarray(xp), acc, pinned, target, radius,
            by_group, np.array([0, 2], np.int64), np.array([0, 3], np.int64))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_box_is_the_predicted_sweep_grown_by_radius_and_margin(backend):
    x, xp, acc, pinned, target, radius, by_group, start, watched = _scene()
    lo, hi, reach, glo, ghi, wlo, whi = table(backend).step_boxes(
        x, xp, H, DT, acc, pinned, target, radius, SLACK, GROW, by_group, start, watched)
    # particle 0: from (0, 0, 1) to (0.08, 0, 1 - 0.008) (v dt = 0.08, a dt^2 / 2 = -0.008)
    m0 = SLACK + GROW * DT * 2.0
    g0 = 0.01 + m0
    assert lo[0] == pytest.approx([-g0, -g0, 0.992 - g0], abs=1e-12)
    assert hi[0] == pytest.approx([0.08 + g0, g0, 1.0 + g0], abs=1e-12)
    assert reach[0] == pytest.approx(np.hypot(0.08, 0.008) + m0, abs=1e-12)
    # particle 1 at rest: its radius and SLACK around it
    assert lo[1] == pytest.approx([1.0 - 0.021, -0.021, -0.021], abs=1e-12)
    assert reach[1] == pytest.approx(SLACK, abs=1e-15)
    # particle 2, pinned: to its target, whatever its velocity says
    assert lo[2] == pytest.approx([-SLACK, 2.0 - SLACK, -SLACK], abs=1e-12)
    assert hi[2] == pytest.approx([SLACK, 2.0 + SLACK, 0.3 + SLACK], abs=1e-12)
    assert reach[2] == pytest.approx(0.3 + SLACK, abs=1e-12)
    # particle 3: 1 m/s along -y, 4 cm in the step
    m3 = SLACK + GROW * DT * 1.0
    assert lo[3, 1] == pytest.approx(-0.04 - 0.005 - m3, abs=1e-12)
    assert hi[3, 1] == pytest.approx(0.005 + m3, abs=1e-12)
    # the groups' boxes: the union of their particles' (group 0: particles 0 and 2)
    assert np.array_equal(glo[0], np.minimum(lo[0], lo[2]))
    assert np.array_equal(ghi[0], np.maximum(hi[0], hi[2]))
    assert np.array_equal(glo[1], np.minimum(lo[1], lo[3]))
    assert np.array_equal(ghi[1], np.maximum(hi[1], hi[3]))
    # the watched particles' centre boxes: less their radii
    assert wlo[0] == pytest.approx(lo[0] + 0.01, abs=1e-15)
    assert whi[1] == pytest.approx(hi[3] - 0.005, abs=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_stray_test_measures_the_way_out_of_the_centre_box_in_tolerances(backend):
    kernels = table(backend)
    x, xp, acc, pinned, target, radius, by_group, start, watched = _scene()
    *_, wlo, whi = kernels.step_boxes(x, xp, H, DT, acc, pinned, target, radius, SLACK, GROW,
                                      by_group, start, watched)
    group = np.array([0, 1, 0, 1])
    tol2 = np.array([0.01, 0.005]) ** 2
    moved = x.copy()
    moved[0] = whi[0] + [0.006, 0.0, 0.008]         # 1 cm beyond its corner: one tolerance
    moved[3] = wlo[1] + [0.001, 0.001, 0.001]       # inside
    ratio, out = kernels.strays(moved, watched, wlo, whi, tol2, group, 0.5 ** 2, 2)
    assert ratio == pytest.approx(1.0, abs=1e-9)
    assert out.tolist() == [True, False]
    moved[0] = wlo[0] - [0.0, 0.004, 0.0]           # 0.4 tolerances below: within clean
    moved[3] = whi[1] + [0.0, 0.0, 0.003]           # 0.6 tolerances: beyond clean
    ratio, out = kernels.strays(moved, watched, wlo, whi, tol2, group, 0.5 ** 2, 2)
    assert ratio == pytest.approx(0.6, abs=1e-9)
    assert out.tolist() == [False, True]
    ratio, out = kernels.strays(x, watched, wlo, whi, tol2, group, 0.5 ** 2, 2)
    assert ratio == 0.0 and not out.any()
