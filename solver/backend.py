"""Kernel backend selection: compiled Numba kernels when Numba imports, NumPy otherwise.

The NumPy kernels are the reference and the fallback; the Numba kernels perform the same
floating-point operations in the same order on the same arrays, so the two backends give
bit-identical results wherever a kernel exists in both (tests/solver/test_backends.py).

VERLET_BACKEND=numpy|numba forces a backend (numba raises if it cannot be loaded);
VERLET_THREADS=N fixes the threads the parallel kernels use (default: all cores or one, whichever
each Simulation measures faster: StepThreads), so a render farm can share a machine;
VERLET_CACHE_DIR (or configure(cache_dir=...)) is where compiled
kernels are cached, so compilation is paid once per machine (inside Blender the add-on points it
at the extension's user directory, never at the extension's own folder), and kernels/cache.py
how a package ships them compiled for a portable CPU so that a fresh machine compiles nothing
(VERLET_KERNEL_TARGET or configure(target=...) picks host-tuned or portable kernels).
"""

import contextlib
import os
import sys
import threading

_state = {"numba": None, "error": None, "cache_dir": None, "threads": None, "target": None,
          "shipped_dir": None, "kernel_target": None, "seeded": 0, "cpu_key": None}
# loading and warming up may start on a worker thread (the add-on compiles off Blender's main
# thread) while the main thread asks for the kernels: one of them does the work, the other waits
_lock = threading.RLock()


def default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "verlet_physics", "kernels")


def configure(cache_dir=None, threads=None, target=None, shipped_dir=None):
    """Set the kernel cache folder, the thread count, the kernels' CPU target ("host" or one of
    kernels/cache.py's PORTABLE_TARGETS; None: chosen as that module says) and the folder of
    shipped kernels (default: kernel_cache/ beside solver/). Call before the first Simulation
    for all but the thread count, which can change at any time."""
    if target is not None:
        _state["target"] = str(target)
    if shipped_dir is not None:
        _state["shipped_dir"] = str(shipped_dir)
    if cache_dir is not None:
        _state["cache_dir"] = str(cache_dir)
        if _state["numba"] is not None:
            import numba
            _state["cache_dir"] = os.path.join(str(cache_dir), _cache_key(),
                                               _state["kernel_target"])
            numba.config.CACHE_DIR = _state["cache_dir"]
    if threads is not None:
        _state["threads"] = int(threads)
        if _state["numba"] is not None:
            _apply_threads()


# how many times an OpenMP thread spins before it sleeps at the end of a parallel region
# (libgomp's GOMP_SPINCOUNT, about 0.2 ms here). A step runs its parallel regions a few
# microseconds apart; sleeping at once (OMP_WAIT_POLICY=PASSIVE, the default until 2026-11-24)
# made each region wait about 45 us for its threads to wake, against 1.5 us after a spin, so a
# N = 64 cloth took 12.1 ms a frame on two threads, more than the 11.1 on one (6.6 now), and
# 100 crates 15.8 against 8.8 (6.7 now). libgomp's own default (300,000 spins) steals a busy
# core's time for milliseconds; a busy machine is StepThreads' business (one thread wins there).
SPIN_COUNT = 10000


