"""Shared by the UI tests (test_ui.py): a recording stand-in for UILayout, checked against
bpy.types.UILayout's RNA (panels cannot be drawn into a real layout without a window), and small
scene helpers. See test_ui.py's docstring."""

from types import SimpleNamespace

import pytest

from conftest import import_bpy

bpy = import_bpy()


# ---------------------------------------------------------------------- a recording UILayout
_UI = bpy.types.UILayout.bl_rna
_ICONS = {i.identifier for i in _UI.functions["label"].parameters["icon"].enum_items}


class FakeLayout:
    """Stands in for UILayout: records calls into a shared log and validates them against RNA."""

    def __init__(self, log=None, parent=None):
        object.__setattr__(self, "log", [] if log is None else log)
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "attrs", {"enabled": True, "active": True})

    def __setattr__(self, name, value):
        assert name in _UI.properties, f"UILayout has no attribute {name!r}"
        self.attrs[name] = value

    def __getattr__(self, name):
        if name in ("enabled", "active", "use_property_split", "use_property_decorate",
                    "alignment"):
            return self.attrs.get(name)
        raise AttributeError(f"FakeLayout does not support UILayout.{name}")

    def _check(self, func, kwargs):
        params = _UI.functions[func].parameters
        for key in kwargs:
            assert key in params, f"UILayout.{func}() has no keyword {key!r}"
        icon = kwargs.get("icon")
        if icon is not None:
            assert icon in _ICONS, f"unknown icon {icon!r}"

    def effective(self, attr):
        node = self
        while node is not None:
            if node.attrs.get(attr) is False:
                return False
            node = node.parent
        return True

    def _child(self, func, kwargs):
        self._check(func, kwargs)
        return FakeLayout(self.log, self)

    def column(self, **kwargs):
        return self._child("column", kwargs)

    def row(self, **kwargs):
        return self._child("row", kwargs)

    def box(self, **kwargs):
        return self._child("box", kwargs)

    def separator(self, **kwargs):
        self._check("separator", kwargs)

    def _record(self, what, **entry):
        entry.update(what=what, enabled=self.effective("enabled"), active=self.effective("active"))
        self.log.append(SimpleNamespace(**entry))

    def prop(self, data, prop, **kwargs):
        self._check("prop", kwargs)
        assert prop in data.bl_rna.properties, f"{data!r} has no property {prop!r}"
        self._record("prop", data=data, name=prop, text=kwargs.get("text"))

    def prop_search(self, data, prop, search_data, search_prop, **kwargs):
        self._check("prop_search", kwargs)
        assert prop in data.bl_rna.properties, f"{data!r} has no property {prop!r}"
        assert search_prop in search_data.bl_rna.properties, f"no collection {search_prop!r}"
        self._record("prop_search", data=data, name=prop, search=(search_data, search_prop))

    def operator(self, idname, **kwargs):
        self._check("operator", kwargs)
        props = SimpleNamespace()
        self._record("operator", name=idname, text=kwargs.get("text"), props=props)
        return props

    def label(self, **kwargs):
        self._check("label", kwargs)
        self._record("label", name=kwargs.get("text", ""), icon=kwargs.get("icon", "NONE"))

    def menu(self, menu, **kwargs):
        self._check("menu", kwargs)
        self._record("menu", name=menu, text=kwargs.get("text"))


def draw(panel_id, obj, method="draw"):
    """Run a panel's draw (or draw_header_preset) for obj; returns the FakeLayout's log."""
    layout = FakeLayout()
    context = SimpleNamespace(object=obj, scene=bpy.context.scene)
    getattr(getattr(bpy.types, panel_id), method)(SimpleNamespace(layout=layout), context)
    return layout.log


def drawn(log, what="prop"):
    return [e.name for e in log if e.what == what]


# ---------------------------------------------------------------------- helpers
def add_object(name, kind="NONE", primitive="plane", **kwargs):
    getattr(bpy.ops.mesh, f"primitive_{primitive}_add")(**kwargs)
    obj = bpy.context.object
    obj.name = name
    obj.verlet.kind = kind
    return obj


def activate(obj):
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)


def settings_snapshot(obj):
    s = obj.verlet
    return {p.identifier: (tuple(getattr(s, p.identifier)) if getattr(p, "is_array", False)
                           else getattr(s, p.identifier))
            for p in s.bl_rna.properties if p.identifier not in ("rna_type", "name")}


@pytest.fixture
def ui(extension):
    from verlet_physics.addon import panels, presets_menu, properties, state
    return SimpleNamespace(panels=panels, presets_menu=presets_menu, properties=properties,
                           state=state)
