"""PNG pictures of isosurfaces (orbitals: + and - lobes in two colours) with atoms and bonds.

Surfaces come from marching cubes (scikit-image, Lewiner's variant) on the
lattice values, mapped from lattice indices to positions with the lattice axes;
matplotlib draws them off-screen (Agg) with simple shading.  The view looks along
the molecule's direction of least extent (the normal of a planar molecule), so
the nuclear framework is seen face on.
"""

import os

import numpy as np

from ..constants import BOHR_IN_ANGSTROM
from ..errors import InputError
from ..io.files import atomic_path

#: Default isovalues: orbitals (bohr^-3/2) and densities (bohr^-3).
ORBITAL_ISO = 0.05
DENSITY_ISO = 0.02

#: Colours of the positive and negative lobes.
POSITIVE_COLOUR = "#2a6fdb"
NEGATIVE_COLOUR = "#e8613c"

# Covalent radii (Angstrom) and colours for common elements; others get 1.5 Angstrom, grey-pink.
_RADIUS = {
    1: 0.31,
    5: 0.84,
    6: 0.76,
    7: 0.71,
    8: 0.66,
    9: 0.57,
    14: 1.11,
    15: 1.07,
    16: 1.05,
    17: 1.02,
    35: 1.20,
    53: 1.39,
}
_COLOUR = {
    1: "#f2f2f2",
    5: "#ffb5b5",
    6: "#505050",
    7: "#3050f8",
    8: "#ff0d0d",
    9: "#90e050",
    14: "#f0c8a0",
    15: "#ff8000",
    16: "#ffff30",
    17: "#1ff01f",
    35: "#a62929",
    53: "#940094",
}


def bonds(numbers, coords_angstrom, tolerance=1.2):
    """Pairs (i, j) whose distance is below tolerance x (sum of covalent radii)."""
    radii = np.array([_RADIUS.get(int(z), 1.5) for z in numbers])
    d = np.linalg.norm(coords_angstrom[:, None] - coords_angstrom[None], axis=-1)
    i, j = np.nonzero((d < tolerance * (radii[:, None] + radii[None])) & (d > 0.1))
    return [(a, b) for a, b in zip(i, j) if a < b]


def view_direction(coords, tilt=35.0):
    """(elevation, azimuth) in degrees: the axis of least spread of the atoms (the normal of a
    planar molecule), tilted by ``tilt`` degrees towards the second axis so that lobes above
    and below the molecular plane both show."""
    centred = coords - coords.mean(axis=0)
    if len(coords) < 3:
        normal, second = np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0])
    else:
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        normal, second = vt[-1], vt[1]
    t = np.radians(tilt)
    view = np.cos(t) * normal + np.sin(t) * second
    view /= np.linalg.norm(view)
    return float(np.degrees(np.arcsin(np.clip(view[2], -1, 1)))), float(np.degrees(np.arctan2(view[1], view[0])))


def shade(triangles, colour, light):
    """RGBA per triangle (m, 3, 3): Lambert shading |n . light| on top of 35 % ambient light."""
    from matplotlib.colors import to_rgb

    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-30)
    intensity = 0.35 + 0.65 * np.abs(normals @ light)
    rgb = np.clip(np.outer(intensity, to_rgb(colour)), 0.0, 1.0)
    return np.concatenate([rgb, np.ones((len(rgb), 1))], axis=1)


def isosurface(values, lattice, level, max_points=90):
    """(vertices (n, 3) in Angstrom, faces (m, 3)) of values == level, or None if none.

    Lattices finer than ``max_points`` per axis are sampled with a larger step.
    """
    from skimage.measure import marching_cubes

    if not values.min() < level < values.max():
        return None
    step = max(1, int(np.ceil(max(lattice.shape) / max_points)))
    verts, faces, _, _ = marching_cubes(values, level=level, step_size=step, allow_degenerate=False)
    positions = lattice.origin + verts @ lattice.axes
    return positions * BOHR_IN_ANGSTROM, faces


def render_png(path, molecule, lattice, values, iso, title=None, signed=True, overwrite=False, size=6.0):
    """Draw the isosurfaces +iso (and -iso when ``signed``) with atoms and bonds; write a PNG.

    values: lattice.shape array (a.u.); iso: positive isovalue (a.u.).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    if os.path.exists(path) and not overwrite:
        raise InputError(f"{path} already exists; use --overwrite to replace it")
    if not iso > 0:
        raise InputError(f"the isovalue must be positive, got {iso}")
    coords = np.asarray(molecule.coords) * BOHR_IN_ANGSTROM
    numbers = np.asarray(molecule.numbers)
    fig = plt.figure(figsize=(size, size), dpi=120)
    ax = fig.add_subplot(projection="3d")
    elev, azim = view_direction(coords)
    ax.view_init(elev=elev, azim=azim)
    e, a = np.radians(elev + 25.0), np.radians(azim - 30.0)  # light above and beside the viewer
    light = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    levels = [(iso, POSITIVE_COLOUR)] + ([(-iso, NEGATIVE_COLOUR)] if signed else [])
    for level, colour in levels:
        surface = isosurface(values, lattice, level)
        if surface is None:
            continue
        verts, faces = surface
        triangles = verts[faces]
        mesh = Poly3DCollection(triangles, facecolors=shade(triangles, colour, light), alpha=0.6, linewidths=0.0)
        ax.add_collection3d(mesh)
    for i, j in bonds(numbers, coords):
        ax.plot(*zip(coords[i], coords[j]), color="#303030", linewidth=2.5, zorder=5)
    ax.scatter(
        coords[:, 0],
        coords[:, 1],
        coords[:, 2],
        s=[260 * _RADIUS.get(int(z), 1.5) for z in numbers],
        c=[_COLOUR.get(int(z), "#ff1493") for z in numbers],
        edgecolors="black",
        linewidths=0.6,
        depthshade=False,
        zorder=6,
    )
    centre = 0.5 * (coords.min(axis=0) + coords.max(axis=0))
    half = 0.5 * float(np.max(coords.max(axis=0) - coords.min(axis=0))) + 2.0  # Angstrom
    for setter, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre):
        setter(c - half, c + half)
    ax.set_proj_type("ortho")
    ax.set_box_aspect((1, 1, 1), zoom=1.6)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=11)
    fig.subplots_adjust(left=0, right=1, bottom=0, top=0.94)
    try:
        with atomic_path(path) as tmp:  # hartree.io.files: whole file or none
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)
