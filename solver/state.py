"""What changes while a Simulation runs, beside the fixed Model: State, Control and Checkpoint.

- State: what the step integrates (positions and the previous positions that hold Verlet's
  velocity, the substep length, the clock). The step reads and writes it.
- Control: what the user sets between steps (pin targets, soft pins' targets and compliance,
  collider placements and materials, wind, air drag, gravity, damping, the compliance of sticks
  and shape-matching clusters: everything an artist may animate). The step reads it and never
  writes it, except that a collider's target becomes its placement, and a soft pin's target
  its anchor, once a step has reached them.
- Checkpoint: a State and a Control, copied. Resuming from one is bit-identical (bake equals
  preview); ``to_arrays`` / ``from_arrays`` turn it into plain named arrays for a file.

Contacts (collision/contacts.py) are neither: they are found afresh every step by the collide
stage and hold nothing a resume needs. n = particles, p = pinned particles, s = soft pins,
m = sticks, K = shape-matching clusters, C = colliders.
"""

from dataclasses import dataclass, field, fields, replace

import numpy as np

from .collision.frames import Frame
from .forces import Wind


@dataclass
class State:
    X: np.ndarray             # (3, n) float64 [m] positions, coordinate rows (what kernels take)
    X_prev: np.ndarray        # (3, n) float64 [m] positions one substep ago (Verlet's x*)
    v_start: np.ndarray       # (n, 3) float64 [m/s] velocity before the first step (no x* yet)
    h: float = None           # [s] length of the last substep; None before the first step
    time: float = 0.0         # [s] simulated time
    step_index: int = 0       # steps taken
    # [m/s] speed the scene has given its particles so far beyond what its present drivers give:
    # gravity times the simulated time, plus every velocity kick (initial velocities, explode,
    # set_velocities); the runaway check's allowance (Simulation._speed_limit)
    speed_budget: float = 0.0
    # [m/s] the fastest any collider surface has moved so far: what a collider launched keeps
    # its speed after the collider stops, so the budget above rises by each new record
    collider_speed_seen: float = 0.0
    # sleeping (sleep.py), I = islands (Model.particle_island): how long each island has been
    # still [s], and whether it sleeps (its particles' x and x* frozen)
    island_still: np.ndarray = field(default_factory=lambda: np.zeros(0))            # (I,)
    island_asleep: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))     # (I,)
    # the rounds the next step starts with (Simulation._run_rounds: the body contacts of the
    # groups in rounds are found again before each round), and the steps in a row whose
    # watched particles all stayed well inside their boxes (after ROUNDS_KEPT of them the
    # rounds halve)
    contact_rounds: int = 1
    clean_steps: int = 0
    # (G,) bool the collision groups whose contacts are found again every round (those whose
    # watched particles strayed from their boxes; none while a step has one round), and (G,)
    # int64 the steps in a row each stayed well inside them (after ROUNDS_KEPT it leaves)
    round_groups: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    group_clean: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def at_rest(cls, x0, islands=0, groups=0):
        """State of particles at x0 (n, 3) [m] with zero velocity, ``islands`` islands awake,
        ``groups`` collision groups in no round."""
        X = np.ascontiguousarray(np.asarray(x0, np.float64).T)
        return cls(X, X.copy(), np.zeros((X.shape[1], 3)), island_still=np.zeros(islands),
                   island_asleep=np.zeros(islands, bool), round_groups=np.zeros(groups, bool),
                   group_clean=np.zeros(groups, np.int64))

    @property
    def x(self):
        """(n, 3) view of X [m]."""
        return self.X.T

    @property
    def x_prev(self):
        """(n, 3) view of X_prev [m]."""
        return self.X_prev.T

    def copy(self):
        return replace(self, X=self.X.copy(), X_prev=self.X_prev.copy(),
                       v_start=self.v_start.copy(), island_still=self.island_still.copy(),
                       island_asleep=self.island_asleep.copy(),
                       round_groups=self.round_groups.copy(),
                       group_clean=self.group_clean.copy())

    def assign(self, other):
        """Copy other's values into this State's own arrays (views of them stay valid)."""
        if other.X.shape != self.X.shape:
            raise ValueError(f"state: positions have shape {other.X.T.shape}, "
                             f"expected {self.X.T.shape}")
        self.X[:] = other.X
        self.X_prev[:] = other.X_prev
        self.v_start[:] = other.v_start
        self.h, self.time, self.step_index = other.h, other.time, other.step_index
        self.speed_budget = other.speed_budget
        self.collider_speed_seen = other.collider_speed_seen
        self.contact_rounds, self.clean_steps = other.contact_rounds, other.clean_steps
        if other.round_groups.shape == self.round_groups.shape \
                and other.group_clean.shape == self.group_clean.shape:
            self.round_groups[:] = other.round_groups
            self.group_clean[:] = other.group_clean
        else:                     # a file from before the rounds: one round, none in rounds
            self.round_groups[:] = False
            self.group_clean[:] = 0
            self.contact_rounds, self.clean_steps = 1, 0
        if other.island_asleep.shape == self.island_asleep.shape:
            self.island_still[:] = other.island_still
            self.island_asleep[:] = other.island_asleep
        else:                     # a file from before sleeping, or islands that differ: awake
            self.island_still[:] = 0.0
            self.island_asleep[:] = False


