"""Builder: collects particles, constraints and colliders, validates them, and builds a Model.

Every ``add_*`` call checks its arguments and raises ``ValueError`` naming the argument, so that
nothing degenerate (NaN, negative mass, zero-length sticks, flat faces, out-of-range ids) reaches
the step, where it would divide by zero. ``build()`` merges all distance constraints into one
stick array, colours it (constraints/coloring.py) and partitions it (constraints/partition.py),
each kind of stick on its own and cloth stretch last in the sweep (_SOURCE_ORDER)."""

import numpy as np

from .collision import frames as frames
from .collision.groups import GroupsMixin, contact_arrays
from .collision.mesh import build as build_meshes, check_mesh
from .constraints.coloring import color_order, greedy_colors
from .constraints.partition import partition_sticks
from .geometry import fan_triangles, polygon_areas, signed_volume
from .mesh import cloth_topology, normalize_faces
from .strands import FRAME_MASS_FRACTION, edge_frames, joints
from .model import STICK_KINDS, STICK_SOURCES, Model
from .sleep import constraint_edges, islands
from .bodies import JointBuilder
from .checks import _ids, _masses, _per_item, _points, _scalar  # noqa: F401 (re-exported)

# default cloth areal density [kg/m^2]: a light cotton (Blender's default vertex mass is 0.3 kg
# per vertex whatever the resolution; a density keeps the cloth's weight independent of it)
CLOTH_DENSITY = 0.15
# default bend compliance of cloth support sticks [m/N]: soft enough to drape, stiff enough to
# keep cotton-like folds at 24 fps
CLOTH_BEND_COMPLIANCE = 1e-3
MIN_REST_LENGTH = 1e-9       # [m] shorter sticks are rejected as degenerate
MIN_FACE_AREA = 1e-14        # [m^2] smaller faces are rejected as degenerate


