"""The Model: every array the step reads, fixed at build time (structure of arrays).

A Model is made by ``Builder.build()`` and never changes while a Simulation runs; what changes
(positions, collider placement, pin targets) lives in the Simulation's state. Shapes use
n = particles, s = soft pins, m = sticks, S / G / T / R = stick batches / groups / tasks /
ranges, K = shape-matching clusters, e = cluster entries,
V = volumes, T = volume triangles, B = tetrahedral bodies, P = embedded points, C = colliders,
F = surface triangles, G = collision groups. Units: metres, kilograms, seconds.
"""

from dataclasses import dataclass, field, fields

import numpy as np

STICK_EQUAL, STICK_MIN, STICK_MAX = 0, 1, 2
STICK_KINDS = {"equal": STICK_EQUAL, "min": STICK_MIN, "max": STICK_MAX}
# where a stick came from, for messages and Simulation.set_stick_compliance: index into
# STICK_SOURCES ("bend support": the sticks across a vertex that give plants and strands their
# bend stiffness, Builder.add_sticks(source=...))
STICK_SOURCES = ("stick", "cloth stretch", "cloth shear", "cloth bend", "tetrahedron edge",
                 "bend support")


@dataclass
class Model:
    # --- particles
    particle_x0: np.ndarray          # (n, 3) float64 [m] positions at build time
    particle_mass: np.ndarray        # (n,) float64 [kg] mass as given (kept for pinned particles)
    particle_inv_mass: np.ndarray    # (n,) float64 [1/kg] 0 = pinned (infinite mass)
    particle_radius: np.ndarray      # (n,) float64 [m] contact radius (0 = a point)
    particle_area: np.ndarray        # (n,) float64 [m^2] share of surface area (aerodynamics)
    # (n,) int64 island of each particle: the connected components of the constraint graph
    # (sticks, shape clusters, volumes, tetrahedral bodies), 0..I-1 (sleep.py)
    particle_island: np.ndarray

    # --- soft pins (constraints/pins.py): particles held to targets with finite stiffness
    soft_pin_particles: np.ndarray   # (s,) int64 particle ids (unique; never hard-pinned)
    soft_pin_compliance: np.ndarray  # (s,) float64 [m/N] XPBD compliance at build, 0 = rigid

    # --- sticks: every distance constraint (user sticks, cloth stretch/shear/bend, tetra edges),
    # in the order of their partition (constraints/partition.py): batch s (one colour of the
    # blocks of one group; no two sticks share a particle) is rows
    # stick_batch_offsets[s]:stick_batch_offsets[s + 1]
    stick_particles: np.ndarray      # (m, 2) int64 particle ids
    stick_rest_length: np.ndarray    # (m,) float64 [m] > 0
    stick_compliance: np.ndarray     # (m,) float64 [m/N] XPBD compliance, 0 = rigid
    stick_kind: np.ndarray           # (m,) int8 STICK_EQUAL | STICK_MIN | STICK_MAX
    stick_source: np.ndarray         # (m,) int8 index into STICK_SOURCES
    stick_batch_offsets: np.ndarray  # (S + 1,) int64 batches, relaxed in this order
    stick_group_task_start: np.ndarray  # (G + 1,) int64 tasks of group g (run in parallel)
    stick_task_range_start: np.ndarray  # (T + 1,) int64 ranges of task t (one thread, in order)
    stick_range_lo: np.ndarray       # (R,) int64 first stick of each range
    stick_range_hi: np.ndarray       # (R,) int64 one past its last stick

    # --- shape matching (Mueller et al. 2005): entries sorted by cluster, clusters by colour
    shape_particles: np.ndarray      # (e,) int64 particle id of each entry
    shape_cluster: np.ndarray        # (e,) int64 cluster of each entry
    shape_rest_offset: np.ndarray    # (e, 3) float64 [m] rest position minus the rest centre of mass
    shape_cluster_start: np.ndarray  # (K + 1,) int64 entries of cluster k: start[k]:start[k+1]
    shape_compliance: np.ndarray     # (K,) float64 [m/N] goal compliance, 0 = rigid
    shape_damping: np.ndarray        # (K,) float64 [1/s] fraction of deformation velocity removed per s
    shape_color_offsets: np.ndarray  # (colours + 1,) int64 clusters of colour j

    # --- volume (CS 426 blob / pressure): one constraint per closed surface
    volume_tris: np.ndarray          # (T, 3) int64 particle ids, outward winding
    volume_tri_start: np.ndarray     # (V + 1,) int64 triangles of volume k
    volume_rest: np.ndarray          # (V,) float64 [m^3] target volume (rest volume x pressure)
    volume_compliance: np.ndarray    # (V,) float64 [m^3/N ... ] XPBD compliance, 0 = incompressible

    # --- Jakobsen's tetrahedral rigid bodies with embedded points
    tetra_particles: np.ndarray      # (B, 4) int64 particle ids of each body's tetrahedron
    tetra_point_body: np.ndarray     # (P,) int64 body of each embedded point
    tetra_point_weight: np.ndarray   # (P, 4) float64 barycentric weights c1..c4 (sum to 1)
    tetra_point_start: np.ndarray    # (B + 1,) int64 points of body b: start[b]:start[b+1]

    # --- colliders
    collider_shape: np.ndarray       # (C,) int64 sdf.PLANE..sdf.CAPSULE
    collider_dims: np.ndarray        # (C, 3) float64 [m] (radius, depth, 0) or box full extents
    collider_matrix: np.ndarray      # (C, 4, 4) float64 initial world matrices
    collider_friction: np.ndarray    # (C,) float64 kinetic Coulomb coefficient
    collider_static_friction: np.ndarray  # (C,) float64 static coefficient (>= kinetic)
    collider_restitution: np.ndarray  # (C,) float64 in [0, 1]
    collider_thickness: np.ndarray   # (C,) float64 [m] surface offset

    # --- surfaces (for aerodynamic area and normals)
    surface_tris: np.ndarray         # (F, 3) int64 particle ids of all cloth and volume faces

    # --- contact between bodies (collision/bodies.py, collision/groups.py); G = collision
    # groups, D = disabled group pairs, Ft = contact triangles
    particle_group: np.ndarray = None       # (n,) int64 collision group of each particle
    particle_friction: np.ndarray = None    # (n,) float64 Coulomb coefficient of its contacts
    particle_restitution: np.ndarray = None  # (n,) float64 in [0, 1] its bounce at a collider
    #                                         (the larger of its and the collider's counts)
    particle_shielded: np.ndarray = None    # (n,) bool inside its own rigid body's contact
    #                                         spheres (a capsule's frame particles): never the
    #                                         first to touch, so no collider contact is made
    group_self_collision: np.ndarray = None  # (G,) bool the group's particles collide with it
    group_disabled: np.ndarray = None       # (D,) int64 sorted keys ga * G + gb (ga < gb) of
    #                                         group pairs that never collide
    contact_tris: np.ndarray = None         # (Ft, 3) int64 particle ids; solid ones wound out
    contact_tri_solid: np.ndarray = None    # (Ft,) bool face of a closed (solid) surface
    capsule_particles: np.ndarray = None    # (S, 2) int64 the end particles of each capsule
    #                                         body's axis (add_capsule_body), its own group
    capsule_radius: np.ndarray = None       # (S,) float64 [m] its radius
    # --- joints between rigid bodies (constraints/joints.py, bodies.py); J = joints. A body is
    # a shape-matching cluster; its id is the index add_shape_match returned (build order)
    shape_body_cluster: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #                                  (K,) int64 the model cluster of each body id
    joint_body: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    #                                  (J, 2) int64 model clusters (a, b), -1 = the world
    joint_anchor: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))
    #                                  (J, 2, 3) float64 [m] anchor from each body's rest centre
    #                                  of mass (the world: the world point)
    joint_axis: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #                                  (J, 3) float64 unit axis in the build pose
    joint_perp: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #                                  (J, 3) float64 unit reference direction normal to it
    joint_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #                                  (J,) int64 joints.KIND_BALL | KIND_HINGE
    joint_limits: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #                                  (J, 3) float64 [rad] hinge (lo, hi, nan); ball (swing,
    #                                  twist_lo, twist_hi); nan = unlimited
    joint_compliance: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #                                  (J,) float64 [m/N] of the anchor, 0 = rigid
    joint_order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #                                  (J,) int64 solve order: by colour (no two joints of a
    #                                  colour share a body), build order within one
    joint_color_offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    #                                  (colours + 1,) int64 colour c is joint_order[o[c]:o[c+1]]
    # --- mesh colliders (collision/mesh.py), all concatenated; a primitive collider k has empty
    # ranges. M = mesh vertices, U = mesh triangles (BVH order), N = BVH nodes, E = edges
    mesh_vertices: np.ndarray = None     # (M, 3) float64 [m] local vertices at build time
    mesh_triangles: np.ndarray = None    # (U, 3) int64 vertex ids (into mesh_vertices), outward
    mesh_vertex_start: np.ndarray = None  # (C + 1,) int64 vertices of collider k
    mesh_tri_start: np.ndarray = None    # (C + 1,) int64 triangles of collider k
    mesh_node_start: np.ndarray = None   # (C + 1,) int64 BVH nodes of collider k (root first)
    mesh_node_right: np.ndarray = None   # (N,) int64 right child, -1 for a leaf (left = next)
    mesh_node_skip: np.ndarray = None    # (N,) int64 the node after this one's subtree
    mesh_node_t0: np.ndarray = None      # (N,) int64 first triangle of the node
    mesh_node_t1: np.ndarray = None      # (N,) int64 one past its last triangle
    mesh_node_depth: np.ndarray = None   # (N,) int64 depth (root 0)
    mesh_tri_edge: np.ndarray = None     # (U, 3) int64 edge id of slots v0v1, v1v2, v2v0
    mesh_edge_count: int = 0             # E
    mesh_closed: np.ndarray = None       # (C,) bool closed, consistently oriented: solid

    @property
    def particle_count(self):
        return self.particle_x0.shape[0]

    @property
    def joint_count(self):
        return self.joint_kind.shape[0]

    @property
    def jointed_clusters(self):
        """(B,) int64 the clusters that carry a joint, increasing (derived from joint_body)."""
        return np.unique(self.joint_body[self.joint_body >= 0]).astype(np.int64)

    @property
    def stick_count(self):
        return self.stick_particles.shape[0]

    def __post_init__(self):
        # every array in C order: a compiled kernel is compiled per memory layout of its
        # arguments, and warm_up compiles the C-order ones (np.linalg.solve's transposes and
        # concatenations of them come out in Fortran order, e.g. tetra_point_weight did)
        n = self.particle_count
        if self.particle_group is None:           # a Model made by hand: one group per particle
            self.particle_group = np.arange(n, dtype=np.int64)
        if self.particle_friction is None:
            self.particle_friction = np.full(n, 0.5)
        if self.particle_restitution is None:
            self.particle_restitution = np.zeros(n)
        if self.particle_shielded is None:
            self.particle_shielded = np.zeros(n, bool)
        if self.group_self_collision is None:
            self.group_self_collision = np.zeros(int(self.particle_group.max()) + 1 if n else 0,
                                                 bool)
        if self.group_disabled is None:
            self.group_disabled = np.zeros(0, np.int64)
        if self.contact_tris is None:
            self.contact_tris = np.zeros((0, 3), np.int64)
        if self.contact_tri_solid is None:
            self.contact_tri_solid = np.zeros(len(self.contact_tris), bool)
        if self.capsule_particles is None:
            self.capsule_particles = np.zeros((0, 2), np.int64)
        if self.capsule_radius is None:
            self.capsule_radius = np.zeros(len(self.capsule_particles))
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
                setattr(self, f.name, np.ascontiguousarray(value))

    def describe_particle(self, i):
        """A short text naming the constraints and bodies acting on particle i (for errors)."""
        parts = []
        sticks = np.nonzero((self.stick_particles == i).any(axis=1))[0]
        if sticks.size:
            k = int(sticks[0])
            a, b = self.stick_particles[k]
            parts.append(f"{STICK_SOURCES[self.stick_source[k]]} {k} (particles {a}-{b}, "
                         f"rest length {self.stick_rest_length[k]:.6g} m)")
        entries = np.nonzero(self.shape_particles == i)[0]
        if entries.size:
            parts.append(f"shape-matching cluster {int(self.shape_cluster[entries[0]])}")
        tris = np.nonzero((self.volume_tris == i).any(axis=1))[0]
        if tris.size:
            vol = int(np.searchsorted(self.volume_tri_start, tris[0], side="right") - 1)
            parts.append(f"volume {vol}")
        bodies = np.nonzero((self.tetra_particles == i).any(axis=1))[0]
        if bodies.size:
            parts.append(f"tetrahedral body {int(bodies[0])}")
        return "; ".join(parts) if parts else "no constraint (free particle)"
