"""The kernel table: every kernel the step calls, by name, with one signature on both backends.

    kernels = table("numpy" | "numba")
    kernels.solve_sticks(X, ...)           # the same call whichever backend runs

The NumPy kernels are the readable reference and the fallback; each lives beside the physics it
implements (forces.py, integrator.py, sleep.py, constraints/*.py, collision/project.py,
collision/colliders.py, collision/edges.py, collision/contacts.py, collision/bodies.py,
collision/body_stage.py, collision/boxes.py, collision/pairs.py, collision/rigid.py,
collision/rigid_order.py, collision/mesh.py, collision/mesh_query.py, and the substep loop
itself in loop.py). The compiled kernels (compiled.py and the compiled_*.py it imports; Numba)
perform the same floating-point operations in the same order (and the sorts give the same
arrays), so the backends agree bit for bit (tests/solver/test_backends.py). Positions always
travel as (3, n) coordinate rows X [m]. Physics classes take a table and never ask which
backend it is. A new kernel is a NumPy function, its compiled mirror, its name in KERNELS, and
its call in the substep loop (loop.py and compiled_loop.py, fed by a group that
Simulation._loop_args builds from the family's solver class) or in the stage that calls it;
tests/solver/test_structure.py checks that both tables have the same names and parameters.
"""

from types import SimpleNamespace

KERNELS = ("apply_drag", "predict", "squared_motion", "surface_normals", "solve_sticks",
           "solve_soft_pins", "solve_volumes", "solve_shapes", "damp_shapes", "solve_joints",
           "project_collider", "project_points", "project_edges", "restitution",
           "release_overlap", "active_items", "edge_sag", "find_body_contacts", "filter_pairs",
           "store_pairs", "solve_bodies", "place_meshes", "mesh_distances", "refit_meshes",
           "mesh_normals", "primitive_candidates", "islands", "sweep_pairs", "body_frames",
           "solve_rigid", "rigid_velocities", "rigid_pair_velocities", "order_rigid",
           "sort_pairs", "gather_slots", "merge_round", "edge_spheres", "step_boxes", "strays",
           "run_substeps")


def _numpy_table():
    from ..collision.bodies import find_body_contacts, solve_bodies
    from ..collision.boxes import step_boxes, strays
    from ..collision.body_stage import active_items, edge_sag, sort_pairs, sweep_pairs
    from ..collision.contacts import gather_slots, merge_round
    from ..collision.pairs import filter_pairs, store_pairs
    from ..collision.colliders import primitive_candidates
    from ..collision.edges import edge_spheres, project_edges
    from ..collision.mesh import mesh_normals, refit_meshes
    from ..collision.mesh_query import mesh_distances, place_meshes
    from ..collision.project import project_collider, project_points, release_overlap, restitution
    from ..collision.impacts import rigid_pair_velocities, rigid_velocities
    from ..collision.rigid import solve_rigid
    from ..collision.rigid_order import order_rigid
    from ..constraints.joints import body_frames_of, solve_joints
    from ..constraints.pins import solve_soft_pins
    from ..constraints.shapes import damp_shapes, solve_shapes
    from ..constraints.sticks import solve_sticks
    from ..constraints.volume import solve_volumes
    from ..forces import apply_drag, surface_normals
    from ..integrator import predict, squared_motion
    from ..loop import run_substeps
    from ..sleep import islands
    return SimpleNamespace(backend="numpy", apply_drag=apply_drag, predict=predict,
                           squared_motion=squared_motion,
                           surface_normals=surface_normals,
                           solve_sticks=solve_sticks, solve_soft_pins=solve_soft_pins,
                           solve_volumes=solve_volumes, solve_shapes=solve_shapes,
                           damp_shapes=damp_shapes, solve_joints=solve_joints,
                           project_collider=project_collider,
                           project_points=project_points, project_edges=project_edges,
                           restitution=restitution,
                           release_overlap=release_overlap,
                           active_items=active_items, edge_sag=edge_sag,
                           find_body_contacts=find_body_contacts,
                           filter_pairs=filter_pairs, store_pairs=store_pairs,
                           solve_bodies=solve_bodies,
                           place_meshes=place_meshes, mesh_distances=mesh_distances,
                           refit_meshes=refit_meshes, mesh_normals=mesh_normals,
                           primitive_candidates=primitive_candidates, islands=islands,
                           sweep_pairs=sweep_pairs, body_frames=body_frames_of,
                           solve_rigid=solve_rigid, rigid_velocities=rigid_velocities,
                           rigid_pair_velocities=rigid_pair_velocities,
                           order_rigid=order_rigid, sort_pairs=sort_pairs,
                           gather_slots=gather_slots, merge_round=merge_round,
                           edge_spheres=edge_spheres, step_boxes=step_boxes, strays=strays,
                           run_substeps=run_substeps)


def table(backend):
    """The kernel table of ``backend`` ("numpy" or "numba"; backend.choose picks one)."""
    if backend == "numpy":
        return _numpy_table()
    if backend == "numba":
        from .. import backend as _backend
        module = _backend.numba_kernels()
        if module is None:
            raise ValueError(f"backend 'numba' is not available ({_backend.load_error()})")
        return SimpleNamespace(backend="numba", **{name: getattr(module, name) for name in KERNELS})
    raise ValueError(f"backend: expected 'numpy' or 'numba', got {backend!r}")
