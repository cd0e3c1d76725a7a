"""Where the compiled kernels are cached, for which CPU, and the cache a package ships.

Numba compiles every kernel the first time a machine runs it (about a minute on 2 cores) and
keeps the result in a cache folder. A render farm starts every machine fresh, so each job would
pay that minute; the extension therefore ships kernels compiled at build time
(scripts/build_extension.py) in a ``kernel_cache/`` folder beside ``solver/``, and the first run
copies them into the user's cache and loads them (well under a second) instead of compiling.

Three things make a cached kernel usable on another machine than the one that compiled it:

- **The folder.** Numba's own locator files a kernel under a subfolder named after a hash of its
  source file's absolute path, which differs on every install. ``KernelLocator`` files the
  kernels of ``solver/kernels/`` under ``<cache>/kernels`` instead; the cache folder itself is
  already keyed by the import name and a digest of the kernel sources (backend._cache_key).
  Numba (0.68, the bundled version) checks a cached kernel against its source's content hash,
  which the copy keeps.
- **The CPU.** Numba keys a cached kernel by the CPU it was compiled for (its name and its
  feature string: ``codegen.magic_tuple()``), normally the build machine's own model, which no
  other machine matches. The shipped kernels are compiled for a named baseline, one of
  ``PORTABLE_TARGETS`` (x86-64-v3: AVX2 and FMA, every x86-64 CPU since about 2015), and a
  machine whose CPU has that baseline's features runs them compiled for the same name. One
  baseline keeps the build to one compile per Python (x86-64-v4, AVX-512, is not offered: CPUs
  that have it run x86-64-v3 code too). Without fastmath the baseline changes no result: the
  same bits as host-tuned kernels (tests/blender/test_install.py compares the bakes).
- **The module.** A cached kernel remembers the module it was compiled in, so the shipped cache
  is built under the name the extension runs as when installed from disk or from the command
  line (``bl_ext.user_default.verlet_physics``); installed under another repository name, the
  kernels compile once, as without a shipped cache.

Host-tuned kernels measured about 8 % faster than x86-64-v3 ones on an AVX-512 machine (the
N = 128 drape on one thread, three runs each: README, "Shipped kernels"), so the shipped
kernels are a start-up cache, not the only choice: where host-tuned kernels for this Python were
compiled already (``blender -b -c verlet compile --tuned``, or a machine without a usable
shipped cache) they are used.
VERLET_KERNEL_TARGET=host|x86-64-v3 forces a choice.
"""

import os
import shutil
import sys

HOST = "host"
# baseline CPU name -> the LLVM features a CPU must have to run code compiled for it (a subset of
# llvmlite.binding.get_host_cpu_features(); the x86-64 psABI's levels), best first
PORTABLE_TARGETS = {
    "x86-64-v3": ("avx", "avx2", "fma", "bmi", "bmi2", "lzcnt", "movbe", "f16c", "xsave"),
}
KERNELS_DIR = os.path.dirname(os.path.abspath(__file__))
# the suffix of the mark a finished warm-up leaves (warm_mark), and the files of a cache folder
# that travel with it (shipped in a zip, seeded into a user's cache): Numba's index and data
# files and that mark
WARM_MARK_SUFFIX = ".done"
CACHE_FILES = (".nbi", ".nbc", WARM_MARK_SUFFIX)
# the shipped cache: <package root>/kernel_cache/<platform>/<cache key>/<target>/kernels/
SHIPPED_DIR = os.path.join(os.path.dirname(os.path.dirname(KERNELS_DIR)), "kernel_cache")


def python_tag(version=None):
    """The tag Numba puts in its cache file names: "py313" for Python 3.13."""
    major, minor = (version or sys.version_info)[:2]
    return f"py{major}{minor}"


def platform_name(sys_platform=None, machine=None):
    """This machine as Blender's extension platforms name it: "linux-x64", "windows-x64", ..."""
    import platform as _platform
    machine = (machine if machine is not None else _platform.machine()).lower()
    system = sys_platform or sys.platform
    system = {"linux": "linux", "win32": "windows", "darwin": "macos"}.get(system, system)
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine,
                                                                                   machine)
    return f"{system}-{arch}"


def supported_targets(features):
    """The portable targets a CPU with ``features`` (name -> bool, as llvmlite reports them, or
    a set of names) can run, best first."""
    have = {k for k, v in features.items() if v} if isinstance(features, dict) else set(features)
    return [name for name, need in PORTABLE_TARGETS.items() if set(need) <= have]


