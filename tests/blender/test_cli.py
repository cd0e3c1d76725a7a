"""The headless command (``blender -b scene.blend -c verlet bake ...``): addon/cli.py main(argv)
returns the exit code, 0 on success, 1 with a message on stderr on failure. No blender binary
exists here, so the function is called directly, and once in a separate Python process to see
the real exit status."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()

import scenes  # noqa: E402


def _addon():
    from verlet_physics.addon import bake, cache, cli
    return bake, cache, cli


def _saved_scene(tmp_path, frames=(1, 10)):
    c, box = scenes.mixed_scene(n=8, frames=frames)
    scenes.add_user_data(c)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "cli.blend"))
    return c, box


def test_command_is_registered(extension):
    _, _, cli = _addon()
    if not hasattr(bpy.utils, "register_cli_command"):
        pytest.skip("this Blender has no command-line commands (Blender < 4.2)")
    assert cli._state.get("handle") is not None


def test_bake_with_frames_pc2_and_alembic(extension, tmp_path, capsys):
    bake, cache, cli = _addon()
    c, box = _saved_scene(tmp_path)
    before = scenes.user_hashes(c, box)
    (tmp_path / "pc2").mkdir()
    abc = tmp_path / "abc" / "shot.abc"
    code = cli.main(["bake", "--frames", "2:9", "--pc2", str(tmp_path / "pc2"),
                     "--alembic", str(abc)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "bake done" in out.out and "Alembic export done" in out.out
    header, fr = cache.read(c.verlet.cache_id)
    assert (header["frame_start"], header["frame_end"]) == (2, 9) and fr.shape == (8, 64, 3)
    assert np.isfinite(fr).all()
    assert os.path.getsize(tmp_path / "pc2" / "Cloth.pc2") == 32 + 8 * 64 * 3 * 4
    assert abc.is_file() and abc.stat().st_size > 0
    assert bpy.context.scene.get("verlet_error", "") == ""
    assert scenes.user_hashes(c, box) == before


def test_help_returns_0(extension, capsys):
    _, _, cli = _addon()
    assert cli.main(["bake", "--help"]) == 0
    assert "--frames" in capsys.readouterr().out


def test_compile_prepares_the_kernel_cache(extension, capsys):
    """``verlet compile`` (for a farm's machine image): the kernels are compiled or loaded into
    the user's kernel cache, whose folder it names and which then holds them."""
    import os
    _, _, cli = _addon()
    assert cli.main(["compile"]) == 0
    out = capsys.readouterr().out
    assert "solver kernels ready in" in out, out
    folder = out.rsplit("kernel cache: ", 1)[1].rstrip(")\n")
    indexes = [f for _, _, files in os.walk(folder) for f in files if f.endswith(".nbi")]
    assert any(f.startswith("compiled_loop.run_substeps") for f in indexes), (folder, indexes)
    # and the mark of a finished warm-up: a farm image prepared so shows no compile message
    marks = [f for _, _, files in os.walk(folder) for f in files if f.endswith(".done")]
    assert any(f.startswith("warmed_up-") for f in marks), (folder, marks)
    assert cli.main(["compile"]) == 0 and "ready in 0.0 s" in capsys.readouterr().out


def test_compile_tuned(extension, capsys, monkeypatch):
    """``verlet compile --tuned``: kernels tuned for this CPU (a dev checkout ships none, so they
    are what ran); refused, with the reason, in a session that already loaded portable ones
    (the CPU target is fixed once Numba generated code)."""
    _, _, cli = _addon()
    backend = sys.modules[cli.__name__.rsplit(".", 2)[0] + ".solver.backend"]
    assert cli.main(["compile", "--tuned"]) == 0
    out = capsys.readouterr().out
    # the counts are this process's: other tests may have compiled the kernels in it
    assert re.search(r"\(tuned for this CPU: \d+ compiled, \d+ loaded from the cache;", out), out
    monkeypatch.setattr(backend, "kernel_target", lambda: {"target": "x86-64-v3", "seeded": 9})
    assert cli.main(["compile", "--tuned"]) == 1
    assert "already loaded portable kernels" in capsys.readouterr().err


def test_bake_default_range_matches_the_operator(extension, tmp_path):
    bake, cache, cli = _addon()
    c, _ = _saved_scene(tmp_path, frames=(1, 8))
    assert cli.main(["bake", "--no-save"]) == 0
    assert not os.path.exists(tmp_path / "cli.blend1")        # --no-save: not written
    first = open(cache.path_for(c.verlet.cache_id), "rb").read()
    scenes.bake_op()
    assert open(cache.path_for(c.verlet.cache_id), "rb").read() == first


@pytest.mark.parametrize("argv, words", [
    ([], "expected a command"),
    (["render"], "invalid choice"),
    (["bake", "--frames", "one:ten"], "--frames expects A:B"),
    (["bake", "--frames", "9:2"], "9..2"),
    (["bake", "--scene", "Nope"], "no scene named 'Nope'"),
    (["bake", "--pc2", "/nonexistent/verlet"], "does not exist"),
    (["bake", "--bogus"], "unrecognized arguments"),
    (["bake", "--frames", "3"], "--frames expects A:B"),
    (["bake", "--alembic", "--no-save"], "expected one argument"),      # an unset $OUT
    (["bake", "--alembic", ""], "--alembic was given an empty value"),
    (["bake", "--scene", " ", "--pc2", ""], "--pc2, --scene was given an empty value"),
])
def test_bad_arguments_exit_1_with_a_message(extension, tmp_path, capsys, argv, words):
    _, cache, cli = _addon()
    _saved_scene(tmp_path)
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert words in err and err.startswith("verlet:"), err
    assert not os.path.exists(tmp_path / "verlet_cache")


def test_bad_scene_exits_1_naming_the_object(extension, tmp_path, capsys):
    _, _, cli = _addon()
    c, _ = _saved_scene(tmp_path)
    c.verlet.pin_group = "Nope"
    assert cli.main(["bake"]) == 1
    err = capsys.readouterr().err
    assert "Cloth" in err and "'Nope'" in err


def test_unwritable_alembic_target_exits_1_before_baking(extension, tmp_path, capsys):
    _, _, cli = _addon()
    c, _ = _saved_scene(tmp_path)
    (tmp_path / "blocker").write_text("a file where a folder must go")
    assert cli.main(["bake", "--alembic", str(tmp_path / "blocker" / "x.abc")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("verlet: --alembic") and "blocker" in err and "is a file" in err
    assert not (tmp_path / "verlet_cache").exists() and not c.get("verlet_baked")


def test_export_failing_after_the_bake_leaves_blend_and_cache_consistent(extension, tmp_path,
                                                                          capsys, monkeypatch):
    """The bake rewrote the cache files; the .blend is saved with it (exit 1 for the export),
    so reopening plays exactly the files on disk."""
    bake, cache, cli = _addon()
    from verlet_physics.addon import exports
    _saved_scene(tmp_path, frames=(1, 6))

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exports, "write_alembic", broken)
    assert cli.main(["bake", "--frames", "2:5", "--alembic", str(tmp_path / "x.abc")]) == 1
    out = capsys.readouterr()
    assert "Alembic export failed" in out.err and "No space left" in out.err
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "cli.blend"))
    c = bpy.data.objects["Cloth"]
    assert c.get("verlet_baked") and c.verlet.cache_id      # the .blend knows its bake
    header, fr = cache.read(c.verlet.cache_id)
    assert (header["frame_start"], header["frame_end"]) == (2, 5)
    bpy.context.scene.frame_set(4)
    assert c["verlet_status"] == "Baked 2-5, on disk"
    np.testing.assert_array_equal(scenes.display_key(c), fr[2])
    assert "with the new bake" in out.out


