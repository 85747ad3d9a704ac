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
