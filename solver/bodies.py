"""Articulated rigid bodies at build time: capsule bodies for bones and the joints between bodies
(the Builder inherits JointBuilder; the solve is constraints/joints.py).

A capsule body (Jakobsen, "Advanced Character Physics", section 6: capsules around the limbs; a
rigid body is a shape-matching cluster, shapes.py) is a row of particles along the bone, each a
sphere of the capsule's radius at most one radius apart, so the spheres' union approximates the
capsule in contact, plus four frame particles (radius 0) inside it that give the cluster a
rotation about its own axis (twist): two at +z_r along the axis, at +-rho along x, and two at
-z_r, at +-rho along y. Their second moment about the centre, 2 m_f rho^2 (x x^T + y y^T) +
4 m_f z_r^2 u u^T, is the same in every direction across the bone, as two full rings of four
would give with twice the particles. The masses make the body's mass and inertia those of a
solid capsule of uniform density: the frame carries the axial inertia I_ax = 4 m_f rho^2, the
height z_r the rest of the transverse inertia I_perp. Frame particles never touch anything
first (a sphere of the axis around them always reaches further), so the collide stage makes no
contact for them (Model.particle_shielded).
"""

import numpy as np

from .constraints.coloring import color_order, greedy_colors
from .constraints.joints import JOINT_KINDS, KIND_HINGE

# frame particles sit at this fraction of the radius from the axis: inside the spheres of the
# axis particles (sqrt(0.8^2 + 0.5^2) < 1 with axis particles at most one radius apart)
RING_RADIUS = 0.8
FRAME_PARTICLES = 4         # per capsule body, after its axis particles


def capsule_inertia(length, radius, mass):
    """(axial, transverse) moments of inertia [kg m^2] of a solid capsule: a cylinder of
    ``length`` between two hemispheres of ``radius``, total ``mass``, about its centre."""
    vc, vh = np.pi * radius ** 2 * length, 2.0 / 3.0 * np.pi * radius ** 3
    rho = mass / (vc + 2.0 * vh)
    mc, mh = rho * vc, rho * vh
    axial = 0.5 * mc * radius ** 2 + 2.0 * (0.4 * mh * radius ** 2)
    d = 0.5 * length + 3.0 / 8.0 * radius           # hemisphere's centre of mass to the centre
    transverse = mc * (length ** 2 / 12.0 + radius ** 2 / 4.0) \
        + 2.0 * (83.0 / 320.0 * mh * radius ** 2 + mh * d * d)
    return axial, transverse


def capsule_layout(head, tail, radius, mass, up):
    """Positions (n, 3) [m], masses (n,) [kg] and radii (n,) [m] of a capsule body's particles:
    the axis particles first, then the FRAME_PARTICLES frame particles."""
    axis = tail - head
    length = float(np.linalg.norm(axis))
    u = axis / length
    if up is None:
        up = np.eye(3)[int(np.argmin(np.abs(u)))]
    x = up - np.dot(up, u) * u
    if np.linalg.norm(x) < 1e-9:
        raise ValueError("add_capsule_body: up is parallel to the bone (head -> tail)")
    x /= np.linalg.norm(x)
    y = np.cross(u, x)
    n_axis = max(2, int(np.ceil(length / radius - 1e-9)) + 1)
    t = np.linspace(0.0, 1.0, n_axis)
    z = (t - 0.5) * length                          # axial coordinate from the centre
    axial, transverse = capsule_inertia(length, radius, mass)
    rho = RING_RADIUS * radius
    m_f = axial / (4.0 * rho * rho)                 # the four frame particles carry I_ax
    m_axis = (mass - 4.0 * m_f) / n_axis
    # transverse: sum m_axis z^2 + 4 m_f z_r^2 + I_ax / 2 = I_perp
    rest = transverse - 0.5 * axial - m_axis * float(np.sum(z * z))
    z_r = float(np.sqrt(max(rest, 0.0) / (4.0 * m_f)))
    z_r = min(z_r, 0.5 * length)
    centre = 0.5 * (head + tail)
    hi, lo = centre + z_r * u, centre - z_r * u
    frame = np.array([hi + rho * x, hi - rho * x, lo + rho * y, lo - rho * y])
    pos = np.vstack([head + np.outer(t, axis), frame])
    masses = np.concatenate([np.full(n_axis, m_axis), np.full(FRAME_PARTICLES, m_f)])
    radii = np.concatenate([np.full(n_axis, radius), np.zeros(FRAME_PARTICLES)])
    return pos, masses, radii


