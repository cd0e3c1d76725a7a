"""Bad inputs raise ValueError naming the argument; a blown-up step raises SolverError and rolls
the simulation back to the state before that step.

Every case checks the exception type and that its message starts with (or, for a few,
contains) the name of the offending argument. A failed Builder call must also leave the Builder
as it was: the model built afterwards is the same as if the call had never been made.
"""

import copy
import re

import numpy as np
import pytest

from solver import Builder, Simulation, SolverError

TET = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
SQUARE = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])


def builder():
    b = Builder()
    b.add_particles(TET)
    return b


def raises_naming(name, fn, *args, **kwargs):
    """fn(*args, **kwargs) raises ValueError whose message begins with '<name>:'."""
    with pytest.raises(ValueError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert re.match(rf"{re.escape(name)}\b", msg), f"message does not name {name!r}: {msg!r}"
    return msg


# ----------------------------------------------------------------------------- particles

@pytest.mark.parametrize("x", [np.zeros((3, 2)), np.zeros((2, 3, 1)), np.zeros(4), "abc",
                               [[0.0, np.nan, 0.0]], [[np.inf, 0.0, 0.0]]],
                         ids=["n2", "3d", "flat4", "str", "nan", "inf"])
def test_particles_bad_positions(x):
    raises_naming("x", Builder().add_particles, x)


@pytest.mark.parametrize("mass", [-1.0, 0.0, [1.0, 0.0, 1.0, 1.0], [1.0, -2.0, 1.0, 1.0],
                                  [1.0, 1.0], np.nan, np.inf, "heavy"],
                         ids=["neg", "zero", "one_zero", "one_neg", "short", "nan", "inf", "str"])
def test_particles_bad_mass(mass):
    raises_naming("mass", Builder().add_particles, TET, mass=mass)


def test_particles_bad_radius():
    raises_naming("radius", Builder().add_particles, TET, radius=-0.1)
    raises_naming("radius", Builder().add_particles, TET, radius=np.nan)


def test_failed_add_particles_leaves_builder_unchanged():
    """Was a bug: x was stored before mass was checked, so after a rejected call every later
    particle id pointed at the rejected positions."""
    b = Builder()
    raises_naming("mass", b.add_particles, TET + 10.0, mass=-1.0)
    raises_naming("radius", b.add_particles, TET + 20.0, radius=-1.0)
    ids = b.add_particles(TET)
    assert ids.tolist() == [0, 1, 2, 3]
    m = b.build()
    assert np.array_equal(m.particle_x0, TET)
    assert m.particle_mass.shape == (4,) and m.particle_radius.shape == (4,)


def test_nan_positions_elsewhere():
    raises_naming("x", Builder().add_cloth, np.where(SQUARE == 1.0, np.nan, SQUARE), [[0, 1, 2, 3]])
    raises_naming("corners", Builder().add_tetra_body, np.where(TET == 1.0, np.nan, TET),
                  np.zeros((1, 3)))
    raises_naming("points", Builder().add_tetra_body, TET, [[np.nan, 0.0, 0.0]])


# ----------------------------------------------------------------------------- ids

@pytest.mark.parametrize("pairs", [[[0, 4]], [[-1, 2]], [[0, 1, 2]], [[0, 1.5]],
                                   np.array([[0, np.nan]]), [[1, 1]]],
                         ids=["high", "negative", "three", "fraction", "nan", "self"])
def test_sticks_bad_pairs(pairs):
    raises_naming("pairs", builder().add_sticks, pairs)


@pytest.mark.parametrize("call", ["pin", "add_shape_match"])
def test_out_of_range_ids(call):
    raises_naming("ids", getattr(builder(), call), [0, 1, 4])
    raises_naming("ids", getattr(builder(), call), [-1, 1, 2])


def test_out_of_range_ids_in_simulation():
    b = builder()
    b.pin([0])
    sim = Simulation(b.build())
    raises_naming("ids", sim.set_pin_targets, [4], [[0.0, 0.0, 0.0]])
    raises_naming("ids", sim.set_velocities, [-1], [[0.0, 0.0, 0.0]])
    raises_naming("ids", sim.move_particles, [0, 9], np.zeros((2, 3)))
    raises_naming("k", sim.set_collider_matrix, 0, np.eye(4))       # there is no collider 0
    raises_naming("faces", builder().add_volume, [[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 7]])


# ----------------------------------------------------------------------------- sticks

def test_zero_rest_length_coincident_particles():
    b = Builder()
    b.add_particles([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    msg = raises_naming("rest_length", b.add_sticks, [[0, 2], [1, 0]])
    assert "particles 1 and 0" in msg
    raises_naming("rest_length", builder().add_sticks, [[0, 1]], rest_length=0.0)
    raises_naming("rest_length", builder().add_sticks, [[0, 1]], rest_length=-1.0)
    raises_naming("rest_length", builder().add_sticks, [[0, 1]], rest_length=np.nan)
    raises_naming("rest_length", builder().add_sticks, [[0, 1], [1, 2]], rest_length=[1.0])


@pytest.mark.parametrize("kind", ["rope", "EQUAL", None, 1, ["min"]])
def test_unknown_stick_kind(kind):
    raises_naming("kind", builder().add_sticks, [[0, 1]], kind=kind)


def test_bad_compliance():
    raises_naming("compliance", builder().add_sticks, [[0, 1]], compliance=-1e-3)
    raises_naming("compliance", builder().add_sticks, [[0, 1]], compliance=np.nan)
    raises_naming("compliance", builder().add_sticks, [[0, 1], [1, 2]], compliance=[0.0, 0.0, 0.0])


# ----------------------------------------------------------------------------- faces

@pytest.mark.parametrize("faces,what", [
    ([[0, 1, 1, 2]], "same vertex twice"),                 # repeated vertex
    ([[0, 1, 2, 0]], "same vertex twice"),
    ([[0, 1], [1, 2, 3]], "corners"),                      # fewer than 3 corners
    ([[0, 1, 2], [3]], "corners"),
    ([[0, 1, 4]], "out of range"),
    ([[0, -1, 2]], "out of range"),
    ([], "no faces"),
    (np.array([[0, 1, 2.5]]), "integers"),
], ids=["repeat", "repeat_first_last", "two_corners", "one_corner", "high", "negative", "empty",
        "fraction"])
def test_degenerate_faces(faces, what):
    msg = raises_naming("faces", Builder().add_cloth, SQUARE, faces)
    assert what in msg


def test_zero_area_faces():
    line = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    assert "zero area" in raises_naming("faces", Builder().add_cloth, line, [[0, 1, 2]])
    # a bow-tie quad whose two halves cancel: Newell area 0
    bowtie = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert "zero area" in raises_naming("faces", Builder().add_cloth, bowtie, [[0, 1, 2, 3]])
    # the second face of an otherwise fine mesh
    x = np.vstack([SQUARE, [[2.0, 0.0, 0.0]]])                # 0, 1, 4 are collinear
    assert "face 1" in raises_naming("faces", Builder().add_cloth, x, [[0, 1, 2, 3], [0, 1, 4]])


def test_cloth_coincident_vertices_name_x_and_leave_builder_unchanged():
    """Was a bug: the error came from add_sticks after the particles were added, naming
    rest_length (not an argument of add_cloth) and leaving the particles in the Builder."""
    b = builder()
    x = SQUARE.copy()
    x[3] = x[2]                                              # quad 0-1-2-3 with 2 == 3
    msg = raises_naming("x", b.add_cloth, x, [[0, 1, 2, 3]])
    assert "2 and 3" in msg
    raises_naming("stretch_compliance", b.add_cloth, SQUARE, [[0, 1, 2, 3]], stretch_compliance=-1)
    raises_naming("shear_compliance", b.add_cloth, SQUARE, [[0, 1, 2, 3]], shear_compliance=np.nan)
    raises_naming("mass", b.add_cloth, SQUARE, [[0, 1, 2, 3]], mass=-1.0)
    raises_naming("density", b.add_cloth, SQUARE, [[0, 1, 2, 3]], density=0.0)
    m = b.build()
    assert m.particle_count == 4 and m.stick_count == 0


# ----------------------------------------------------------------------------- colliders

@pytest.mark.parametrize("shape", ["cone", "Sphere", "", None, 3, ["box"]])
def test_unknown_collider_shape(shape):
    raises_naming("shape", builder().add_collider, shape)


@pytest.mark.parametrize("shape,kw,name", [
    ("sphere", {"radius": 0.0}, "radius"),
    ("sphere", {"radius": -1.0}, "radius"),
    ("sphere", {"radius": np.nan}, "radius"),
    ("cylinder", {"radius": np.inf}, "radius"),
    ("capsule", {"radius": "big"}, "radius"),
    ("cylinder", {"depth": 0.0}, "depth"),
    ("cylinder", {"depth": -2.0}, "depth"),
    ("capsule", {"depth": np.nan}, "depth"),
    ("capsule", {"radius": 1.0, "depth": 1.5}, "depth"),     # shorter than its two caps
    ("box", {"size": (1.0, 0.0, 1.0)}, "size"),
    ("box", {"size": (1.0, -1.0, 1.0)}, "size"),
    ("box", {"size": (1.0, np.nan, 1.0)}, "size"),
    ("box", {"size": (1.0, 1.0)}, "size"),
    ("box", {"size": 2.0}, "size"),
    ("plane", {"friction": -0.1}, "friction"),
    ("plane", {"friction": 0.5, "static_friction": 0.2}, "static_friction"),
    ("plane", {"restitution": 1.5}, "restitution"),
    ("plane", {"thickness": -0.01}, "thickness"),
    ("plane", {"thickness": np.nan}, "thickness"),
])
def test_bad_collider_sizes(shape, kw, name):
    raises_naming(name, builder().add_collider, shape, **kw)


def _mat(**kw):
    m = np.eye(4)
    for key, (i, j, v) in kw.items():
        m[i, j] = v
    return m


BAD_MATRICES = {
    "nan": _mat(a=(0, 3, np.nan)),
    "inf": _mat(a=(1, 1, np.inf)),
    "zero_scale_x": np.diag([0.0, 1.0, 1.0, 1.0]),
    "zero_scale_z": np.diag([2.0, 1.0, 1e-12, 1.0]),
    "all_zero": np.zeros((4, 4)),
    "parallel_axes": np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0],
                               [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]),
    "transposed": _mat(a=(3, 0, 1.0), b=(3, 1, 2.0), c=(3, 2, 3.0)),   # translation in row 3
    "projective": _mat(a=(3, 3, 2.0)),
    "3x3": np.eye(3),
    "4x3": np.eye(4)[:, :3],
    "text": "identity",
}


@pytest.mark.parametrize("case", list(BAD_MATRICES))
def test_bad_collider_matrices(case):
    """Rejected by add_collider and by Simulation.set_collider_matrix alike. Before the sdf.py
    fix parallel_axes, transposed and projective were accepted (parallel axes silently became
    another shape, a transposed matrix lost its translation) and text raised numpy's message."""
    bad = BAD_MATRICES[case]
    raises_naming("matrix", builder().add_collider, "box", matrix=bad)
    b = builder()
    b.add_collider("sphere")
    sim = Simulation(b.build())
    raises_naming("matrix", sim.set_collider_matrix, 0, bad)
    sim.step(1 / 24)                          # the rejected matrix left the collider alone
    assert np.all(np.isfinite(sim.x))


# ----------------------------------------------------------------------------- other Builder calls

def test_other_builder_arguments():
    raises_naming("stiffness", builder().add_shape_match, [0, 1, 2], stiffness=0.0)
    raises_naming("stiffness", builder().add_shape_match, [0, 1, 2], stiffness=1.5)
    raises_naming("ids", builder().add_shape_match, [0, 0, 1])
    raises_naming("ids", builder().add_shape_match, [0])
    raises_naming("corners", Builder().add_tetra_body, SQUARE, np.zeros((1, 3)))   # flat
    raises_naming("corners", Builder().add_tetra_body, TET[:3], np.zeros((1, 3)))
    raises_naming("mass", Builder().add_tetra_body, TET, np.zeros((1, 3)), mass=0.0)
    raises_naming("pressure", builder().add_volume, [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
                  pressure=0.0)
    raises_naming("faces", builder().add_volume, [[0, 2, 1], [0, 1, 3], [0, 3, 2]])      # open
    raises_naming("build", Builder().build)


# ----------------------------------------------------------------------------- Simulation

@pytest.fixture(scope="module")
def model():
    b = builder()
    b.pin([0])
    b.add_sticks([[0, 1], [1, 2], [2, 3]])
    return b.build()


@pytest.mark.parametrize("kw,name", [
    ({"substeps": 0}, "substeps"),
    ({"substeps": -3}, "substeps"),
    ({"substeps": 2.5}, "substeps"),
    ({"substeps": True}, "substeps"),
    ({"iterations": 0}, "iterations"),
    ({"damping": -0.1}, "damping"),
    ({"damping": 1.5}, "damping"),
    ({"damping": np.nan}, "damping"),
    ({"gravity": (0.0, np.nan, 0.0)}, "gravity"),
    ({"gravity": (0.0, -9.81)}, "gravity"),
    ({"over_relaxation": 0.0}, "over_relaxation"),
    ({"max_speed": -1.0}, "max_speed"),
    ({"max_speed": [1.0, 1.0]}, "max_speed"),
    ({"air_drag": -1.0}, "air_drag"),
])
def test_bad_simulation_arguments(model, kw, name):
    raises_naming(name, Simulation, model, **kw)


@pytest.mark.parametrize("dt", [0.0, -1 / 24, np.nan, np.inf, -np.inf, "fast", None])
def test_bad_dt(model, dt):
    sim = Simulation(model, substeps=2)
    before = sim.get_state()
    raises_naming("dt", sim.step, dt)
    assert np.array_equal(sim.x, before.state.x) and sim.get_state().state.step_index == 0


def test_pin_target_errors(model):
    sim = Simulation(model, substeps=2)
    msg = raises_naming("ids", sim.set_pin_targets, [1], [[0.0, 0.0, 1.0]])
    assert "not pinned" in msg and "1" in msg
    raises_naming("ids", sim.set_pin_targets, [0, 2], [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    raises_naming("positions", sim.set_pin_targets, [0], [[0.0, np.nan, 1.0]])
    raises_naming("positions", sim.set_pin_targets, [0], [[np.inf, 0.0, 1.0]])
    raises_naming("positions", sim.set_pin_targets, [0], [[0.0, 1.0]])
    raises_naming("positions", sim.set_pin_targets, [0], np.zeros((2, 3)))
    # nothing was stored by the rejected calls: the pinned particle stays where it was
    sim.step(1 / 24)
    assert np.array_equal(sim.x[0], model.particle_x0[0])


def test_other_simulation_arguments(model):
    sim = Simulation(model)
    raises_naming("velocities", sim.set_velocities, [1], [[np.nan, 0.0, 0.0]])
    raises_naming("positions", sim.move_particles, [1], [[0.0, 0.0, np.inf]])
    raises_naming("centre", sim.explode, (0.0, np.nan, 0.0), 1.0)
    raises_naming("strength", sim.explode, (0.0, 0.0, 0.0), np.nan)
    raises_naming("velocity", sim.set_wind, (np.nan, 0.0, 0.0))
    raises_naming("turbulence", sim.set_wind, (1.0, 0.0, 0.0), turbulence=-1.0)
    raises_naming("state", sim.set_state, {"x": np.zeros((2, 3)), "x_prev": np.zeros((2, 3))})


# ----------------------------------------------------------------------------- SolverError


def blowup_scene():
    """A free particle (0), a stick 1-2, a free particle (3), a ground plane."""
    b = Builder()
    b.add_particles(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [2.0, 0.0, 1.0], [3.0, 0.0, 1.0]]))
    b.add_sticks([[1, 2]])
    b.add_collider("plane", matrix=_mat(z=(2, 3, -0.5)))
    return b.build()


def test_solver_error_rolls_back():
    """A legitimate velocity of 1e200 m/s on particle 2 overflows its stick to NaN within the
    first substep. SolverError names step 3, particle 1 (the first non-finite one: the stick's
    NaN reaches particle 1 first) and the stick; the state is the one before the step, bit for
    bit, and the simulation goes on from it exactly like one that never failed."""
    model = blowup_scene()
    sim = Simulation(model, substeps=4)
    ref = Simulation(model, substeps=4)
    for _ in range(3):
        sim.step(1 / 24)
        ref.step(1 / 24)
    sim.set_velocities([2], [[1e200, 0.0, 0.0]])
    before = copy.deepcopy(sim.get_state())
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(SolverError) as info:
            sim.step(1 / 24)
    e = info.value
    assert e.step == 3
    assert e.particle == 1
    assert "stick 0" in e.constraint and "particles 1-2" in e.constraint
    assert "particle 1 " in str(e) and "step 3" in str(e) and e.constraint in str(e)
    after, before = sim.get_state().to_arrays(), before.to_arrays()
    assert set(after) == set(before)
    for key in before:
        assert np.array_equal(after[key], before[key], equal_nan=True), key
    assert np.array_equal(sim.x, before["state.X"].T)
    assert after["state.step_index"] == 3
    assert after["state.time"] == before["state.time"] and after["state.h"] == before["state.h"]
    assert np.all(np.isfinite(sim.x))
    # it fails again the same way (nothing was half-applied) ...
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(SolverError) as again:
            sim.step(1 / 24)
    assert (again.value.step, again.value.particle) == (3, 1)
    # ... and once the bad velocity is replaced it continues exactly as if it never failed
    v = ref.v[2].copy()
    sim.set_velocities([2], [v])
    ref.set_velocities([2], [v])
    for _ in range(5):
        sim.step(1 / 24)
        ref.step(1 / 24)
    assert np.array_equal(sim.x, ref.x)
    assert np.array_equal(sim.v, ref.v)


@pytest.mark.parametrize("failure", ["non-finite", "runaway"])
def test_solver_error_rolls_back_what_the_step_moved_and_keeps_what_the_user_set(failure):
    """The step's backup copies only what a step itself writes (Control.step_copy): the
    colliders' placements, the soft pins' anchors, a mesh's vertices. A step that fails after
    the user moved a collider, a soft pin's target and a mesh's vertices, and changed a stick's
    compliance, leaves all of them as the user set them (the targets not yet reached), fails
    the same way again from there, and then goes on exactly like a simulation that was given
    the same commands and never failed. Both failures: a position that leaves the finite
    numbers inside the substeps, and a runaway found after them, once the step has already
    moved the placements, anchors and vertices to their targets."""
    b = Builder()
    b.add_particles(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [2.0, 0.0, 1.0], [3.0, 0.0, 1.0],
                              [5.0, 0.0, 1.0]]))
    b.add_sticks([[1, 2]])
    b.pin([4], compliance=1e-4)
    b.add_collider("plane", matrix=_mat(z=(2, 3, -0.5)))
    b.add_collider("mesh", matrix=_mat(x=(0, 3, 20.0)),          # a tetrahedron far away
                   vertices=[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
                   triangles=[[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    model = b.build()
    sim, ref = Simulation(model, substeps=4), Simulation(model, substeps=4)

    def command(s):
        s.set_collider_matrix(0, _mat(z=(2, 3, -0.4)))
        s.set_pin_targets([4], [[5.0, 0.2, 1.0]])
        s.set_collider_vertices(1, [[0, 0, 0], [1.2, 0, 0], [0, 1, 0], [0, 0, 1]])
        s.set_stick_compliance([1, 2], 1e-6)
    for _ in range(3):
        sim.step(1 / 24)
        ref.step(1 / 24)
    command(sim)
    command(ref)
    if failure == "non-finite":
        sim.set_velocities([2], [[1e200, 0.0, 0.0]])
    else:           # every substep keeps 1000 times the velocity: finite, far beyond any limit
        real = sim._loop_args

        def pumped(*args, **kwargs):
            groups = real(*args, **kwargs)
            a_h2, keep, lim = groups[1]
            return (groups[0], (a_h2, keep * 1e3, lim)) + groups[2:]
        sim._loop_args = pumped
    before = copy.deepcopy(sim.get_state()).to_arrays()
    for _ in range(2):                           # the second failure starts from the restore
        with np.errstate(over="ignore", invalid="ignore"):
            with pytest.raises(SolverError, match="left the finite" if failure == "non-finite"
                               else "running away"):
                sim.step(1 / 24)
        after = sim.get_state().to_arrays()
        assert set(after) == set(before)
        for key in before:
            assert np.array_equal(after[key], before[key], equal_nan=True), key
    # the user's commands are pending, not reached: the collider has not moved yet
    assert not np.array_equal(before["control.collider_frame.translation"],
                              before["control.collider_target.translation"])
    if failure == "non-finite":
        sim.set_velocities([2], [ref.v[2]])
        ref.set_velocities([2], [ref.v[2].copy()])
    else:
        del sim._loop_args
    for _ in range(5):
        sim.step(1 / 24)
        ref.step(1 / 24)
    assert np.array_equal(sim.x, ref.x)
    assert np.array_equal(sim.get_state().control.mesh_vertices,
                          ref.get_state().control.mesh_vertices)


def test_solver_error_from_explosion():
    """A huge (finite) explosion: the kick is finite, the step is not. Every free particle is
    kicked, so the first non-finite one is the lowest-numbered particle on the stick (1); the
    free particle 0 flies off to ~1e299 m but stays finite."""
    model = blowup_scene()
    sim = Simulation(model, substeps=2)
    sim.step(1 / 24)
    sim.explode((1.5, 0.0, 1.0), 1e300)
    before = copy.deepcopy(sim.get_state())
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(SolverError) as info:
            sim.step(1 / 24)
    assert (info.value.step, info.value.particle) == (1, 1)
    assert "stick 0" in info.value.constraint
    assert "particle 1 " in str(info.value)
    assert np.array_equal(sim.x, before.state.x)
    assert np.array_equal(sim.get_state().state.x_prev, before.state.x_prev)


def test_solver_error_names_a_free_particle():
    """A particle with nothing acting on it that overflows by itself (1e308 m/s for a second)."""
    model = blowup_scene()
    sim = Simulation(model, substeps=1)
    sim.set_velocities([3], [[1e308, 0.0, 0.0]])
    sim.step(0.5)                                   # 5e307 m: still finite
    assert np.all(np.isfinite(sim.x))
    x_ok = sim.x.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(SolverError) as info:
            for _ in range(3):
                sim.step(0.5)
    assert info.value.particle == 3 and info.value.step >= 1
    assert "free particle" in info.value.constraint
    assert np.all(np.isfinite(sim.x)) and sim.x[3, 0] >= x_ok[3, 0] >= 5e307