def warm_mark(numba_version, cpu_key, version=None):
    """The name of the file a warm-up that ran to its end leaves among the cached kernels
    (backend.warm_up): "warmed_up-numba0_68_1-<cpu_key>.py313.done", the Python's tag between
    the last two dots as in Numba's own file names. Numba writes a kernel's files as soon as
    that kernel is compiled, so a warm-up cut short (Blender closed, a farm job cancelled)
    leaves some kernels cached and others not; the mark says that a warm-up ran to its end in
    this folder. Named by what Numba keys a cached kernel by besides its source (which the
    folder's digest covers): the Python, the Numba version and the CPU compiled for
    (``cpu_key``, a digest of backend's codegen tuple), so that a host-tuned cache shared by
    machines with different CPUs (a farm's network home) is not taken as compiled for each.
    Not covered: a new signature that an update outside the kernel files asks for, which
    compiles without the mark's knowing (rare: the kernels' argument types are fixed)."""
    return (f"warmed_up-numba{numba_version.replace('.', '_')}-{cpu_key}."
            f"{python_tag(version)}{WARM_MARK_SUFFIX}")


def has_kernels(folder, version=None):
    """Whether ``folder`` (a target's cache folder) holds cached kernels for this Python."""
    kernels = os.path.join(folder, "kernels")
    tag = f".{python_tag(version)}"
    try:
        return any(n.endswith(".nbi") and tag in n for n in os.listdir(kernels))
    except OSError:
        return False


def choose_target(cache, shipped, features, forced=None, numba_imported=False, cpu_env=False):
    """The target to compile for or load: HOST or a PORTABLE_TARGETS name.

    cache: this machine's cache folder for the current kernels (targets are subfolders);
    shipped: the shipped cache's folder for the same kernels, or None; features: the host CPU's
    (llvmlite.binding.get_host_cpu_features()); forced: VERLET_KERNEL_TARGET; numba_imported:
    Numba was loaded before us (another add-on may have set up its code generator for its own
    CPU, so none is imposed); cpu_env: NUMBA_CPU_NAME is set (the user's choice wins)."""
    if forced:
        if forced != HOST and forced not in PORTABLE_TARGETS:
            raise ValueError(f"VERLET_KERNEL_TARGET: expected {HOST!r} or one of "
                             f"{sorted(PORTABLE_TARGETS)}, got {forced!r}")
        if forced != HOST and forced not in supported_targets(features):
            raise ValueError(f"VERLET_KERNEL_TARGET: this CPU lacks the features of {forced}")
        return forced
    if numba_imported or cpu_env or has_kernels(os.path.join(cache, HOST)):
        return HOST
    for name in supported_targets(features):
        if has_kernels(os.path.join(cache, name)) or (
                shipped and has_kernels(os.path.join(shipped, name))):
            return name
    return HOST


def seed(shipped_target, target_folder, version=None):
    """Copy the shipped kernels of one target for this Python, and the build's warm-up mark
    (warm_mark), into this machine's cache folder for it (files it already has are kept: Numba
    may have added kernels of its own since). Each file is written under a temporary name and
    renamed, so a reader never sees half a file. Returns the number of files copied."""
    src = os.path.join(shipped_target, "kernels")
    dst = os.path.join(target_folder, "kernels")
    os.makedirs(dst, exist_ok=True)
    tag = f".{python_tag(version)}."
    copied = 0
    for name in sorted(os.listdir(src)):
        if not name.endswith(CACHE_FILES) or tag not in name or \
                os.path.exists(os.path.join(dst, name)):
            continue
        tmp = os.path.join(dst, f".{name}.{os.getpid()}.tmp")
        shutil.copyfile(os.path.join(src, name), tmp)
        os.replace(tmp, os.path.join(dst, name))
        copied += 1
    return copied


def install_locator():
    """File the kernels of solver/kernels/ under <CACHE_DIR>/kernels (not under a hash of their
    absolute path), so a cache folder stays valid when copied to another install. Must run
    before the kernel modules are imported (Numba picks a kernel's locator at decoration)."""
    from numba.core import caching

    if any(getattr(c, "kernels_dir", None) == KERNELS_DIR
           for c in caching.CacheImpl._locator_classes):
        return

    class KernelLocator(caching.UserProvidedCacheLocator):
        kernels_dir = KERNELS_DIR

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._cache_path = os.path.join(caching.config.CACHE_DIR, "kernels")

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) != KERNELS_DIR:
                return None
            return super().from_function(py_func, py_file)

    caching.CacheImpl._locator_classes.insert(0, KernelLocator)