def _vec(value, name, what):
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {name} must be 3 numbers, got {value!r}") from None
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: {name} must be 3 finite numbers, got {value!r}")
    return a


def _angle(value, name, what):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {name} must be a number [rad], got {value!r}") from None
    if not np.isfinite(v):
        raise ValueError(f"{what}: {name} must be finite, got {value!r}")
    return v


class JointBuilder:
    """Builder methods for articulated bodies (mixed into Builder, whose particles and clusters
    they use). Joints are stored as given; build() turns them into the Model's joint arrays."""

    def add_capsule_body(self, head, tail, radius, mass=1.0, up=None, friction=0.5):
        """A rigid body for a bone from ``head`` to ``tail`` (3,) [m] with contact radius
        ``radius`` [m] and ``mass`` [kg]: spheres of the radius along the segment, at most one
        radius apart (a capsule for colliders), and four frame particles (radius 0) inside it,
        masses chosen so that the body's mass and inertia are a solid capsule's; ``up`` (3,)
        orients the frame (any direction not along the bone); ``friction`` (>= 0) its Coulomb
        coefficient (add_particles). One rigid shape-matching cluster. Returns ((n,) particle
        ids, body id: the cluster index)."""
        head = _vec(head, "head", "add_capsule_body")
        tail = _vec(tail, "tail", "add_capsule_body")
        try:
            radius = float(radius)
            mass = float(mass)
        except (TypeError, ValueError):
            raise ValueError("add_capsule_body: radius and mass must be numbers") from None
        if not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"add_capsule_body: radius must be > 0 m, got {radius!r}")
        if not (np.isfinite(mass) and mass > 0):
            raise ValueError(f"add_capsule_body: mass must be > 0 kg, got {mass!r}")
        if np.linalg.norm(tail - head) < 1e-6:
            raise ValueError("add_capsule_body: head and tail coincide (a zero-length bone)")
        if up is not None:
            up = _vec(up, "up", "add_capsule_body")
        pos, masses, radii = capsule_layout(head, tail, radius, mass, up)
        ids = self.add_particles(pos, mass=masses, radius=radii, friction=friction)
        self._shielded.append(ids[-FRAME_PARTICLES:])
        # the axis's end spheres: other capsules meet this one's axis segment
        self._capsules.append((int(ids[0]), int(ids[-FRAME_PARTICLES - 1]), radius))
        return ids, self.add_shape_match(ids, stiffness=1.0)

    def add_joint(self, body_a, body_b, anchor, kind="ball", axis=None, limits=None,
                  compliance=0.0):
        """A joint between bodies (cluster ids from add_shape_match / add_capsule_body; None =
        the world, a fixed point) at world point ``anchor`` (3,) [m] of the build pose.

        kind "ball" or "hinge"; axis (3,) the world direction of the hinge axis, or of the ball's
        swing and twist axis (default: z). limits [rad], from the build pose: hinge (lo, hi), the
        rotation of body_b relative to body_a about the axis (right-handed); ball (swing,
        twist_lo, twist_hi): swing the half-angle of the cone body_b's axis stays in around
        body_a's, twist the range of rotation about it (swing or the twist pair may be None);
        None = unlimited. compliance [m/N] of the anchor (0 = rigid). Returns the joint id."""
        if not hasattr(self, "_joints"):
            self._joints = []
        j = len(self._joints)
        what = f"joint {j}"
        if not isinstance(kind, str) or kind not in JOINT_KINDS:
            raise ValueError(f"{what}: kind must be one of {sorted(JOINT_KINDS)}, got {kind!r}")
        k = len(self._clusters)
        ends = []
        for name, b in (("body_a", body_a), ("body_b", body_b)):
            if b is None:
                ends.append(-1)
                continue
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 0 <= b < k:
                raise ValueError(f"{what}: {name} must be a body id 0..{k - 1} (from "
                                 f"add_shape_match) or None for the world, got {b!r}")
            ends.append(int(b))
        if ends[0] < 0 and ends[1] < 0:
            raise ValueError(f"{what}: body_a and body_b are both the world")
        if ends[0] == ends[1]:
            raise ValueError(f"{what}: body_a and body_b are the same body {ends[0]}")
        anchor = _vec(anchor, "anchor", what)
        ax = np.array([0.0, 0.0, 1.0]) if axis is None else _vec(axis, "axis", what)
        if np.linalg.norm(ax) < 1e-12:
            raise ValueError(f"{what}: axis has zero length")
        ax = ax / np.linalg.norm(ax)
        lim = np.full(3, np.nan)
        if limits is not None:
            lim = self._joint_limits(what, kind, limits)
        try:
            compliance = float(compliance)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: compliance must be a number [m/N]") from None
        if not (np.isfinite(compliance) and compliance >= 0):
            raise ValueError(f"{what}: compliance must be >= 0 m/N, got {compliance!r}")
        self._joints.append((ends, anchor, ax, JOINT_KINDS[kind], lim, compliance))
        if ends[0] >= 0 and ends[1] >= 0:
            # jointed bodies overlap at the joint by design: contact between them would fight
            # the joint (collision/groups.py); every other pair of bones still collides
            self.disable_collision(self._clusters[ends[0]][0], self._clusters[ends[1]][0])
        return j

    @staticmethod
    def _joint_limits(what, kind, limits):
        lim = np.full(3, np.nan)
        vals = list(limits) if not np.isscalar(limits) else [limits]
        if kind == "hinge":
            if len(vals) != 2:
                raise ValueError(f"{what}: hinge limits must be (lo, hi) [rad], got {limits!r}")
            lo, hi = (_angle(v, n, what) for v, n in zip(vals, ("lo", "hi")))
            if lo > hi:
                raise ValueError(f"{what}: hinge limit lo {lo!r} exceeds hi {hi!r}")
            lim[:2] = lo, hi
            return lim
        if len(vals) != 3:
            raise ValueError(f"{what}: ball limits must be (swing, twist_lo, twist_hi) [rad], "
                             f"got {limits!r}")
        if vals[0] is not None:
            swing = _angle(vals[0], "swing", what)
            if swing < 0:
                raise ValueError(f"{what}: swing must be >= 0 rad, got {swing!r}")
            lim[0] = swing
        if (vals[1] is None) != (vals[2] is None):
            raise ValueError(f"{what}: give both twist_lo and twist_hi, or neither")
        if vals[1] is not None:
            lo, hi = _angle(vals[1], "twist_lo", what), _angle(vals[2], "twist_hi", what)
            if lo > hi:
                raise ValueError(f"{what}: twist_lo {lo!r} exceeds twist_hi {hi!r}")
            lim[1:] = lo, hi
        return lim

    def _capsule_fields(self, n):
        """The Model's capsule arrays for n particles: particle_shielded (the frame particles
        add_capsule_body made), capsule_particles (S, 2) and capsule_radius (S,)."""
        shielded = np.zeros(n, bool)
        if self._shielded:
            shielded[np.concatenate(self._shielded)] = True
        return dict(particle_shielded=shielded,
                    capsule_particles=np.array([c[:2] for c in self._capsules],
                                               np.int64).reshape(-1, 2),
                    capsule_radius=np.array([c[2] for c in self._capsules], np.float64))

    def _joint_fields(self, body_cluster, centre):
        """The Model's joint fields: body_cluster (K,) the model cluster of each body id,
        centre (K, 3) [m] each model cluster's rest centre of mass."""
        joints = getattr(self, "_joints", [])
        j = len(joints)
        body = np.full((j, 2), -1, np.int64)
        anchor = np.zeros((j, 2, 3))
        axis, perp = np.zeros((j, 3)), np.zeros((j, 3))
        kind, lim, comp = np.zeros(j, np.int64), np.full((j, 3), np.nan), np.zeros(j)
        for i, (ends, p, ax, kd, lm, cp) in enumerate(joints):
            for s in range(2):
                if ends[s] >= 0:
                    body[i, s] = body_cluster[ends[s]]
                    anchor[i, s] = p - centre[body[i, s]]
                else:
                    anchor[i, s] = p
            axis[i] = ax
            e = np.eye(3)[int(np.argmin(np.abs(ax)))]
            v = e - np.dot(e, ax) * ax
            perp[i] = v / np.linalg.norm(v)
            kind[i], lim[i], comp[i] = kd, lm, cp
        colors = greedy_colors([b[b >= 0] for b in body], max(len(body_cluster), 1)) if j \
            else np.zeros(0, np.int64)
        order, offsets = color_order(colors) if j else (np.zeros(0, np.int64),
                                                        np.zeros(1, np.int64))
        return dict(joint_body=body, joint_anchor=anchor, joint_axis=axis, joint_perp=perp,
                    joint_kind=kind, joint_limits=lim, joint_compliance=comp,
                    joint_order=np.asarray(order, np.int64),
                    joint_color_offsets=np.asarray(offsets, np.int64),
                    shape_body_cluster=np.asarray(body_cluster, np.int64))


__all__ = ["JointBuilder", "capsule_layout", "capsule_inertia", "KIND_HINGE"]
