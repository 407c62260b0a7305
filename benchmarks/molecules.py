"""Where benchmarks find the shared benchmark geometries.

    from benchmarks.molecules import molecule_path
    path = molecule_path("113_Taxol")          # -> pathlib.Path of 113_Taxol.xyz

Search order: the folder named by $HARTREE_MOLECULES, ../shared/molecules beside the
checkout (the project's shared material), tests/gpu/data (committed copies of a few), and
.dev/molecules (copies carried to the GPU machine, where ../shared does not travel).
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def search_dirs():
    """Folders searched for <name>.xyz, in order."""
    dirs = []
    if os.environ.get("HARTREE_MOLECULES"):
        dirs.append(Path(os.environ["HARTREE_MOLECULES"]))
    dirs += [ROOT.parent / "shared" / "molecules", ROOT / "tests" / "gpu" / "data", ROOT / ".dev" / "molecules"]
    return dirs


def molecule_path(name):
    """Path of the geometry `name` (with or without .xyz); FileNotFoundError naming the
    folders searched when it is in none of them."""
    fname = name if name.endswith(".xyz") else name + ".xyz"
    for d in search_dirs():
        if (d / fname).is_file():
            return d / fname
    raise FileNotFoundError(
        f"{fname} not found in "
        + ", ".join(str(d) for d in search_dirs())
        + " (set HARTREE_MOLECULES to the folder that holds it)"
    )
