"""The settings an artist may animate, as Simulation methods (Simulation inherits them).

Each takes effect from the next step on and is kept in the Control (state.py), so a checkpoint
carries it and a resume after a change is bit-identical. A change wakes the sleeping bodies it
acts on (sleep.py); setting the value a setting already has (the add-on sets every keyframable
setting every frame) changes nothing and wakes nothing. They change what XPBD may change between
steps: a constraint's compliance is its stiffness, not its state (Macklin et al., "XPBD", 2016),
and a Coulomb coefficient or a damping rate acts afresh every substep. What a simulation cannot
change while it runs (topology, masses, collider shapes, substeps) is fixed in the Model.
"""

import numpy as np

from .checks import _scalar
from .geometry import signed_volume
from .model import STICK_SOURCES


def _check_int(value, name, lo):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name}: expected an integer >= {lo}, got {value!r}")
    return int(value)


def _vec3(value, name):
    a = np.asarray(value, dtype=np.float64)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected 3 finite numbers, got {value!r}")
    return a


class AnimatedSettings:
    """Setters of the Control's animatable settings (mixed into Simulation, whose control,
    model, colliders and _ids they use)."""

    def _wake_if_changed(self, old, new, ids):
        """Wake the bodies of particles ids when a setting changes from old to new."""
        if np.any(np.asarray(old) != np.asarray(new)):
            self.wake(ids)

    def _collider(self, k):
        k = _check_int(k, "k", 0)
        if k >= self.colliders.count:
            raise ValueError(f"k: collider index out of range 0..{self.colliders.count - 1}")
        return k

    def set_gravity(self, gravity):
        """Gravity (3,) [m/s^2] from the next step on."""
        g = _vec3(gravity, "gravity")
        if not np.array_equal(g, self.control.gravity):
            self.wake()
        self.control.gravity[:] = g

    def set_global_damping(self, damping):
        """The fraction of every particle's velocity removed per second, in [0, 1], from the next
        step on (the constructor's ``damping``; set_damping adds damping per particle)."""
        d = _scalar(damping, "damping", 0.0, 1.0)
        if d != self.control.damping:
            self.wake()
        self.control.damping = d

    def set_air_drag(self, drag):
        """The air drag coefficient of surfaces [kg/(m^2 s)], >= 0, from the next step on."""
        d = _scalar(drag, "drag", 0.0)
        if d != self.control.air_drag:
            self.wake()
        self.control.air_drag = d

    def set_collider_friction(self, k, friction, static_friction=None):
        """Collider k's Coulomb coefficients from the next step on: ``friction`` (kinetic,
        >= 0) and ``static_friction`` (>= friction; None = equal to friction, as the Builder's
        default). A contact combines them with its particle's own (set_friction;
        collision/project.combined_friction)."""
        k = self._collider(k)
        mu_k = _scalar(friction, "friction", 0.0)
        mu_s = mu_k if static_friction is None else _scalar(static_friction, "static_friction",
                                                            0.0)
        if mu_s < mu_k:
            raise ValueError(f"static_friction: {mu_s!r} is below friction {mu_k!r} (the static "
                             "coefficient must be >= the kinetic one)")
        ctl = self.control
        if ctl.collider_friction[k] != mu_k or ctl.collider_static_friction[k] != mu_s:
            self.wake()
        ctl.collider_friction[k] = mu_k
        ctl.collider_static_friction[k] = mu_s

    def set_collider_restitution(self, k, restitution):
        """Collider k's coefficient of restitution in [0, 1] from the next step on."""
        k = self._collider(k)
        e = _scalar(restitution, "restitution", 0.0, 1.0)
        if e != self.control.collider_restitution[k]:
            self.wake()
        self.control.collider_restitution[k] = e

    def set_restitution(self, ids, restitution):
        """The restitution of particles ``ids`` at colliders from the next step on (scalar or
        per particle, in [0, 1]): a contact bounces by the larger of the particle's and the
        collider's (set_collider_restitution), so a bouncy ball bounces on any floor and a
        bouncy floor bounces everything. A rigid body's contact particle gives its body's, at
        colliders and at contacts with other rigid bodies (the largest of the contact's
        particles'; collision/impacts.rigid_pair_velocities)."""
        ids = self._ids(ids)
        # + 0.0: a -0.0 becomes 0.0 (np.maximum and a compiled max treat -0.0 differently)
        e = np.broadcast_to(np.asarray(restitution, dtype=np.float64), ids.shape) + 0.0
        if not np.all(np.isfinite(e)) or np.any(e < 0) or np.any(e > 1):
            raise ValueError("restitution: must be finite and in [0, 1]")
        mine = self.control.particle_restitution
        self.sleep.wake_particles(self.state, ids[mine[ids] != e])
        mine[ids] = e

    def set_friction(self, ids, friction):
        """The Coulomb coefficient (finite, >= 0; scalar or per particle) of particles ``ids``
        in contacts from the next step on (the Builder's ``friction``): a contact between
        bodies takes the geometric mean of its two sides' (collision/body_stage.py; a triangle
        or an edge counts as the mean of its corners'), a contact with a collider the
        geometric mean of its own and the collider's kinetic coefficient, the collider's
        static one scaled alike (collision/project.combined_friction)."""
        ids = self._ids(ids)
        mu = np.broadcast_to(np.asarray(friction, dtype=np.float64), ids.shape) + 0.0
        if not np.all(np.isfinite(mu)) or np.any(mu < 0):
            raise ValueError("friction: must be finite and >= 0")
        mine = self.control.particle_friction
        self.sleep.wake_particles(self.state, ids[mine[ids] != mu])
        mine[ids] = mu

    def sticks_among(self, ids, source="stick"):
        """(k,) int64 indices (the Model's order) of the sticks of ``source`` (a name in
        model.STICK_SOURCES) whose two particles are both in ``ids``: the sticks that
        set_stick_compliance(ids, ..., source) sets, in the order a per-stick compliance is
        given."""
        if source not in STICK_SOURCES:
            raise ValueError(f"source: expected one of {STICK_SOURCES}, got {source!r}")
        inside = np.zeros(self.model.particle_count, bool)
        inside[self._ids(ids)] = True
        pairs = self.model.stick_particles
        mine = inside[pairs[:, 0]] & inside[pairs[:, 1]] \
            & (self.model.stick_source == STICK_SOURCES.index(source))
        return np.nonzero(mine)[0]

    def set_stick_compliance(self, ids, compliance, source="stick"):
        """XPBD compliance [m/N] (finite, >= 0; 0 = rigid) of the sticks of ``source`` among
        particles ``ids`` (sticks_among) from the next step on: a scalar, or one value per stick
        in sticks_among's order. Stiffness is a constraint's property, not its state, so XPBD
        takes a new compliance at any step (Macklin et al. 2016)."""
        sel = self.sticks_among(ids, source)
        c = np.asarray(compliance, dtype=np.float64)
        if c.ndim and c.shape != sel.shape:
            raise ValueError(f"compliance: expected a number or {sel.size} values (one per "
                             f"{source} among ids), got shape {c.shape}")
        if not np.all(np.isfinite(c)) or np.any(c < 0):
            raise ValueError("compliance: must be finite and >= 0 [m/N]")
        self._wake_if_changed(self.control.stick_compliance[sel], c, ids)
        self.control.stick_compliance[sel] = c

    def clusters_among(self, ids):
        """(k,) int64 shape-matching clusters whose every particle is in ``ids``."""
        inside = np.zeros(self.model.particle_count, bool)
        inside[self._ids(ids)] = True
        m = self.model
        K = len(m.shape_cluster_start) - 1
        outside = np.bincount(m.shape_cluster, minlength=K,
                              weights=(~inside[m.shape_particles]).astype(np.float64))
        return np.nonzero(outside == 0)[0]

    def set_shape_compliance(self, ids, compliance):
        """Goal compliance [m/N] (finite, >= 0; 0 = rigid) of the shape-matching clusters made
        of particles ``ids`` only, from the next step on (Builder.add_shape_match maps a
        stiffness s to (1 / s - 1) 1e-3 m/N): a scalar, or one value per cluster in
        clusters_among(ids)'s order."""
        clusters = self.clusters_among(ids)
        c = np.asarray(compliance, dtype=np.float64)
        if c.ndim == 0:
            c = np.full(clusters.size, _scalar(compliance, "compliance"))
        if c.shape != clusters.shape or not np.all(np.isfinite(c)) or np.any(c < 0):
            raise ValueError(f"compliance: expected a finite number >= 0 [m/N] or {clusters.size} "
                             "of them (one per cluster of clusters_among(ids))")
        self._wake_if_changed(self.control.shape_compliance[clusters], c, ids)
        self.control.shape_compliance[clusters] = c

    def set_shape_damping(self, ids, damping):
        """Fraction of the deformation velocity removed per second, in [0, 1], of the
        shape-matching clusters made of particles ``ids`` only, from the next step on."""
        d = _scalar(damping, "damping", 0.0, 1.0)
        clusters = self.clusters_among(ids)
        self._wake_if_changed(self.control.shape_damping[clusters], d, ids)
        self.control.shape_damping[clusters] = d

    def set_volume_pressure(self, ids, pressure):
        """Pressure (> 0, finite: the target volume as a multiple of the rest volume, > 1
        inflates) of the volume constraints whose surface is made of particles ``ids`` only,
        from the next step on; the rest volume is the one their surface encloses in the model's
        rest positions (Builder.add_volume's)."""
        p = _scalar(pressure, "pressure")
        if p <= 0:
            raise ValueError(f"pressure: must be > 0, got {pressure!r}")
        inside = np.zeros(self.model.particle_count, bool)
        inside[self._ids(ids)] = True
        m = self.model
        start = m.volume_tri_start
        for k in range(len(start) - 1):     # a few volumes per scene: a loop over them, not
            tris = m.volume_tris[start[k]:start[k + 1]]         # over particles
            if inside[tris].all():
                rest = signed_volume(m.particle_x0, tris) * p
                self._wake_if_changed(self.control.volume_rest[k], rest, ids)
                self.control.volume_rest[k] = rest