class Builder(GroupsMixin, JointBuilder):
    """Collects a scene; ``build()`` returns the Model a Simulation runs."""

    def __init__(self):
        self._x, self._mass, self._radius, self._area = [], [], [], []
        self._n = 0
        self._pinned = []
        self._soft_pins = []         # (ids, compliance [m/N])
        self._strand_frames = []     # ((e, 2) edge particle ids, (e,) their frame particles)
        self._sticks = []            # (pairs, rest, compliance, kind, source)
        self._clusters = []          # (ids, compliance)
        self._volumes = []           # (tris, rest, compliance)
        self._tetras = []            # (ids (4,), weights (P, 4))
        self._colliders = []
        self._surface = []
        # contact between bodies (collision/bodies.py): a collision group per particle-creating
        # call, merged by add_shape_match; contact surfaces (triangles, solid = closed)
        self._group = []             # (n_call,) int64 per add_particles call: group of each
        self._friction = []          # (n_call,) float64 per particle
        self._restitution = []       # (n_call,) float64 per particle, in [0, 1]
        self._group_parent = []      # union-find over groups (merged by add_shape_match)
        self._group_self = []        # (G,) bool self-collision per group
        self._contact_surfaces = []  # ((k, 3) int64 triangles, solid bool)
        self._disabled = []          # (ids_a, ids_b) particle ids whose groups never collide
        self._next_group = None      # the group the next add_particles call joins (internal)
        self._shielded = []          # (k,) int64 particle ids inside their body's spheres
        self._capsules = []          # (head particle, tail particle, radius [m]) per capsule

    # ------------------------------------------------------------------ particles
    def add_particles(self, x, mass=1.0, radius=0.0, area=0.0, friction=0.5, restitution=0.0):
        """Add particles at x (n, 3) [m] with mass [kg] (scalar or (n,), > 0), contact radius
        [m] and exposed area [m^2] (scalars or (n,), >= 0; the area is what air drag and wind
        act on for particles that are not part of a surface, e.g. strands), and the Coulomb
        friction coefficient of their contacts (scalar or (n,), >= 0; a contact with another
        body takes the geometric mean of its two sides', collision/bodies.py, one with a
        collider the geometric mean of its and the collider's, project.combined_friction,
        Simulation.set_friction changes it later), and their restitution at
        colliders (scalar or (n,), in [0, 1]; a contact takes the larger of the particle's and
        the collider's, Simulation.set_restitution changes it later). The particles form a new
        collision group (particle_group): they collide with every other group, and not with
        each other. Returns (n,) int64 particle ids."""
        x = _points(x, "x")
        n = x.shape[0]
        # validate everything before appending anything (was: x appended before mass and radius
        # were checked, so a bad mass left orphan positions behind and shifted every later id)
        mass = _masses(mass, n)
        radius = _per_item(radius, n, "radius")
        area = _per_item(area, n, "area")
        friction = _per_item(friction, n, "friction")
        restitution = _per_item(restitution, n, "restitution") + 0.0   # -0.0: 0.0
        if np.any(restitution > 1):
            raise ValueError("restitution: must be in [0, 1] (1 keeps the whole arrival speed)")
        group = self._next_group
        if group is None:
            group = self._new_group()
        self._x.append(x)
        self._mass.append(mass)
        self._radius.append(radius)
        self._area.append(area)
        self._friction.append(friction)
        self._restitution.append(restitution)
        self._group.append(np.full(n, group, np.int64))
        ids = np.arange(self._n, self._n + n, dtype=np.int64)
        self._n += n
        return ids

    def _positions(self):
        return np.concatenate(self._x) if self._x else np.zeros((0, 3))

    def pin(self, ids, compliance=None):
        """Pin particles to targets that Simulation.set_pin_targets moves (they start at the
        particles' positions). compliance None: a hard pin, infinite mass, the particle goes
        exactly where its target goes. compliance [m/N] (scalar or (k,), >= 0): a soft pin
        (constraints/pins.py), an XPBD attachment that keeps the particle's mass: under a force
        F it settles at target + compliance F (0 = a rigid attachment);
        Simulation.set_pin_compliance changes it between steps. A particle is pinned once."""
        ids = _ids(ids, self._n, "ids").ravel()
        if compliance is None:
            self._pinned.append(ids)
        else:
            self._soft_pins.append((ids, _per_item(compliance, ids.size, "compliance")))

    # ------------------------------------------------------------------ sticks
    def add_sticks(self, pairs, compliance=0.0, rest_length=None, kind="equal", source="stick"):
        """Distance constraints between particle pairs (m, 2).

        compliance [m/N] (scalar or (m,), 0 = rigid, XPBD); rest_length [m] (scalar or (m,),
        None = the current distance); kind "equal", "min" (only pushes apart) or "max" (only
        pulls together); source: what they are, a name in model.STICK_SOURCES ("stick", or
        "bend support" for the sticks that give a plant or strand its bend stiffness), for
        messages and for Simulation.set_stick_compliance to tell them apart. Returns (m,)
        int64 indices of the sticks in the order they were given
        (stable across build(), which reorders them internally)."""
        pairs = _ids(pairs, self._n, "pairs", shape=(None, 2)) if np.size(pairs) else \
            np.zeros((0, 2), np.int64)
        m = pairs.shape[0]
        if np.any(pairs[:, 0] == pairs[:, 1]):
            raise ValueError("pairs: a stick joins a particle to itself")
        if not isinstance(kind, str) or kind not in STICK_KINDS:    # (a list raised TypeError)
            raise ValueError(f"kind: expected one of {sorted(STICK_KINDS)}, got {kind!r}")
        if not isinstance(source, str) or source not in STICK_SOURCES:
            raise ValueError(f"source: expected one of {STICK_SOURCES}, got {source!r}")
        if rest_length is None:
            x = self._positions()
            rest = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
            if np.any(rest < MIN_REST_LENGTH):
                k = int(np.argmax(rest < MIN_REST_LENGTH))
                raise ValueError(f"rest_length: particles {pairs[k, 0]} and {pairs[k, 1]} coincide, "
                                 "so the stick between them has zero rest length")
        else:
            rest = _per_item(rest_length, m, "rest_length")
            if np.any(rest < MIN_REST_LENGTH):
                raise ValueError("rest_length: must be > 0")
        comp = _per_item(compliance, m, "compliance")
        first = sum(s[0].shape[0] for s in self._sticks)
        self._sticks.append((pairs, rest, comp, np.full(m, STICK_KINDS[kind], np.int8),
                             np.full(m, STICK_SOURCES.index(source), np.int8)))
        return np.arange(first, first + m, dtype=np.int64)

    # ------------------------------------------------------------------ cloth
    def add_cloth(self, x, faces, mass=None, density=CLOTH_DENSITY, radius=0.0,
                  stretch_compliance=0.0, shear_compliance=0.0,
                  bend_compliance=CLOTH_BEND_COMPLIANCE, bend=True, self_collision=False,
                  friction=0.5, restitution=0.0):
        """A polygon mesh as cloth: stretch sticks on edges, shear sticks on polygon diagonals,
        bend (support) sticks across every pair of adjacent faces; rest state = x.

        x (n, 3) [m]; faces (k, 3) / (k, 4) int or a list of index sequences (ids local to x);
        mass [kg] per particle (scalar or (n,)); if None it is density [kg/m^2] times each
        vertex's share of the face area. Compliances in [m/N]. radius [m] is the cloth's
        thickness in contacts; its faces are a two-sided contact surface that other bodies
        collide with, and with self_collision=True its own particles too (collision/bodies.py);
        friction: Coulomb coefficient of its contacts, with bodies and colliders; restitution in
        [0, 1] its bounce at colliders (add_particles). Returns (n,) int64 particle ids.
        """
        x = _points(x, "x")
        corners, start, size = normalize_faces(faces, x.shape[0])
        area = polygon_areas(x, corners, start, size)
        if np.any(area < MIN_FACE_AREA):
            k = int(np.argmax(area < MIN_FACE_AREA))
            raise ValueError(f"faces: face {k} has zero area (degenerate face)")
        vert_area = np.zeros(x.shape[0])
        np.add.at(vert_area, corners, np.repeat(area / size, size))
        if mass is None:
            density = _scalar(density, "density")
            if density <= 0:
                raise ValueError("density: must be > 0")
            if np.any(vert_area <= 0):
                k = int(np.argmax(vert_area <= 0))
                raise ValueError(f"faces: vertex {k} belongs to no face, so it has no mass; "
                                 "pass mass= explicitly or remove loose vertices")
            mass = density * vert_area
        # Validate the sticks before the first particle is added. (Was: add_sticks raised after
        # the particles were in, leaving them behind, and named its own arguments: two
        # coincident vertices gave "rest_length: ...", a bad stretch_compliance "compliance".)
        topo = cloth_topology(corners, start, size, x.shape[0])
        groups = [("stretch", stretch_compliance, 1), ("shear", shear_compliance, 2)]
        if bend:
            groups.append(("bend", bend_compliance, 3))
        groups = [(topo[key], _per_item(comp, len(topo[key]), f"{key}_compliance"), source)
                  for key, comp, source in groups if topo[key].size]
        for pairs, _, _ in groups:
            length = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
            if np.any(length < MIN_REST_LENGTH):
                k = int(np.argmax(length < MIN_REST_LENGTH))
                raise ValueError(f"x: vertices {pairs[k, 0]} and {pairs[k, 1]} coincide, so the "
                                 "cloth stick between them has zero rest length")
        friction = _per_item(friction, x.shape[0], "friction")
        restitution = _per_item(restitution, x.shape[0], "restitution") + 0.0   # -0.0: 0.0
        if np.any(restitution > 1):
            raise ValueError("restitution: must be in [0, 1] (1 keeps the whole arrival speed)")
        self._next_group = self._new_group(self_collision)
        try:
            ids = self.add_particles(x, mass=mass, radius=radius, friction=friction,
                                     restitution=restitution)
        finally:
            self._next_group = None
        self._area[-1] = vert_area
        for pairs, comp, source in groups:
            self.add_sticks(ids[pairs], compliance=comp, source=STICK_SOURCES[source])
        tris = ids[fan_triangles(corners, start, size)]
        self._surface.append(tris)
        self._contact_surfaces.append((tris, False))
        return ids

    # ------------------------------------------------------------------ strands
    def add_strands(self, x, edges, mass=1.0, radius=0.0, area=0.0, stretch_compliance=0.0,
                    bend_compliance=CLOTH_BEND_COMPLIANCE, friction=0.5):
        """Edge-only strands with bend and twist stiffness (strands.py): x (n, 3) [m], edges
        (e, 2) int ids local to x; mass [kg], radius [m], area [m^2] per vertex as in
        add_particles; stretch_compliance [m/N] of the edges; bend_compliance [m/N] (scalar or
        (n,)) of the joint at each vertex (0 = rigid); friction (scalar, >= 0) the Coulomb
        coefficient of the vertices and the frames (add_particles). Adds a frame particle per
        edge; one whose edge has both ends pinned by ``pin`` (hard) is pinned too, at its build
        position until Simulation.set_pin_targets moves it. Returns ((n,) vertex ids, (e,)
        frame ids)."""
        x = _points(x, "x")
        n = x.shape[0]
        e = _ids(edges, n, "edges", shape=(None, 2))
        if len(e) == 0:
            raise ValueError("edges: a strand needs edges")
        length = np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1)
        if np.any(length < MIN_REST_LENGTH):
            k = int(np.argmax(length < MIN_REST_LENGTH))
            raise ValueError(f"x: vertices {e[k, 0]} and {e[k, 1]} of edge {k} coincide (a "
                             "zero-length edge)")
        mass = _masses(mass, n)
        bend = _per_item(bend_compliance, n, "bend_compliance")
        stretch = _per_item(stretch_compliance, len(e), "stretch_compliance")
        self._next_group = self._new_group()      # vertices and frames: one group
        try:
            ids = self.add_particles(x, mass=mass, radius=radius, area=area, friction=friction)
            frame_mass = FRAME_MASS_FRACTION * 0.5 * (mass[e[:, 0]] + mass[e[:, 1]])
            frames_ = self.add_particles(edge_frames(x, e), mass=frame_mass, friction=friction)
        finally:
            self._next_group = None
        self.add_sticks(ids[e], compliance=stretch)
        self.add_sticks(np.concatenate([np.column_stack([frames_, ids[e[:, 0]]]),
                                        np.column_stack([frames_, ids[e[:, 1]]])]),
                        compliance=np.concatenate([stretch, stretch]))
        every = np.concatenate([ids, frames_])
        for v, members in zip(*joints(e, n)):
            self.add_shape_match(every[members], compliance=bend[v])
        self._strand_frames.append((ids[e], frames_))
        return ids, frames_

    # ------------------------------------------------------------------ shape matching
    def add_shape_match(self, ids, stiffness=1.0, compliance=None, damping=0.0, surface=None):
        """One shape-matching cluster over particles ``ids`` (rest shape = current positions).

        stiffness in (0, 1]: 1 = rigid; lower values map to a goal compliance
        (1 / stiffness - 1) * 1e-3 [m/N]; ``compliance`` [m/N] sets it directly instead.
        damping in [0, 1]: the fraction of the cluster's deformation velocity (its velocity
        relative to the cluster's own rigid motion) removed per second: jelly wobbles and comes
        to rest without slowing its fall. Clusters may overlap and may be planar or collinear.
        The particles' collision groups merge into one (a body never collides with itself).
        surface: (k, 3|4) particle ids (or a list of index sequences) of the body's surface,
        which other bodies then collide with face by face (add_contact_surface; a closed one is
        solid). Returns the cluster index (the body id of add_joint)."""
        ids = _ids(ids, self._n, "ids").ravel()
        if ids.size < 2:
            raise ValueError("ids: a shape-matching cluster needs at least 2 particles")
        if np.unique(ids).size != ids.size:
            raise ValueError("ids: a particle appears twice in one cluster")
        if compliance is None:
            stiffness = _scalar(stiffness, "stiffness", 0.0, 1.0)
            if stiffness <= 0:
                raise ValueError("stiffness: must be > 0 (use no cluster for no stiffness)")
            compliance = (1.0 / stiffness - 1.0) * 1e-3
        compliance = _scalar(compliance, "compliance")
        x = self._positions()[ids]
        extent = np.ptp(x, axis=0).max()
        if extent < MIN_REST_LENGTH:
            raise ValueError("ids: all particles of the cluster coincide")
        damping = _scalar(damping, "damping", 0.0, 1.0)
        if surface is not None:
            self.add_contact_surface(surface)
        roots = np.unique(self._groups_now()[ids])
        for g in roots[1:]:                      # merge into the first; self-collision if any
            self._group_self[int(roots[0])] |= self._group_self[int(g)]
            self._group_parent[int(g)] = int(roots[0])
        self._clusters.append((ids, compliance, damping))
        return len(self._clusters) - 1

    # ------------------------------------------------------------------ volume
    def add_volume(self, faces, pressure=1.0, compliance=0.0):
        """Keep the volume enclosed by a closed surface at pressure x its rest volume.

        faces: polygons over particle ids (a closed, consistently wound surface); pressure > 0
        scales the rest volume (> 1 inflates a balloon); compliance [m^3 / N-ish, XPBD].
        Returns the volume index."""
        corners, start, size = normalize_faces(faces, self._n)
        tris = fan_triangles(corners, start, size)
        edges = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
        _, counts = np.unique(edges, axis=0, return_counts=True)
        if np.any(counts != 2):
            raise ValueError("faces: the surface is not closed (an edge is used by "
                             f"{int(counts[counts != 2][0])} triangle(s), 2 needed)")
        x = self._positions()
        v0 = signed_volume(x, tris)
        if abs(v0) < 1e-12:
            raise ValueError("faces: the surface encloses no volume")
        if v0 < 0:
            tris = tris[:, ::-1].copy()
            v0 = -v0
        pressure = _scalar(pressure, "pressure")
        if pressure <= 0:
            raise ValueError("pressure: must be > 0")
        self._volumes.append((tris, v0 * pressure, _scalar(compliance, "compliance")))
        self._surface.append(tris)
        self._contact_surfaces.append((tris.astype(np.int64), True))     # closed: solid
        return len(self._volumes) - 1

    # ------------------------------------------------------------------ Jakobsen's rigid body
    def add_tetra_body(self, corners, points, mass=1.0, friction=0.5):
        """Jakobsen's rigid body: 4 particles at corners (4, 3) [m], 6 rigid sticks, and points
        (P, 3) [m] embedded with fixed barycentric weights. A penetrating embedded point is
        pushed out by moving the four particles (Simulation.tetra_points reads them back).
        mass [kg] is the body's total mass; friction (>= 0) its Coulomb coefficient (its
        particles', add_particles; an embedded point takes its corners' mean). Returns
        (particle ids (4,), body index)."""
        c = _points(corners, "corners")
        if c.shape != (4, 3):
            raise ValueError(f"corners: expected shape (4, 3), got {c.shape}")
        p = _points(points, "points")
        mass = _scalar(mass, "mass")
        if mass <= 0:
            raise ValueError("mass: must be > 0")
        basis = (c[:3] - c[3]).T
        scale = np.ptp(c, axis=0).max()
        if abs(np.linalg.det(basis)) < 1e-9 * scale ** 3:
            raise ValueError("corners: the tetrahedron is flat (zero volume)")
        w123 = np.linalg.solve(basis, (p - c[3]).T).T
        weights = np.column_stack([w123, 1.0 - w123.sum(axis=1)])
        ids = self.add_particles(c, mass=mass / 4.0, friction=friction)
        pairs = ids[np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])]
        self.add_sticks(pairs, compliance=0.0, source="tetrahedron edge")
        self._tetras.append((ids, weights))
        return ids, len(self._tetras) - 1

    # ------------------------------------------------------------------ colliders
    def add_collider(self, shape, matrix=None, friction=0.5, restitution=0.0, thickness=0.0,
                     static_friction=None, radius=None, depth=None, size=None, vertices=None,
                     triangles=None):
        """A collider: shape "plane" | "sphere" | "box" | "cylinder" | "capsule" | "mesh" placed by a 4x4
        world matrix (default identity). friction is the kinetic Coulomb coefficient,
        static_friction (default = friction) the static one (a contact combines them with its
        particle's own friction: collision/project.combined_friction); restitution in [0, 1];
        thickness [m] offsets the surface outwards. Sizes as Blender's primitives: radius [m] (sphere,
        cylinder, capsule; default 1, capsule 0.5), depth [m] full length along local Z, caps
        included (default 2), size (x, y, z) full extents of the box (default 2, 2, 2).
        A mesh takes vertices (v, 3) [m] in its local frame and triangles (t, 3) int vertex ids
        (collision/mesh.py: closed meshes are solid, open ones two-sided; zero-area triangles
        are dropped). Returns the collider index."""
        if not isinstance(shape, str) or shape not in frames.SHAPE_CODES:   # (a list: TypeError)
            raise ValueError(f"shape: expected one of {sorted(frames.SHAPE_CODES)}, got {shape!r}")
        code = frames.SHAPE_CODES[shape]
        m = np.eye(4) if matrix is None else matrix
        frames.decompose(m, "matrix")          # checks first (it names the argument), then convert
        m = np.asarray(m, dtype=np.float64)
        dims = np.zeros(3)
        mesh = None
        if code == frames.MESH:
            if vertices is None or triangles is None:
                raise ValueError("mesh: a mesh collider needs vertices (v, 3) and triangles (t, 3)")
            mesh = check_mesh(vertices, triangles, "mesh")
        elif vertices is not None or triangles is not None:
            raise ValueError(f"vertices, triangles: only a 'mesh' collider takes them, not {shape!r}")
        if code == frames.BOX:
            dims[:] = _points(size if size is not None else (2.0, 2.0, 2.0), "size")[0]
            if np.any(dims <= 0):
                raise ValueError("size: box extents must be > 0")
        elif code not in (frames.PLANE, frames.MESH):
            r = _scalar(radius if radius is not None else (0.5 if code == frames.CAPSULE else 1.0),
                        "radius")
            if r <= 0:
                raise ValueError("radius: must be > 0")
            dims[0] = r
            if code != frames.SPHERE:
                d = _scalar(depth if depth is not None else 2.0, "depth")
                if d <= 0 or (code == frames.CAPSULE and d < 2 * r):
                    raise ValueError("depth: must be > 0 (a capsule's at least 2 x radius)")
                dims[1] = d
        friction = _scalar(friction, "friction")
        static = friction if static_friction is None else _scalar(static_friction, "static_friction")
        if static < friction:
            raise ValueError("static_friction: must be >= friction (the kinetic coefficient)")
        self._colliders.append((code, dims, m.copy(), friction, static,
                                _scalar(restitution, "restitution", 0.0, 1.0),
                                _scalar(thickness, "thickness"), mesh))
        return len(self._colliders) - 1

    # ------------------------------------------------------------------ build
    def build(self):
        """Validate, merge and colour everything into a Model."""
        n = self._n
        if n == 0:
            raise ValueError("build: no particles were added")
        x0 = self._positions()
        mass = np.concatenate(self._mass)
        inv_mass = 1.0 / mass
        if self._pinned:
            inv_mass[np.concatenate(self._pinned)] = 0.0
        for ends, frame in self._strand_frames:      # a pinned edge pins its frame (strands.py)
            inv_mass[frame[(inv_mass[ends] == 0).all(axis=1)]] = 0.0
        soft_ids, soft_comp = _soft_pins(self._soft_pins, self._pinned)

        # sticks, merged and coloured
        if self._sticks:
            pairs, rest, comp, kind, source = (np.concatenate(a) for a in zip(*self._sticks))
        else:
            pairs, rest, comp = np.zeros((0, 2), np.int64), np.zeros(0), np.zeros(0)
            kind, source = np.zeros(0, np.int8), np.zeros(0, np.int8)
        both_pinned = (inv_mass[pairs[:, 0]] == 0) & (inv_mass[pairs[:, 1]] == 0)
        keep = ~both_pinned                      # nothing to solve between two pinned particles
        pairs, rest, comp, kind, source = pairs[keep], rest[keep], comp[keep], kind[keep], source[keep]
        colors, phase = _grouped_colors(pairs, source, n)
        part = partition_sticks(pairs, colors, n, phase)
        order = part["order"]

        # shape-matching clusters, coloured as groups of particles
        if self._clusters:
            ccol = greedy_colors([c[0] for c in self._clusters], n)
            corder, shape_offsets = color_order(ccol)
            clusters = [self._clusters[k] for k in corder]
            sizes = np.array([c[0].size for c in clusters])
            sp = np.concatenate([c[0] for c in clusters])
            sc = np.repeat(np.arange(len(clusters)), sizes)
            m_e = mass[sp]
            centre = np.zeros((len(clusters), 3))
            np.add.at(centre, sc, x0[sp] * m_e[:, None])
            centre /= np.bincount(sc, weights=m_e)[:, None]
            rest_off = x0[sp] - centre[sc]
            shape_start = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
            shape_comp = np.array([c[1] for c in clusters])
            shape_damp = np.array([c[2] for c in clusters])
            body_cluster = np.empty(len(corder), np.int64)
            body_cluster[corder] = np.arange(len(corder))   # add_shape_match id -> model cluster
        else:
            body_cluster, centre = np.zeros(0, np.int64), np.zeros((0, 3))
            sp, sc = np.zeros(0, np.int64), np.zeros(0, np.int64)
            rest_off, shape_start = np.zeros((0, 3)), np.zeros(1, np.int64)
            shape_comp, shape_offsets = np.zeros(0), np.zeros(1, np.int64)
            shape_damp = np.zeros(0)

        vt = [v[0] for v in self._volumes]
        tets = [t[0] for t in self._tetras]
        tw = [t[1] for t in self._tetras]
        col = self._colliders
        tetra_particles = np.array(tets, dtype=np.int64).reshape(-1, 4)
        volume_tris = np.concatenate(vt) if vt else np.zeros((0, 3), np.int64)
        # bodies joined by a joint are one island: one sleeps only when all of them rest
        jointed = np.array([[self._clusters[e[0]][0][0], self._clusters[e[1]][0][0]]
                            for e, *_ in getattr(self, "_joints", []) if min(e) >= 0],
                           np.int64).reshape(-1, 2)
        island = islands(n, np.concatenate([
            constraint_edges(pairs, sp.astype(np.int64), sc.astype(np.int64), volume_tris,
                             tetra_particles), jointed]))
        return Model(
            particle_x0=x0, particle_mass=mass, particle_inv_mass=inv_mass,
            particle_radius=np.concatenate(self._radius), particle_area=np.concatenate(self._area),
            particle_island=island, **self._capsule_fields(n),
            soft_pin_particles=soft_ids, soft_pin_compliance=soft_comp,
            stick_particles=pairs[order], stick_rest_length=rest[order],
            stick_compliance=comp[order], stick_kind=kind[order], stick_source=source[order],
            stick_batch_offsets=part["batch_offsets"],
            stick_group_task_start=part["group_task_start"],
            stick_task_range_start=part["task_range_start"],
            stick_range_lo=part["range_lo"], stick_range_hi=part["range_hi"],
            shape_particles=sp.astype(np.int64), shape_cluster=sc.astype(np.int64),
            shape_rest_offset=rest_off, shape_cluster_start=shape_start,
            shape_compliance=shape_comp, shape_damping=shape_damp,
            shape_color_offsets=shape_offsets,
            volume_tris=volume_tris,
            volume_tri_start=np.concatenate(([0], np.cumsum([len(t) for t in vt]))).astype(np.int64),
            volume_rest=np.array([v[1] for v in self._volumes], dtype=np.float64),
            volume_compliance=np.array([v[2] for v in self._volumes], dtype=np.float64),
            tetra_particles=tetra_particles,
            tetra_point_body=np.repeat(np.arange(len(tw)), [len(w) for w in tw]).astype(np.int64),
            tetra_point_weight=np.concatenate(tw) if tw else np.zeros((0, 4)),
            tetra_point_start=np.concatenate(([0], np.cumsum([len(w) for w in tw]))).astype(np.int64),
            collider_shape=np.array([c[0] for c in col], dtype=np.int64),
            collider_dims=np.array([c[1] for c in col], dtype=np.float64).reshape(-1, 3),
            collider_matrix=np.array([c[2] for c in col], dtype=np.float64).reshape(-1, 4, 4),
            collider_friction=np.array([c[3] for c in col], dtype=np.float64),
            collider_static_friction=np.array([c[4] for c in col], dtype=np.float64),
            collider_restitution=np.array([c[5] for c in col], dtype=np.float64),
            collider_thickness=np.array([c[6] for c in col], dtype=np.float64),
            **build_meshes([c[7] for c in col]),
            surface_tris=np.concatenate(self._surface) if self._surface else np.zeros((0, 3), np.int64),
            **contact_arrays(self._groups_now(), self._group_self, self._disabled,
                             np.concatenate(self._friction), self._contact_surfaces),
            **self._joint_fields(body_cluster, centre),
            particle_restitution=np.concatenate(self._restitution) if self._restitution
            else np.zeros(0),
        )


