"""The kernel cache (solver/kernels/cache.py): which CPU target the kernels are compiled for,
and shipped kernels that a fresh machine loads instead of compiling.

The end-to-end check, a zip built with its shipped kernels installed into an isolated Blender
that then compiles nothing, is tests/blender/test_install.py (Blender 5.2) and tests/smoke
(4.2 and 5.0)."""

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from conftest import cut_short_cache
from solver.kernels import cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
V3 = {f: True for f in cache.PORTABLE_TARGETS["x86-64-v3"]}


def _index(folder, target, name="compiled.predict-43", py=None):
    path = os.path.join(folder, target, "kernels")
    os.makedirs(path, exist_ok=True)
    for ext in (".nbi", ".1.nbc"):
        with open(os.path.join(path, f"{name}.{py or cache.python_tag()}{ext}"), "wb") as f:
            f.write(b"x")
    return path


def test_supported_targets_need_every_feature():
    assert cache.supported_targets(V3) == ["x86-64-v3"]
    assert cache.supported_targets(set(V3)) == ["x86-64-v3"]
    for missing in cache.PORTABLE_TARGETS["x86-64-v3"]:
        assert cache.supported_targets(dict(V3, **{missing: False})) == [], missing
    assert cache.supported_targets({}) == []


def test_has_kernels_is_per_python(tmp_path):
    _index(tmp_path, "x86-64-v3", py="py311")
    assert cache.has_kernels(tmp_path / "x86-64-v3", (3, 11))
    assert not cache.has_kernels(tmp_path / "x86-64-v3", (3, 13))
    assert not cache.has_kernels(tmp_path / "host")


def test_choose_target(tmp_path):
    mine, shipped = str(tmp_path / "mine"), str(tmp_path / "shipped")
    # nothing shipped, nothing compiled: tuned for this CPU
    assert cache.choose_target(mine, None, V3) == "host"
    # shipped portable kernels load where the CPU can run them, not elsewhere
    _index(shipped, "x86-64-v3")
    assert cache.choose_target(mine, shipped, V3) == "x86-64-v3"
    assert cache.choose_target(mine, shipped, dict(V3, avx2=False)) == "host"
    # shipped for another Python only: of no use
    other = str(tmp_path / "other")
    _index(other, "x86-64-v3", py="py27")
    assert cache.choose_target(mine, other, V3) == "host"
    # tuned kernels compiled here earlier win over shipped ones
    _index(mine, "host")
    assert cache.choose_target(mine, shipped, V3) == "host"
    # Numba loaded by someone else first, or NUMBA_CPU_NAME set: no CPU imposed
    fresh = str(tmp_path / "fresh")
    assert cache.choose_target(fresh, shipped, V3, numba_imported=True) == "host"
    assert cache.choose_target(fresh, shipped, V3, cpu_env=True) == "host"
    # forced
    assert cache.choose_target(mine, shipped, V3, forced="x86-64-v3") == "x86-64-v3"
    assert cache.choose_target(fresh, shipped, V3, forced="host") == "host"
    with pytest.raises(ValueError, match="lacks the features of x86-64-v3"):
        cache.choose_target(fresh, shipped, {}, forced="x86-64-v3")
    with pytest.raises(ValueError, match="VERLET_KERNEL_TARGET: expected"):
        cache.choose_target(fresh, shipped, V3, forced="pentium")


def test_seed_copies_only_what_is_missing(tmp_path):
    src = _index(tmp_path / "shipped", "x86-64-v3")
    _index(tmp_path / "shipped", "x86-64-v3", py="py27")      # another Python's: not copied
    with open(os.path.join(src, "notes.txt"), "w") as f:
        f.write("not a kernel")
    # the build's warm-up mark for this Python is copied (the first session then shows no
    # compile message), another Python's is not
    for version in (None, (2, 7)):
        with open(os.path.join(src, cache.warm_mark("0.68.1", "abc", version)), "w") as f:
            f.write("done")
    dst = tmp_path / "mine" / "x86-64-v3"
    assert cache.seed(os.path.dirname(src), str(dst)) == 3
    assert sorted(os.listdir(dst / "kernels")) == sorted(
        n for n in os.listdir(src) if n.endswith((".nbi", ".nbc", ".done")) and ".py27." not in n)
    assert cache.warm_mark("0.68.1", "abc") in os.listdir(dst / "kernels")
    # a file Numba rewrote since (it adds kernels it compiles) is kept, and nothing is copied
    index = dst / "kernels" / f"compiled.predict-43.{cache.python_tag()}.nbi"
    index.write_bytes(b"newer")
    assert cache.seed(os.path.dirname(src), str(dst)) == 0
    assert index.read_bytes() == b"newer"
    assert not [n for n in os.listdir(dst / "kernels") if n.endswith(".tmp")]