@dataclass
class Control:
    pin_target: np.ndarray         # (p, 3) float64 [m] where pinned particles go in the next step
    particle_damping: np.ndarray   # (n,) float64 fraction of velocity removed per second, extra
    collider_frame: list           # C frames.Frame: each collider's placement now
    collider_target: list          # C frames.Frame: its placement at the end of the next step
    wind: Wind = field(default_factory=Wind)
    air_drag: float = 0.0          # [kg / (m^2 s)] linear drag coefficient of surfaces
    fields: object = None          # fields.ForceFields (read-only arrays) or None
    # soft pins (constraints/pins.py), s of them: where their targets are now and where they go
    # by the end of the next step, and their compliance (inf = released)
    soft_pin_anchor: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # (s, 3) [m]
    soft_pin_target: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # (s, 3) [m]
    soft_pin_compliance: np.ndarray = field(default_factory=lambda: np.zeros(0))   # (s,) [m/N]
    # Animatable settings (Simulation.set_gravity, set_global_damping, set_stick_compliance,
    # set_shape_compliance, set_shape_damping, set_collider_friction, set_collider_restitution,
    # set_restitution, set_friction, set_volume_pressure).
    # None only in a Control read from a file written before they could change: set_state then
    # keeps the simulation's own values, which are the model's, as they were when it was written.
    gravity: np.ndarray = None            # (3,) float64 [m/s^2]
    damping: float = None                 # fraction of every particle's velocity removed per s
    stick_compliance: np.ndarray = None   # (m,) float64 [m/N] XPBD compliance, model's order
    shape_compliance: np.ndarray = None   # (K,) float64 [m/N] goal compliance, model's order
    shape_damping: np.ndarray = None      # (K,) float64 fraction of deformation velocity per s
    collider_friction: np.ndarray = None  # (C,) float64 kinetic Coulomb coefficient
    collider_static_friction: np.ndarray = None   # (C,) float64 static coefficient (>= kinetic)
    collider_restitution: np.ndarray = None       # (C,) float64 in [0, 1]
    particle_restitution: np.ndarray = None       # (n,) float64 in [0, 1] (set_restitution)
    particle_friction: np.ndarray = None  # (n,) float64 >= 0 every contact's (set_friction)
    volume_rest: np.ndarray = None        # (V,) float64 [m^3] target volume (rest x pressure)
    # joint drives (Simulation.set_joint_targets / set_joint_drive; constraints/joints.py)
    joint_target: np.ndarray = None       # (J, 3, 3) float64 target R_a^T R_b of each joint
    joint_drive: np.ndarray = None        # (J,) float64 drive strength in [0, 1], 0 = limp
    # mesh colliders' local vertices (Model.mesh_vertex_start ranges): now, and at the end of the
    # next step (Simulation.set_collider_vertices; interpolated across its substeps)
    mesh_vertices: np.ndarray = None      # (M, 3) float64 [m]
    mesh_target: np.ndarray = None        # (M, 3) float64 [m]

    _SOFT = ("soft_pin_anchor", "soft_pin_target", "soft_pin_compliance")
    _ANIMATED = ("gravity", "stick_compliance", "shape_compliance", "shape_damping",
                 "collider_friction", "collider_static_friction", "collider_restitution",
                 "particle_restitution", "particle_friction", "volume_rest", "joint_target",
                 "joint_drive", "mesh_vertices", "mesh_target")

    def copy(self):
        # frames are immutable tuples of arrays nobody writes: the lists are copied, the frames
        # shared (colliders tell "at rest" by identity of frame and target)
        return replace(self, pin_target=self.pin_target.copy(),
                       particle_damping=self.particle_damping.copy(),
                       collider_frame=list(self.collider_frame),
                       collider_target=list(self.collider_target),
                       wind=self.wind.copy(),
                       **{k: getattr(self, k).copy() for k in self._SOFT},
                       **{k: None if getattr(self, k) is None else getattr(self, k).copy()
                          for k in self._ANIMATED})

    # what a step backup copies: the lists of placements (a step replaces collider_frame,
    # Colliders.end_step; set_collider_matrix edits either list in place), and the arrays a
    # step writes into, the soft pins' anchors (moved to their targets) and the mesh vertices
    _STEPPED = ("collider_frame", "collider_target", "soft_pin_anchor", "mesh_vertices")

    def step_copy(self, into):
        """Make ``into`` (a Control of the same model) a copy of this one as a step's backup:
        _STEPPED copied, every other value shared, since only the user changes those, between
        steps. assign(into) then restores this Control as it was."""
        for f in fields(Control):
            if f.name not in self._STEPPED:
                setattr(into, f.name, getattr(self, f.name))
        into.collider_frame = list(self.collider_frame)
        into.collider_target = list(self.collider_target)
        for k in self._STEPPED[2:]:
            mine, theirs = getattr(self, k), getattr(into, k)
            if mine is None or theirs is None or theirs.shape != mine.shape or theirs is mine:
                setattr(into, k, None if mine is None else mine.copy())
            else:
                theirs[:] = mine

    def assign(self, other):
        if other.pin_target.shape != self.pin_target.shape \
                or other.soft_pin_target.shape != self.soft_pin_target.shape \
                or len(other.collider_frame) != len(self.collider_frame):
            raise ValueError("state: its pins or colliders do not match this simulation's model")
        self.pin_target[:] = other.pin_target
        self.particle_damping[:] = other.particle_damping
        self.collider_frame = list(other.collider_frame)
        self.collider_target = list(other.collider_target)
        self.wind = other.wind.copy()
        self.air_drag = other.air_drag
        self.fields = other.fields
        for k in self._SOFT:
            getattr(self, k)[:] = getattr(other, k)
        for k in self._ANIMATED:
            mine, theirs = getattr(self, k), getattr(other, k)
            if theirs is None:
                continue                     # a file from before it could change: keep ours
            if mine is None or np.shape(theirs) != mine.shape:
                raise ValueError(f"state: its {k} has shape {np.shape(theirs)}, expected "
                                 f"{None if mine is None else mine.shape}")
            mine[:] = theirs
        if other.damping is not None:
            self.damping = other.damping


