"""Verlet Physics: a Blender extension (root module).

Thin by design: importing this package does no bpy work, so the solver below it stays importable
and testable without Blender. register() / unregister() delegate to addon/, the only package that
imports bpy.
"""


def register():
    from .addon import register as _register
    _register()


def unregister():
    from .addon import unregister as _unregister
    _unregister()
