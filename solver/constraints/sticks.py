"""Stick (distance) constraints with XPBD compliance, solved colour by colour.

    C(x) = |x_i - x_j| - rest_length

kind "equal" keeps C = 0; "min" only acts when C < 0 (pushes apart: angle limits, collision
sticks); "max" only when C > 0 (pulls: ropes that go slack). The seed is Jakobsen's stick
relaxation (mass weighted: x_i += w_i / (w_i + w_j) * ..., w = 1/m, 0 = pinned). Stiffness comes
from XPBD (Macklin, Mueller and Chentanez, "XPBD: Position-Based Simulation of Compliant
Constrained Dynamics", MIG 2016): with compliance alpha [m/N] and substep h,

    dlambda = (-C - alpha/h^2 * lambda) / (w_i + w_j + alpha/h^2),   x_i += w_i n dlambda,
    x_j -= w_j n dlambda,  n = (x_i - x_j) / |x_i - x_j|,

(the inverse of the denominator made once per step, StickSolver.begin_step, and multiplied:
the same on both backends), so a given compliance means the same stiffness at any substep or
iteration count; lambda starts at zero every substep (a sweep told read_lam=False takes it as
zero, one told write_lam=False does not store it, so ``lam`` is only meaningful between the
sweeps of one substep). The inequality kinds clamp the accumulated lambda (>= 0 for "min", <= 0
for "max"), which is the standard way to make an XPBD constraint one-sided.

Sticks are relaxed colour after colour (constraints/coloring.py; within a colour no two share a
particle), block by block (constraints/partition.py: blocks that write disjoint particles run
in parallel, so a sweep waits for its threads once per group of blocks, not once per colour).
``solve_sticks`` below is the NumPy kernel; kernels/compiled_sticks.py has its compiled mirror
with the same signature (the kernel table, kernels/__init__.py, picks one).
"""

import numpy as np

from ..model import STICK_MAX, STICK_MIN

_EPS = 1e-12


class StickSolver:
    """Every stick's solve arrays, allocated once (m = sticks, n = particles); the substep loop
    (loop.py) relaxes them with solve_sticks."""

    def __init__(self, model):
        w = model.particle_inv_mass
        kind = model.stick_kind
        # the partition (constraints/partition.py): NumPy batches, compiled groups and tasks
        self.batch_offsets = model.stick_batch_offsets        # (S + 1,) int64
        self.group_task_start = model.stick_group_task_start  # (G + 1,) int64
        self.task_range_start = model.stick_task_range_start  # (T + 1,) int64
        self.range_lo = model.stick_range_lo                  # (R,) int64
        self.range_hi = model.stick_range_hi                  # (R,) int64
        self.rest = model.stick_rest_length                   # (m,) float64 [m]
        self.one_sided = bool(np.any(kind != 0))
        # the compiled kernel streams every stick's data once per sweep, so it reads compact
        # copies (int32 ids, an int8 kind, inverse masses gathered per particle): 25 bytes a
        # stick instead of 80 keeps a 100k-stick cloth's sweep within the caches
        idx_type = np.int32 if len(w) < 2**31 else np.int64
        self.i = np.ascontiguousarray(model.stick_particles[:, 0], idx_type)   # (m,) int32
        self.j = np.ascontiguousarray(model.stick_particles[:, 1], idx_type)   # (m,) int32
        self.kind = np.asarray(kind, np.int8)                 # (m,) int8 STICK_EQUAL/MIN/MAX
        self.inv_mass = w                                     # (n,) float64 [1/kg]
        self.lam = np.zeros(len(self.rest))                   # (m,) float64 [N s^2] accumulated
        self.alpha = np.zeros(len(self.rest))                 # (m,) float64 alpha / h^2
        # (m,) [kg] 1 / (w_i + w_j + alpha / h^2), once per step: a sweep multiplies by it
        # rather than divide (a division's latency was a tenth of the drape's sticks, whose
        # chain of projections waits on each one); w_i + w_j (m,) [1/kg] is the model's
        self.inv_denom = np.zeros(len(self.rest))
        self._w_sum = w[model.stick_particles[:, 0]] + w[model.stick_particles[:, 1]]
        self._alpha_next = np.zeros(len(self.rest))       # (m,) float64 scratch: the next alpha~
        self._denom_made = False                         # inv_denom made once at least

    def begin_step(self, h, compliance):
        """alpha~ = alpha / h^2 for this step from the Control's compliance (m,) [m/N], which
        may change between steps (Simulation.set_stick_compliance; XPBD takes a new compliance
        at any step: it is the constraint's stiffness, not state); one division per stick per
        step, against substeps x iterations sweeps. Lambda needs no reset: a substep's first
        sweep is told to take it as zero. The denominators follow alpha~, made again only when
        it changed (an array compare is a third of their cost)."""
        np.divide(compliance, h * h, out=self._alpha_next)
        if not (self._denom_made and np.array_equal(self._alpha_next, self.alpha)):
            self.alpha, self._alpha_next = self._alpha_next, self.alpha
            with np.errstate(divide="ignore"):      # two pinned ends and no compliance
                np.divide(1.0, self._w_sum + self.alpha, out=self.inv_denom)
            self._denom_made = True

    def kernel_args(self, omega):
        """The sticks group of loop.run_substeps' arguments (omega: over-relaxation)."""
        return (self.i, self.j, self.rest, self.inv_mass, self.alpha, self.inv_denom, self.lam,
                self.kind, self.batch_offsets, self.group_task_start, self.task_range_start,
                self.range_lo, self.range_hi, float(omega), self.one_sided)

    def max_strain(self, x):
        """Largest relative length error |len - rest| / rest over all sticks (diagnostics)."""
        if not len(self.rest):
            return 0.0
        length = np.linalg.norm(x[self.i] - x[self.j], axis=1)
        return float(np.max(np.abs(length - self.rest) / self.rest))