def test_unsaved_file_is_refused_or_saved_where_asked(extension, tmp_path, capsys):
    bake, cache, cli = _addon()
    scenes.mixed_scene(n=6, frames=(1, 4))
    assert bpy.data.filepath == ""
    assert cli.main(["bake"]) == 1                     # the bake would be lost with the process
    err = capsys.readouterr().err
    assert "not saved" in err and "--save-as" in err
    assert not bpy.data.objects["Cloth"].get("verlet_baked") and not cache._memory
    target = tmp_path / "farm" / "shot.blend"
    assert cli.main(["bake", "--save-as", str(target)]) == 1      # no such folder
    target.parent.mkdir()
    assert cli.main(["bake", "--save-as", str(target)]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(target))
    c = bpy.data.objects["Cloth"]
    assert c.get("verlet_baked") and (target.parent / "verlet_cache" / "shot"
                                      / f"{c.verlet.cache_id}.vpc").is_file()


def test_frames_override_is_not_saved_into_the_scene(extension, tmp_path):
    bake, cache, cli = _addon()
    c, _ = _saved_scene(tmp_path, frames=(1, 10))
    sv = bpy.context.scene.verlet
    assert cli.main(["bake", "--frames", "3:6"]) == 0
    assert (sv.use_scene_range, sv.frame_start, sv.frame_end) == (True, 1, 10)
    assert "frame_start" not in sv.keys() and "frame_end" not in sv.keys()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "cli.blend"))
    sv = bpy.context.scene.verlet
    assert (sv.use_scene_range, sv.frame_start, sv.frame_end) == (True, 1, 10)
    header, _ = cache.read(bpy.data.objects["Cloth"].verlet.cache_id)
    assert (header["frame_start"], header["frame_end"]) == (3, 6)


