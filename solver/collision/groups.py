"""Collision groups and contact surfaces, as the Builder hands them to the Model.

A collision group is a set of particles that never collide with each other: one body (the
particles of one Builder call, merged by add_shape_match), unless the group self-collides
(add_cloth(self_collision=True)). Every other pair of groups collides, except pairs disabled by
Builder.disable_collision (bones joined by a joint). Contact surfaces are the triangles other
bodies' particles collide with (collision/bodies.py): cloth faces (two-sided) and the closed
surfaces of volumes and shape-matched bodies (solid: wound outward, a particle is always pushed
out of them; Macklin et al., "Unified Particle Physics for Real-Time Applications", SIGGRAPH
2014, section 4.2, treat rigid bodies' surfaces the same way).
"""

import numpy as np

from ..checks import _ids
from ..geometry import fan_triangles, signed_volume
from ..mesh import normalize_faces


def closed(tris):
    """Whether triangles (k, 3) form a closed surface (every edge in exactly two)."""
    if len(tris) == 0:
        return False
    edges = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return bool(np.all(counts == 2))


def contact_arrays(groups, group_self, disabled, friction, surfaces):
    """The Model's contact fields from the Builder's lists: groups (n,) int64 (merged roots),
    group_self list of bool per raw group, disabled list of (ids_a, ids_b), friction (n,),
    surfaces list of ((k, 3) int64 triangles, solid bool). Groups are renumbered densely in
    order of first particle."""
    n = len(groups)
    roots, first = np.unique(groups, return_index=True)
    order = np.argsort(first, kind="stable")
    dense = np.empty(len(roots), np.int64)
    dense[order] = np.arange(len(roots))
    particle_group = dense[np.searchsorted(roots, groups)] if n else np.zeros(0, np.int64)
    G = len(roots)
    self_collision = np.zeros(G, bool)
    self_collision[dense] = np.asarray(group_self, bool)[roots] if G else False
    keys = []
    for a, b in disabled:
        ga, gb = np.unique(particle_group[a]), np.unique(particle_group[b])
        lo = np.minimum.outer(ga, gb).ravel()
        hi = np.maximum.outer(ga, gb).ravel()
        keep = lo != hi
        keys.append(lo[keep] * G + hi[keep])
    disabled_keys = np.unique(np.concatenate(keys)).astype(np.int64) if keys \
        else np.zeros(0, np.int64)
    if surfaces:
        tris = np.concatenate([t for t, _ in surfaces]).astype(np.int64)
        solid = np.concatenate([np.full(len(t), s, bool) for t, s in surfaces])
        # the same face twice (a soft body's volume and its shape-match surface): once, solid
        # if either says so
        key = np.sort(tris, axis=1)
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        solid_any = np.zeros(len(first), bool)
        np.logical_or.at(solid_any, inverse.ravel(), solid)
        keep = np.sort(first)
        tris, solid = tris[keep], solid_any[inverse.ravel()[keep]]
    else:
        tris, solid = np.zeros((0, 3), np.int64), np.zeros(0, bool)
    return dict(particle_group=particle_group, particle_friction=np.asarray(friction, np.float64),
                group_self_collision=self_collision, group_disabled=disabled_keys,
                contact_tris=np.ascontiguousarray(tris), contact_tri_solid=solid)


class GroupsMixin:
    """The Builder's collision-group and contact-surface calls (Builder derives from this).
    It uses the Builder's _n, _group, _group_parent, _group_self, _disabled,
    _contact_surfaces and _positions()."""

    def _new_group(self, self_collision=False):
        self._group_parent.append(len(self._group_parent))
        self._group_self.append(bool(self_collision))
        return len(self._group_parent) - 1

    def _root(self, g):
        while self._group_parent[g] != g:
            g = self._group_parent[g]
        return g

    def _groups_now(self):
        """(n,) int64 every particle's group, merges applied (dense numbering in build())."""
        if not self._group:
            return np.zeros(0, np.int64)
        root = np.array([self._root(g) for g in range(len(self._group_parent))], np.int64)
        return root[np.concatenate(self._group)]

    def particle_group(self, ids):
        """(k,) int64 the collision group of particles ``ids`` now (add_shape_match may merge
        groups later; the Model's particle_group holds the final, densely numbered ones).
        Particles of one group never collide with each other unless the group self-collides."""
        return self._groups_now()[_ids(ids, self._n, "ids").ravel()]

    def disable_collision(self, ids_a, ids_b):
        """The groups of particles ids_a never collide with the groups of ids_b (e.g. two
        bones joined by a joint). Resolved to groups at build()."""
        a = _ids(ids_a, self._n, "ids_a").ravel()
        b = _ids(ids_b, self._n, "ids_b").ravel()
        if a.size == 0 or b.size == 0:
            raise ValueError("disable_collision: ids_a and ids_b need at least one particle each")
        self._disabled.append((a, b))

    def add_contact_surface(self, faces, solid=None):
        """Triangles (faces over particle ids: (k, 3|4) or a list of index sequences) that
        other bodies' particles collide with, vertex against face (collision/bodies.py).
        solid None: closed surfaces are solid (wound outward here; a particle never ends
        inside), open (or flat) ones two-sided. Returns (k', 3) int64 the triangles."""
        corners, start, size = normalize_faces(faces, self._n)
        tris = fan_triangles(corners, start, size)
        is_closed = closed(tris)
        if solid and not is_closed:
            raise ValueError("surface: a solid surface must be closed (every edge in two "
                             "triangles)")
        make_solid = is_closed if solid is None else bool(solid)
        if make_solid:
            v0 = signed_volume(self._positions(), tris)
            if abs(v0) < 1e-18:
                if solid:
                    raise ValueError("surface: the closed surface encloses no volume")
                make_solid = False             # closed but flat: two-sided
            elif v0 < 0:
                tris = tris[:, ::-1].copy()
        solid = make_solid
        self._contact_surfaces.append((tris.astype(np.int64), solid))
        return tris

