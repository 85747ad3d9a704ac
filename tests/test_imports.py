"""No import cycle among the project's modules. lint-imports (.importlinter) checks the layers and cycles between the
siblings of a package; this checks every module of core, ui and pages, a package's __init__ with its own children
included, with imports inside functions and under `if TYPE_CHECKING:` counted as edges."""

import grimp


def test_no_import_cycle_among_the_projects_modules():
    graph = grimp.build_graph("core", "ui", "pages", cache_dir=None)
    cycles = {}
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:  # module → imported → … → module
                cycles.setdefault(frozenset(back), " → ".join((module, *back)))
    shown = sorted(cycles.values(), key=len)[:10]  # the shortest first: one wrong import can close hundreds
    assert not cycles, f"{len(cycles)} import cycles, e.g.:\n" + "\n".join(shown)


def test_cores_folders_are_its_layers():
    """`ls core` reads as the layer contract: at most six modules at core's root, every package of core named in
    the contract's layers (a layer, or one part of a layer), and every module of core inside one of them."""
    import configparser
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "core"
    modules = sorted(p.stem for p in root.glob("*.py"))
    assert len(modules) <= 6, modules
    packages = sorted(p.parent.name for p in root.glob("*/__init__.py"))
    ini = configparser.ConfigParser()
    ini.read(root.parent / ".importlinter")
    layers = ini["importlinter:contract:core"]["layers"]
    named = set(re.findall(r"[A-Za-z_]\w*", "\n".join(line.split("#")[0] for line in layers.splitlines())))
    assert set(packages) <= named, sorted(set(packages) - named)
    assert {m for m in modules if m != "__init__"} <= named, sorted(set(modules) - named - {"__init__"})
    assert named <= set(packages) | set(modules), sorted(named - set(packages) - set(modules))
