"""Collider Shape Auto (solver/geometry.primitive_shape): a flat mesh with faces is a plane, a
closed mesh laid out as one of Blender's solid primitives is read as that primitive, and an open
or otherwise shaped mesh is the mesh itself. (Read by its vertices alone, an open box was a
solid box, a pipe a solid cylinder and an edge-only circle a plane.)"""

import numpy as np
import pytest

from solver.geometry import primitive_shape
from solver.mesh import normalize_faces

CUBE = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
# outward quads of CUBE (vertex id = 4 x + 2 y + z over the signs)
CUBE_FACES = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
TOP = 3                        # the +z face (its corners all have z = +1)


def shape(x, faces):
    if not len(faces):                      # as Blender's loops give a mesh without polygons
        empty = np.zeros(0, np.int64)
        return primitive_shape(np.asarray(x, float), empty, empty, empty)
    corners, start, size = normalize_faces(faces, len(x))
    return primitive_shape(np.asarray(x, float), corners, start, size)


def cylinder(segments=16, radius=1.0, depth=2.0, caps=True):
    """Blender's cylinder primitive: a ring of side quads and two n-gon caps."""
    a = 2 * np.pi * np.arange(segments) / segments
    ring = np.column_stack([radius * np.cos(a), radius * np.sin(a)])
    x = np.vstack([np.column_stack([ring, np.full(segments, -depth / 2)]),
                   np.column_stack([ring, np.full(segments, depth / 2)])])
    i = np.arange(segments)
    j = (i + 1) % segments
    faces = np.stack([i, j, j + segments, i + segments], 1).tolist()
    if caps:
        faces += [list(i[::-1]), list(i + segments)]
    return x, faces


def uv_sphere(segments=16, rings=8, radius=1.0):
    """Blender's UV sphere: quads between rings and triangle fans at the poles."""
    th = np.pi * np.arange(1, rings) / rings
    ph = 2 * np.pi * np.arange(segments) / segments
    x = [[0.0, 0.0, radius]]
    for t in th:
        x += [[radius * np.sin(t) * np.cos(p), radius * np.sin(t) * np.sin(p),
               radius * np.cos(t)] for p in ph]
    x.append([0.0, 0.0, -radius])
    x = np.array(x)

    def v(r, s):
        return 1 + r * segments + s % segments
    faces = [[0, v(0, s), v(0, s + 1)] for s in range(segments)]
    for r in range(rings - 2):
        faces += [[v(r, s), v(r + 1, s), v(r + 1, s + 1), v(r, s + 1)] for s in range(segments)]
    faces += [[len(x) - 1, v(rings - 2, s + 1), v(rings - 2, s)] for s in range(segments)]
    return x, faces


def test_closed_primitives_are_read_as_themselves_under_any_scale():
    assert shape(CUBE, CUBE_FACES)[0] == "box"
    name, centre, size = shape(CUBE * [2.4, 0.1, 0.05] + [1.0, 2.0, 3.0], CUBE_FACES)
    assert name == "box" and np.allclose(centre, [1.0, 2.0, 3.0])
    assert np.allclose(size["size"], [4.8, 0.2, 0.1])
    name, _, size = shape(*cylinder(radius=0.02, depth=3.0))      # a pole, not a sphere
    assert name == "cylinder" and np.isclose(size["radius"], 0.02) and size["depth"] == 3.0
    assert shape(*cylinder(radius=1.0, depth=0.05))[0] == "cylinder"          # a flat disc
    name, _, size = shape(*uv_sphere(radius=0.5))
    assert name == "sphere" and np.isclose(size["radius"], 0.5)
    assert shape(*uv_sphere(segments=8, rings=4))[0] == "sphere"


def test_a_flat_mesh_with_faces_is_a_plane():
    u = np.linspace(-0.5, 0.5, 3)
    x = np.array([[a, b, 0.0] for b in u for a in u])
    faces = [[r * 3 + c, r * 3 + c + 1, r * 3 + c + 4, r * 3 + c + 3]
             for r in range(2) for c in range(2)]
    name, centre, _ = shape(x + [0.0, 0.0, 2.0], faces)
    assert name == "plane" and np.allclose(centre, [0.0, 0.0, 2.0])
    a = 2 * np.pi * np.arange(32) / 32
    assert shape(np.column_stack([np.cos(a), np.sin(a), np.zeros(32)]), [list(range(32))])[0] \
        == "plane"                                                     # a disc
    assert shape(x[:, [2, 0, 1]], faces)[0] == "mesh"                  # flat across local Z


def test_a_thin_closed_box_is_a_box_whichever_way_it_lies():
    """A 1 mm pane modelled as a closed box: a box, lying (not an infinite plane) or standing
    (not a mesh collider, which the guard's thin-plate tracing does not cover)."""
    for dims in ((2.0, 2.0, 0.001), (0.001, 2.0, 2.0), (2.0, 0.001, 2.0)):
        name, _, size = shape(CUBE * np.array(dims) / 2, CUBE_FACES)
        assert name == "box" and np.allclose(size["size"], dims), (dims, name)


@pytest.mark.parametrize("case", ["open top", "open side", "pipe", "edge-only circle",
                                  "no faces", "tetrahedron in a cube", "dented sphere"])
def test_open_flat_and_other_meshes_are_the_mesh_itself(case):
    """Each of these reads as a solid primitive or a plane by its vertices alone."""
    if case == "open top":
        x, faces = CUBE, [f for k, f in enumerate(CUBE_FACES) if k != TOP]
    elif case == "open side":
        x, faces = CUBE, CUBE_FACES[1:]
    elif case == "pipe":
        x, faces = cylinder(caps=False)
    elif case == "edge-only circle":
        a = 2 * np.pi * np.arange(32) / 32
        x, faces = np.column_stack([np.cos(a), np.sin(a), np.zeros(32)]), []
    elif case == "no faces":
        x, faces = CUBE, []
    elif case == "tetrahedron in a cube":
        # four alternate corners of a cube: each at a corner of its bounding box, and closed,
        # but a third of the box
        x = CUBE[[0, 3, 5, 6]]
        faces = [[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]]
    else:
        x, faces = uv_sphere()
        x = x.copy()
        x[20] *= 0.7
    assert shape(x, faces)[0] == "mesh"