def solve_sticks(X, si, sj, rest, inv_mass, alpha, inv_denom, lam, kind, batch_offsets,
                 group_task_start, task_range_start, range_lo, range_hi, omega, one_sided,
                 read_lam, write_lam):
    """One sweep of XPBD sticks batch after batch, vectorised within a batch (the NumPy kernel;
    a batch is one colour of the blocks of one group, constraints/partition.py, so no two of its
    sticks share a particle). X (3, n) [m] in place (gathering three 1-D rows is about 4x faster
    in NumPy than rows of an (n, 3) array); si, sj (m,) int particle ids; rest (m,) [m];
    inv_mass (n,) [1/kg]; alpha (m,) alpha / h^2; inv_denom (m,) [kg] 1 / (w_i + w_j + alpha /
    h^2) (StickSolver.begin_step); lam (m,) accumulated lambda; kind (m,) int8;
    batch_offsets (S + 1,) int64; the groups, tasks and ranges are the compiled kernel's (unused
    here); read_lam False: lambda is zero (the substep's first sweep); write_lam False: lambda is
    not stored (nothing reads it again this substep)."""
    px, py, pz = X
    for c in range(len(batch_offsets) - 1):
        s = slice(int(batch_offsets[c]), int(batch_offsets[c + 1]))
        i, j = si[s], sj[s]
        wi, wj = inv_mass[i], inv_mass[j]
        dx = px[i] - px[j]
        dy = py[i] - py[j]
        dz = pz[i] - pz[j]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        lam_s = lam[s] if read_lam else np.zeros(len(i))
        al = alpha[s]
        dlam = (rest[s] - length - al * lam_s) * inv_denom[s]
        if omega != 1.0:
            dlam *= omega
        if one_sided:
            k = kind[s]
            new = np.clip(lam_s + dlam, np.where(k == STICK_MIN, 0.0, -np.inf),
                          np.where(k == STICK_MAX, 0.0, np.inf))
            dlam = new - lam_s
        else:
            new = lam_s + dlam
        if write_lam:
            lam[s] = new
        dlam /= np.maximum(length, _EPS)
        s_i = wi * dlam
        s_j = wj * dlam
        px[i] += dx * s_i
        py[i] += dy * s_i
        pz[i] += dz * s_i
        px[j] -= dx * s_j
        py[j] -= dy * s_j
        pz[j] -= dz * s_j