def test_the_warm_up_mark_names_its_python_as_numba_names_its_files():
    """Between the last two dots, where tests/blender/test_install.py reads a shipped file's
    Python, and with the Numba version and the CPU in the name (another Numba, or a machine
    with another CPU sharing a host-tuned cache, compiles every kernel again)."""
    mark = cache.warm_mark("0.68.1", "abc", (3, 11))
    assert mark.rsplit(".", 2)[-2] == "py311" and mark.endswith(".done")
    assert cache.warm_mark("0.68.1", "abc") != cache.warm_mark("0.69.0", "abc")
    assert cache.warm_mark("0.68.1", "abc") != cache.warm_mark("0.68.1", "abd")


@pytest.mark.skipif(os.environ.get("VERLET_BACKEND") == "numpy", reason="compiled kernels only")
def test_a_warm_up_cut_short_is_finished_and_then_marked(tmp_path):
    """A cache folder holding some kernels but not the warm-up's mark (a compile cut short: Numba
    writes each kernel's files when that kernel is compiled) is not taken as complete: the
    add-on shows the compile message for it (addon/kernels.py will_compile, the Blender side in
    tests/blender/test_kernels.py). The warm-up compiles what is missing and leaves the mark.
    Here a copy of this session's cache lacks the forces' kernels (kernels/compiled_forces.py:
    the substep loop's cached code carries its own copy of them, so the child compiles only
    those the step calls from Python, a few seconds)."""
    pytest.importorskip("numba")
    from solver import backend
    backend.warm_up()
    mark = os.path.basename(backend._warm_mark_path())      # cache.warm_mark's name
    here = backend.cache_folder()
    assert backend.kernels_cached() and os.path.exists(os.path.join(here, "kernels", mark))
    base = tmp_path / "cache"
    dst, left_out = cut_short_cache(backend, base, "compiled_forces.")
    assert any(n.endswith(".nbi") for n in left_out) and mark in left_out, left_out
    child = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from solver import backend