def test_progress_lines_with_ms_per_frame(extension, tmp_path, capsys):
    import re
    _, _, cli = _addon()
    _saved_scene(tmp_path, frames=(1, 12))
    assert cli.main(["bake", "--progress-every", "5"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("verlet: frame")]
    assert [int(ln.split()[2]) for ln in lines] == [6, 11, 12]
    assert all(re.search(r"\d+\.\d ms/frame", ln) for ln in lines), lines
    assert "(5/11, 45%)" in lines[0]
    assert cli.main(["bake", "--progress-every", "0"]) == 0
    assert "verlet: frame" not in capsys.readouterr().out


def test_exit_status_of_a_real_process(extension, tmp_path):
    """A separate Python with bpy: opens the .blend, registers the extension, runs main(argv)
    and exits with its code, as ``blender -b scene.blend -c verlet ...`` does."""
    from conftest import ROOT
    _saved_scene(tmp_path, frames=(1, 6))
    c = bpy.data.objects["Cloth"]
    bpy.ops.wm.save_mainfile()

    def run(*argv):
        code = (
            "import sys, bpy\n"
            f"sys.path.insert(0, {os.path.join(ROOT, 'tests')!r})\n"
            f"bpy.ops.wm.open_mainfile(filepath={str(tmp_path / 'cli.blend')!r})\n"
            "from conftest import load_extension\n"
            "load_extension().register()\n"
            "from verlet_physics.addon import cli\n"
            f"sys.exit(cli.main({list(argv)!r}))\n")
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=180)

    ok = run("bake", "--frames", "1:4")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert len(list((tmp_path / "verlet_cache" / "cli").glob("*.vpc"))) == 2
    bad = run("bake", "--frames", "x")
    assert bad.returncode == 1 and "--frames expects A:B" in bad.stderr
    assert run("bake", "--help").returncode == 0
    del c
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "cli.blend"))   # the saved result
    c = bpy.data.objects["Cloth"]
    cid = c.verlet.cache_id
    assert c.get("verlet_baked") and c["verlet_cache"] == f"//verlet_cache/cli/{cid}.vpc"
    assert (tmp_path / "verlet_cache" / "cli" / f"{cid}.vpc").is_file()
    from verlet_physics.addon import bake
    header, fr = bake.load(c)
    assert (header["frame_start"], header["frame_end"]) == (1, 4)
    bpy.context.scene.frame_set(3)
    np.testing.assert_array_equal(scenes.display_key(c), fr[2])


def test_negative_frames_and_blend_relative_outputs(extension, tmp_path, capsys):
    """--frames -3:4 is a range (argparse took -3:4 for an option); '//' outputs land beside
    the .blend, as Blender resolves them, wherever the command runs from."""
    _, cache, cli = _addon()
    c, _ = _saved_scene(tmp_path)
    (tmp_path / "pc2").mkdir()
    here = os.getcwd()
    os.chdir(tmp_path / "pc2")                      # not the .blend's folder
    try:
        code = cli.main(["bake", "--frames", "-3:4", "--pc2", "//pc2",
                         "--alembic", "//abc/-take2.abc"])
    finally:
        os.chdir(here)
    assert code == 0, capsys.readouterr().err
    header, fr = cache.read(c.verlet.cache_id)
    assert (header["frame_start"], header["frame_end"]) == (-3, 4) and len(fr) == 8
    assert (tmp_path / "pc2" / "Cloth.pc2").is_file()
    assert (tmp_path / "abc" / "-take2.abc").stat().st_size > 0
    assert not (tmp_path / "pc2" / "pc2").exists()


def test_an_alembic_target_that_is_a_folder_is_refused_before_baking(extension, tmp_path,
                                                                   capsys):
    _, _, cli = _addon()
    c, _ = _saved_scene(tmp_path)
    (tmp_path / "renders").mkdir()
    assert cli.main(["bake", "--alembic", str(tmp_path / "renders")]) == 1
    err = capsys.readouterr().err
    assert "is a folder" in err and "shot.abc" in err
    assert not (tmp_path / "verlet_cache").exists() and not c.get("verlet_baked")