class StepThreads:
    """The thread count one Simulation's steps run on when none was set (configure(threads=)
    or VERLET_THREADS): measured, not guessed. Every EVERY steps (and after WARM steps at the
    start) the next 2 x TRIAL steps alternate between all threads and one, and the faster median
    step time wins until the next trial. The load of a machine changes (other jobs, the
    interface, another simulation): on an idle 2-core machine two threads won at every size
    measured (100 crates 6.7 against 8.8 ms a frame), with one core busy one thread won (a
    N = 64 cloth 11.8 against 20). A trial costs at most TRIAL steps at the slower count. The
    thread count never changes a result (tests/solver/test_backends.py), only the speed.

    A trial also starts at once when the winner's step time has moved by DRIFT times either way
    from its median in the trial (the median of its last DRIFT_STEPS steps): the trial after
    WARM steps measures a scene's first frames, often not what follows (a cloth falling from
    0.3 m onto a mesh collider costs 4 to 8 ms a step before it lands, 25 after; the trial's
    third pair of steps straddled the landing, 18.9 ms on two threads against 15.8 on one,
    2026-11-30), and a core that another job takes after a trial changes which count wins (a
    N = 64 cloth 11.8 ms on one thread, 20 on two with a core busy), where the next trial would
    come EVERY steps (10 s at 24 fps) later. (A core given back while one thread runs changes
    nothing that thread measures: the scheduled trial finds it.)

    A trial moves the choice (all threads before the first) only when the other count's median
    is at least MARGIN faster: a scene's steps vary from one to the next (the demo's flag runs
    its steps in 4 to 16 rounds), and three steps each read a tie as a win: the demo's trial
    after a drift at step 18 read 62.6 ms on two threads against 61.8 on one, and its bake went
    on at 55.9 ms a frame on one thread against 42.9 on two (2026-11-30, before the margin)."""

    WARM, TRIAL, EVERY = 2, 3, 240
    DRIFT, DRIFT_STEPS = 2.0, 5
    MARGIN = 0.1

    def __init__(self, clock=None):
        import time
        self.clock = clock or time.perf_counter
        self.steps = 0              # steps run through step()
        self.choice = None          # the count the last trial chose (None: all threads)
        self.plan = []              # the counts of the trial's remaining steps
        self.times = {}             # count -> step times [s] of the running trial
        self.reference = None       # [s] the winner's median step time in the last trial
        self.recent = []            # [s] its last DRIFT_STEPS step times since (at most)
        self.drifted = False        # they moved DRIFT times from reference: a trial next step

    def _next(self, top):
        if top <= 1:
            return top
        if not self.plan and (self.drifted or self.steps == self.WARM or (
                self.steps > self.WARM and (self.steps - self.WARM) % self.EVERY == 0)):
            self.plan = [top, 1] * self.TRIAL
            self.times = {top: [], 1: []}
            self.drifted = False
            self.recent = []
        if self.plan:
            return self.plan[0]
        return self.choice if self.choice in (1, top) else top

    def _record(self, threads, seconds):
        if self.plan and threads == self.plan[0]:
            self.times[threads].append(seconds)
            self.plan.pop(0)
            if not self.plan:
                med = {c: sorted(t)[len(t) // 2] for c, t in self.times.items()}
                held = self.choice if self.choice in med else max(med)
                other = min(med) if held != min(med) else max(med)
                self.choice = other if med[other] < (1 - self.MARGIN) * med[held] else held
                self.reference = med[self.choice]
        elif not self.plan and self.reference is not None:
            self.recent = self.recent[1 - self.DRIFT_STEPS:] + [seconds]
            if len(self.recent) == self.DRIFT_STEPS:
                mid = sorted(self.recent)[self.DRIFT_STEPS // 2]
                self.drifted = not (self.reference < self.DRIFT * mid and
                                    mid < self.DRIFT * self.reference)

    @contextlib.contextmanager
    def step(self, backend_name):
        """Around one step on backend_name: the thread count chosen for it (the one before
        restored after), and its time recorded while a trial runs."""
        if backend_name != "numba" or _state["numba"] is None or _state["threads"] or \
                int(os.environ.get("VERLET_THREADS", "0") or 0) > 0:
            yield
            return
        import numba
        before = numba.get_num_threads()
        threads = self._next(before)
        numba.set_num_threads(threads)
        start = self.clock()
        try:
            yield
            self._record(threads, self.clock() - start)
            self.steps += 1
        finally:
            numba.set_num_threads(before)


def _apply_threads():
    import numba
    want = _state["threads"] or int(os.environ.get("VERLET_THREADS", "0") or 0)
    top = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(max(1, min(want, top)) if want > 0 else top)


KERNEL_SOURCES = ("kernels/compiled.py", "kernels/compiled_forces.py",
                  "kernels/compiled_contact.py", "kernels/compiled_loop.py",
                  "kernels/compiled_bodies.py", "kernels/compiled_broad.py",
                  "kernels/compiled_boxes.py",
                  "kernels/compiled_grid.py",
                  "kernels/compiled_joints.py", "kernels/compiled_pairs.py",
                  "kernels/compiled_rigid.py", "kernels/compiled_rigid_scalar.py",
                  "kernels/compiled_impacts.py", "kernels/compiled_order.py",
                  "kernels/compiled_candidates.py", "kernels/compiled_edges.py",
                  "kernels/compiled_mesh.py", "kernels/compiled_patch.py",
                  "kernels/compiled_sticks.py", "kernels/compiled_options.py",
                  "kernels/build.py")


def _cache_key():
    """Cache subfolder: the import name and a digest of the kernel sources. Numba keys a cached
    kernel by its own file's time stamp, but a kernel also inlines functions from the other
    kernel file; the digest makes any change to either file compile afresh."""
    import hashlib
    digest = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in KERNEL_SOURCES:
        with open(os.path.join(here, *name.split("/")), "rb") as f:
            digest.update(f.read())
    return os.path.join(__name__.rpartition(".")[0] or "solver", digest.hexdigest()[:16])


def numba_kernels():
    """The compiled kernel module, or None (the reason is in load_error())."""
    if _state["numba"] is None and _state["error"] is None:
        with _lock:
            if _state["numba"] is None and _state["error"] is None:
                _load()
    return _state["numba"]


def numba_build_kernels():
    """The compiled build-time kernels (kernels/build.py: graph colouring), or None. Loaded
    after the step's kernels, so they share their cache folder and thread settings."""
    if numba_kernels() is None:
        return None
    if _state.get("build") is None:
        with _lock:
            if _state.get("build") is None:
                from .kernels import build as kernels_build
                _state["build"] = kernels_build
    return _state["build"]


def build_kernels(requested=None):
    """The compiled build-time kernels when the backend chosen for ``requested`` is Numba, else
    None (the build then runs its Python reference, which gives the same result)."""
    try:
        name = choose(requested)
    except ValueError:
        if requested == "numba":
            raise
        # VERLET_BACKEND=numba without Numba: the Simulation reports it; the build still works
        return None
    return numba_build_kernels() if name == "numba" else None


def _host_features(llvm):
    """The host CPU's features (name -> bool); none where LLVM cannot tell (then only host-tuned
    kernels are used)."""
    try:
        return dict(llvm.get_host_cpu_features())
    except RuntimeError:
        return {}


def _load():
    """Import Numba and the kernels into the cache folder (under _lock)."""
    try:
        # GNU OpenMP threads spin SPIN_COUNT times, then sleep (see SPIN_COUNT); an explicit
        # OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment wins. Must be set before
        # OpenMP starts. (oneTBB, Numba's layer inside Blender 5, spins by itself.)
        if "OMP_WAIT_POLICY" not in os.environ:
            os.environ.setdefault("GOMP_SPINCOUNT", str(SPIN_COUNT))
        # LLVM at -O2 rather than Numba's default -O3: measured on the whole substep loop, the
        # cold compile took 13.3 s instead of 16.6 s and the N = 128 drape ran as fast (26.4 ms
        # against 25-26 ms per frame on 2 threads). Without fastmath both levels keep IEEE
        # semantics, so results are the same bits. Read when Numba is imported: an explicit
        # NUMBA_OPT wins, and a Numba another add-on imported first keeps its own setting.
        os.environ.setdefault("NUMBA_OPT", "2")
        numba_imported = "numba" in sys.modules
        import llvmlite.binding as llvm
        import numba

        from .kernels import cache as kernel_cache
        base = _state["cache_dir"] or os.environ.get("VERLET_CACHE_DIR") or default_cache_dir()
        # one folder per import name and kernel sources (_cache_key): a cached kernel
        # remembers the module it was compiled in, so the same file imported as "solver"
        # (tests) and as "verlet_physics.solver" (inside Blender) must not share it; in it, one
        # folder per CPU target (kernels/cache.py)
        key = _cache_key()
        folder = os.path.join(base, key)
        shipped = os.path.join(_state["shipped_dir"] or kernel_cache.SHIPPED_DIR,
                               kernel_cache.platform_name(), key)
        target = kernel_cache.choose_target(
            folder, shipped if os.path.isdir(shipped) else None, _host_features(llvm),
            forced=_state["target"] or os.environ.get("VERLET_KERNEL_TARGET"),
            numba_imported=numba_imported, cpu_env="NUMBA_CPU_NAME" in os.environ)
        cache = os.path.join(folder, target)
        _state["seeded"] = 0
        if target != kernel_cache.HOST:
            if kernel_cache.has_kernels(os.path.join(shipped, target)):
                _state["seeded"] = kernel_cache.seed(os.path.join(shipped, target), cache)
            # before the first compile, which creates Numba's code generator for this CPU.
            # Numba re-reads its NUMBA_* variables at each compile when one changed since it
            # was imported (NUMBA_OPT above, when Numba came first), and that would put the
            # host CPU's name back: read them now, so the names set here stay
            numba.core.config.reload_config()
            numba.config.CPU_NAME = target
            numba.config.CPU_FEATURES = ""
        os.makedirs(cache, exist_ok=True)
        numba.config.CACHE_DIR = cache
        _state["cache_dir"] = cache
        _state["kernel_target"] = target
        kernel_cache.install_locator()
        from .kernels import compiled
        _state["cpu_key"] = _cpu_key()           # after CPU_NAME above: the target's tuple
        _state["numba"] = compiled
        _apply_threads()
    except Exception as exc:    # no numba, or it failed to load: NumPy runs instead
        _state["error"] = f"{type(exc).__name__}: {exc}"


def cache_folder():
    """The folder compiled kernels are cached in (None until the compiled backend loads)."""
    return _state["cache_dir"] if _state["numba"] is not None else None


def kernel_target():
    """What the compiled kernels were compiled for: {"target": "host" or a portable CPU name,
    "seeded": how many cache files this process copied from the shipped cache}, or None until
    the compiled backend loads."""
    if _state["numba"] is None:
        return None
    return {"target": _state["kernel_target"], "seeded": _state["seeded"]}


def cache_stats():
    """(loaded, compiled): how many kernel signatures this process took from the kernel cache
    and how many it compiled (Numba's dispatcher statistics of the compiled kernel modules).
    A machine that had the kernels, shipped or compiled earlier, compiles none."""
    prefix = (__name__.rpartition(".")[0] or "solver") + ".kernels."
    loaded = compiled = 0
    seen = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith(prefix) or module is None:
            continue
        for value in vars(module).values():
            stats = getattr(value, "stats", None)
            if id(value) in seen or not hasattr(stats, "cache_misses"):
                continue
            seen.add(id(value))
            loaded += sum(stats.cache_hits.values())
            compiled += sum(stats.cache_misses.values())
    return loaded, compiled


def load_error():
    return _state["error"]


def choose(requested=None):
    """'numpy' or 'numba': requested (or VERLET_BACKEND), else the fastest available."""
    want = (requested or os.environ.get("VERLET_BACKEND", "")).strip().lower()
    if want not in ("", "numpy", "numba"):
        raise ValueError(f"VERLET_BACKEND: expected 'numpy' or 'numba', got {want!r}")
    if want == "numpy":
        return "numpy"
    if numba_kernels() is not None:
        return "numba"
    if want == "numba":
        raise ValueError(
            f"backend 'numba' requested but Numba could not be loaded ({load_error()})")
    return "numpy"


def warm_up_done():
    """Whether warm_up() already ran in this process (or there is nothing to compile)."""
    return bool(_state.get("warm")) or numba_kernels() is None


def warm_up():
    """Compile (or load from the cache) every compiled kernel by stepping a tiny scene once.
    Returns the seconds it took, or None when the compiled backend is unavailable. Callers show
    "compiling solver kernels" while it runs: the first call after install pays the compile.
    Thread-safe: a call while another thread warms up waits for it and returns 0.0."""
    if numba_kernels() is None:
        return None
    with _lock:
        if _state.get("warm"):
            return 0.0
        return _warm_up()


def _warm_up():
    import time

    import numpy as np

    from .builder import Builder
    from .simulation import Simulation
    t0 = time.perf_counter()
    # one of everything the step compiles: air drag on a strand, a soft pin, sticks of every
    # kind, a speed clamp, a damped shape-matching cluster, a volume, a tetrahedral body's
    # embedded points, a rigid body, and colliders with exact and first-order SDFs (an
    # ellipsoid), one of them moving; then a step in rounds and the bodies' frames, whose
    # kernels Python calls (merge_round, body_frames): each kernel compiles per signature, and
    # one this scene left out compiled at a scene's first step instead, with no message (the
    # demo's first bake after a fresh compile: order_rigid, merge_round and body_frames, 7 s)
    b = Builder()
    ids = b.add_particles(np.array([[0.0, 0.0, -0.01], [0.1, 0.0, 0.05], [0.5, 0.0, 0.12]]),
                          area=0.01)
    b.add_sticks(ids[None, :2])
    b.pin(ids[2:], compliance=1e-3)
    b.add_sticks(ids[None, :2], kind="min")
    tet = np.array([[0.0, 0.0, 0.3], [0.1, 0.0, 0.3], [0.0, 0.1, 0.3], [0.0, 0.0, 0.4]])
    body = b.add_particles(tet)
    b.add_shape_match(body, stiffness=0.5, damping=0.5)
    b.add_volume(body[np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])])
    b.add_tetra_body(tet + [0.5, 0.0, 0.0], tet[:2] + [0.52, 0.02, 0.32])
    # a rigid body (a cluster at full stiffness): its contacts are solved on the body
    b.add_shape_match(b.add_particles(tet + [-0.5, 0.0, -0.3]))
    # body contact (collision/bodies.py): a self-colliding cloth triangle over the body
    cloth = b.add_cloth(tet[:3] + [0.0, 0.0, 0.02], [[0, 1, 2]], radius=0.01,
                        self_collision=True)
    b.add_collider("plane")
    scaled = np.diag([0.2, 0.1, 0.1, 1.0])
    scaled[:3, 3] = (0.5, 0.0, 0.1)
    moving = b.add_collider("sphere", matrix=scaled)
    # and a mesh collider (a tetrahedron) at the first particle: its broad-phase query too
    b.add_collider("mesh", vertices=tet - [0.0, 0.0, 0.3], triangles=[[0, 2, 1], [0, 1, 3],
                                                                      [0, 3, 2], [1, 2, 3]])
    sim = Simulation(b.build(), substeps=1, backend="numba", max_speed=10.0)
    scaled[0, 3] += 0.01
    sim.set_collider_matrix(moving, scaled)
    sim.step(1 / 24)
    # a step in two rounds, the cloth's group in them (solver/rounds.py)
    sim.state.contact_rounds = 2
    sim.state.round_groups[sim.model.particle_group[cloth]] = True
    sim.step(1 / 24)
    sim.body_frames()
    _state["warm"] = True
    _write_warm_mark()
    return time.perf_counter() - t0


def _warm_mark_path():
    import numba

    from .kernels import cache as kernel_cache
    return os.path.join(_state["cache_dir"], "kernels",
                        kernel_cache.warm_mark(numba.__version__, _state["cpu_key"]))


def _cpu_key():
    """A short digest of the CPU Numba compiles for: its code generator's magic tuple (target
    triple, CPU name, features), by which Numba keys every cached kernel. Portable targets
    give the same tuple on every machine that runs them, so a shipped mark stays valid. "cpu"
    where this Numba has no such tuple: the mark then names no CPU."""
    import hashlib
    try:
        from numba.core.registry import cpu_target
        magic = cpu_target.target_context.codegen().magic_tuple()
    except (ImportError, AttributeError):
        return "cpu"
    return hashlib.sha256(repr(magic).encode()).hexdigest()[:12]


def _write_warm_mark():
    """Mark the cache folder as holding every kernel the warm-up needs (kernels/cache.py
    warm_mark), written under a temporary name and renamed. A folder that cannot be written
    (read-only, full) only costs the next session the compile message."""
    path = _warm_mark_path()
    if os.path.exists(path):
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write("every kernel of the warm-up is in this folder\n")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(tmp)


def kernels_cached():
    """Whether a warm-up ran to its end into this cache folder, for this Python, Numba and CPU
    (in this process, an earlier one, or the build whose kernels were shipped): the warm-up
    then only loads the kernels. False when some are missing, as after a compile cut short, which
    the warm-up finishes by compiling them; None when the compiled backend is unavailable."""
    if numba_kernels() is None:
        return None
    return os.path.exists(_warm_mark_path())