@dataclass(frozen=True)
class Checkpoint:
    """Everything a Simulation needs to resume bit-identically (Simulation.get_state)."""
    state: State
    control: Control

    def to_arrays(self):
        """{name: ndarray} of plain arrays (for np.savez); from_arrays reads it back. Force
        fields are not written: whoever drives the simulation sets them before every step (the
        add-on reads Blender's fields each frame), so they come back as None."""
        out = {f"state.{f.name}": np.asarray(np.nan if getattr(self.state, f.name) is None
                                             else getattr(self.state, f.name))
               for f in fields(State)}
        c = self.control
        for key in ("collider_frame", "collider_target"):
            frames = getattr(c, key)
            for j, part in enumerate(Frame._fields):
                out[f"control.{key}.{part}"] = np.array([f[j] for f in frames]).reshape(
                    len(frames), *((3, 3) if j == 0 else (3,)))
        for key, value in c.wind.to_arrays().items():
            out[f"control.wind.{key}"] = value
        out["control.pin_target"] = c.pin_target
        out["control.particle_damping"] = c.particle_damping
        out["control.air_drag"] = np.asarray(c.air_drag)
        for k in Control._SOFT + Control._ANIMATED + ("damping",):
            if getattr(c, k) is not None:
                out[f"control.{k}"] = np.asarray(getattr(c, k))
        return out

    @classmethod
    def from_arrays(cls, data):
        """The Checkpoint that to_arrays wrote (``data``: a mapping such as np.load's)."""
        h = float(data["state.h"])
        state = State(np.array(data["state.X"]), np.array(data["state.X_prev"]),
                      np.array(data["state.v_start"]), None if np.isnan(h) else h,
                      float(data["state.time"]), int(data["state.step_index"]),
                      float(data["state.speed_budget"]) if "state.speed_budget" in data else 0.0,
                      float(data["state.collider_speed_seen"])
                      if "state.collider_speed_seen" in data else 0.0,
                      np.array(data["state.island_still"] if "state.island_still" in data
                               else np.zeros(0), np.float64),
                      np.array(data["state.island_asleep"] if "state.island_asleep" in data
                               else np.zeros(0, bool), bool),
                      # a file from before the rounds: one round, as every step then had
                      int(data["state.contact_rounds"]) if "state.contact_rounds" in data
                      else 1,
                      int(data["state.clean_steps"]) if "state.clean_steps" in data else 0,
                      np.array(data["state.round_groups"] if "state.round_groups" in data
                               else np.zeros(0, bool), bool),
                      np.array(data["state.group_clean"] if "state.group_clean" in data
                               else np.zeros(0, np.int64), np.int64))
        frames = {}
        for key in ("collider_frame", "collider_target"):
            parts = [np.array(data[f"control.{key}.{p}"]) for p in Frame._fields]
            frames[key] = [Frame(*(p[i] for p in parts)) for i in range(len(parts[0]))]
        wind = Wind.from_arrays({k.rpartition(".")[2]: data[k] for k in data
                                 if k.startswith("control.wind.")})
        # files written before soft pins or the animatable settings existed have none
        soft = {k: np.array(data[f"control.{k}"]) for k in Control._SOFT + Control._ANIMATED
                if f"control.{k}" in data}
        if "control.damping" in data:
            soft["damping"] = float(data["control.damping"])
        control = Control(np.array(data["control.pin_target"]),
                          np.array(data["control.particle_damping"]), frames["collider_frame"],
                          frames["collider_target"], wind, float(data["control.air_drag"]),
                          **soft)
        return cls(state, control)