def _soft_pins(soft, hard):
    """(s,) int64 soft-pinned particles and (s,) float64 their compliances [m/N], refusing a
    particle pinned twice (soft twice, or soft and hard)."""
    ids = np.concatenate([p[0] for p in soft]) if soft else np.zeros(0, np.int64)
    comp = np.concatenate([p[1] for p in soft]) if soft else np.zeros(0)
    hard = np.unique(np.concatenate(hard)) if hard else np.zeros(0, np.int64)
    unique, counts = np.unique(ids, return_counts=True)
    twice = np.concatenate([unique[counts > 1], np.intersect1d(unique, hard)])
    if twice.size:
        raise ValueError(f"ids: particle {int(twice[0])} is pinned twice (a soft pin takes a "
                         "particle that has no other pin)")
    return ids.astype(np.int64), comp.astype(np.float64)


# The order in which stick sources are relaxed in a sweep (indices into STICK_SOURCES): Gauss-
# Seidel leaves what it solves last best satisfied, so the mesh edges come last. The benchmark
# drape at N = 128 (40 x 1), largest and 99th-percentile edge strain: 0.106 / 0.060 in this
# order, 0.167 / 0.079 with all sources coloured together, 0.185 / 0.077 with stretch first.
_SOURCE_ORDER = tuple(STICK_SOURCES.index(name) for name in (
    "cloth shear", "cloth bend", "bend support", "stick", "tetrahedron edge", "cloth stretch"))


def _grouped_colors(pairs, source, n):
    """(m,) int64 colours, each source coloured on its own (coloring.py) and numbered in
    _SOURCE_ORDER, and (m,) int64 phases: 1 for the last source, cloth stretch (partition.py)."""
    colors, phase = np.zeros(len(pairs), np.int64), np.zeros(len(pairs), np.int64)
    base = 0
    for rank, src in enumerate(_SOURCE_ORDER):
        sel = np.nonzero(source == src)[0]
        if sel.size == 0:
            continue
        c = greedy_colors(pairs[sel], n)
        colors[sel] = c + base
        phase[sel] = 1 if rank == len(_SOURCE_ORDER) - 1 else 0
        base += int(c.max()) + 1
    return colors, phase