before = backend.kernels_cached()
backend.warm_up()
loaded, compiled = backend.cache_stats()
print("RESULT " + json.dumps({"before": before, "after": backend.kernels_cached(),
                              "folder": backend.cache_folder(), "compiled": compiled}))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("VERLET_BACKEND", "VERLET_CACHE_DIR")}
    env["VERLET_CACHE_DIR"] = str(base)
    if backend.kernel_target()["target"] != cache.HOST:
        env["VERLET_KERNEL_TARGET"] = backend.kernel_target()["target"]
    out = subprocess.run([sys.executable, "-c", child, ROOT], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    assert got["folder"] == dst
    assert got["before"] is False and got["compiled"] >= 1 and got["after"] is True, got
    assert mark in os.listdir(os.path.join(dst, "kernels"))
    assert not [n for n in os.listdir(os.path.join(dst, "kernels")) if n.endswith(".tmp")]


def test_platform_name():
    assert cache.platform_name("linux", "x86_64") == "linux-x64"
    assert cache.platform_name("win32", "AMD64") == "windows-x64"
    assert cache.platform_name("darwin", "arm64") == "macos-arm64"


_CHILD = r"""
import json, sys
if sys.argv[-1] == "numba-first":
    import numba
    sys.argv.pop()
import numpy as np
from solver import backend
backend.configure(cache_dir=sys.argv[1], shipped_dir=sys.argv[2])
if len(sys.argv) > 3:
    backend.configure(target=sys.argv[3])
k = backend.numba_kernels()
X = np.zeros((3, 2))
k.predict(X, X.copy(), X.copy(), np.ones(2), np.zeros(0))
import numba
loaded, compiled = backend.cache_stats()
print("RESULT " + json.dumps({"folder": backend.cache_folder(), "info": backend.kernel_target(),
                              "loaded": loaded, "compiled": compiled,
                              "cpu": numba.config.CPU_NAME}))
"""


def _child(tree, *args):
    env = {k: v for k, v in os.environ.items()
           if k not in ("VERLET_KERNEL_TARGET", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES",
                        "VERLET_CACHE_DIR")}
    out = subprocess.run([sys.executable, "-c", _CHILD, *map(str, args)], cwd=tree, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _v3_host():
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    import llvmlite.binding as llvm
    return bool(cache.supported_targets(dict(llvm.get_host_cpu_features())))


@pytest.mark.skipif(os.environ.get("VERLET_BACKEND") == "numpy", reason="compiled kernels only")
@pytest.mark.skipif(not _v3_host(), reason="needs an x86-64 CPU with AVX2 (x86-64-v3)")
def test_portable_kernels_load_from_another_install(tmp_path):
    """A kernel compiled for x86-64-v3 in one copy of the solver loads, without compiling, in
    another copy at another path on a machine whose cache is empty: what a zip's shipped
    kernels do on a fresh machine. One small kernel, not all (a full compile takes a minute)."""
    pytest.importorskip("numba")
    builder, user = tmp_path / "build", tmp_path / "install"
    for tree in (builder, user):
        shutil.copytree(ROOT, tree / "src", ignore=shutil.ignore_patterns(
            ".*", "tests", "benchmarks", "scripts", "dist", "out", "wheels", "__pycache__",
            "kernel_cache"))
    shipped = tmp_path / "shipped"
    made = _child(builder / "src", shipped / cache.platform_name(), tmp_path / "none",
                  "x86-64-v3")
    assert made["info"] == {"target": "x86-64-v3", "seeded": 0}
    assert made["cpu"] == "x86-64-v3" and made["compiled"] >= 1 and made["loaded"] == 0
    # the build's folder, under the shipped layout <platform>/<import name>/<digest>/<target>
    assert made["folder"].startswith(str(shipped / cache.platform_name() / "solver"))
    assert os.path.basename(made["folder"]) == "x86-64-v3"

    got = _child(user / "src", tmp_path / "user_cache", shipped)
    assert got["info"]["target"] == "x86-64-v3" and got["info"]["seeded"] >= 2, got
    assert got["cpu"] == "x86-64-v3"
    assert got["compiled"] == 0 and got["loaded"] >= 1, got
    assert got["folder"].startswith(str(tmp_path / "user_cache"))

    # where kernels tuned for this CPU were asked for, the shipped ones are not used
    tuned = _child(user / "src", tmp_path / "tuned_cache", shipped, "host")
    assert tuned["info"] == {"target": "host", "seeded": 0}
    assert tuned["cpu"] is None and tuned["compiled"] >= 1


@pytest.mark.skipif(os.environ.get("VERLET_BACKEND") == "numpy", reason="compiled kernels only")
@pytest.mark.skipif(not _v3_host(), reason="needs an x86-64 CPU with AVX2 (x86-64-v3)")
def test_forced_target_holds_when_numba_came_first(tmp_path):
    """Numba imported before the solver sets NUMBA_OPT after Numba read its environment; its next
    compile re-reads it, which must not put the host CPU's name back under kernels compiled for
    x86-64-v3 (the cache would then file portable code as the host's, and the reverse)."""
    pytest.importorskip("numba")
    got = _child(ROOT, tmp_path / "c", tmp_path / "none", "x86-64-v3", "numba-first")
    assert got["info"]["target"] == "x86-64-v3" and got["compiled"] >= 1
    assert got["cpu"] == "x86-64-v3", got


def test_every_kernel_source_keys_the_cache():
    """backend._cache_key digests KERNEL_SOURCES because a kernel inlines functions of other
    kernel files, whose changes Numba's own check of its file does not see: a kernel file left
    out of the list would let a stale compiled kernel load after that file changed."""
    from solver import backend
    kernels = os.path.join(ROOT, "solver", "kernels")
    compiled = {f"kernels/{name}" for name in os.listdir(kernels)
                if name.endswith(".py") and (name.startswith("compiled") or name == "build.py")}
    assert compiled <= set(backend.KERNEL_SOURCES), sorted(compiled - set(backend.KERNEL_SOURCES))


def test_parallel_kernels_take_the_shared_option():
    """Every parallel kernel compiles its prange loops only (kernels/compiled_options.py): an
    allocation in a kernel left on Numba's default parallel=True becomes a parallel region, and
    the fusion pass costs compile time for loops that never fuse. prange_only() is a fresh dict per
    kernel because Numba empties the dict it is given."""
    import re
    from solver.kernels.compiled_options import prange_only
    kernels = os.path.join(ROOT, "solver", "kernels")
    found = 0
    for name in sorted(os.listdir(kernels)):
        if not name.endswith(".py") or name == "compiled_options.py":
            continue
        with open(os.path.join(kernels, name)) as f:
            source = f.read()
        options = re.findall(r"parallel\s*=\s*([^,)]*\)?)", source)
        assert all(o == "prange_only()" for o in options), (name, options)
        found += len(options)
    assert found >= 29
    first, second = prange_only(), prange_only()
    assert first == {"fusion": False, "numpy": False} and first is not second
    first.pop("fusion")
    assert prange_only() == second
