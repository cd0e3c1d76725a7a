"""The Blender side of Verlet Physics: the only package that imports bpy.

Data flows one way each frame: Blender objects -> bridge -> solver arrays -> solver step ->
arrays -> bridge -> Blender. This package holds the Blender ends of that flow.
"""

from . import cli, kernels, operators, panels, preferences, presets_menu, properties

_modules = (preferences, kernels, properties, presets_menu, panels, operators, cli)


def register():
    for m in _modules:
        m.register()


def unregister():
    for m in reversed(_modules):
        m.unregister()
