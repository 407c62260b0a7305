"""Lattice values written slab by slab: any lattice that fits on disk can be written.

A lattice is cut into slabs of planes along its first (slowest) axis
(:meth:`hartree.grid.lattice.Lattice.slab`); each slab is evaluated
(:func:`hartree.grid.api.compute`) and appended to every output at once:

* cube files (several orbitals in one file, or one quantity per file): the data block of
  a cube is in lattice order, so slabs follow each other (:func:`hartree.io.cube.data_bytes`);
* ``.npy`` arrays: a memory map of the whole array in the output file, filled slab by slab;
* one HDF5 file: a dataset per quantity, filled slab by slab;
* quantities that need the whole array in memory (PNG pictures) are kept whole.

Before the first slab, :func:`plan_memory` and :func:`check_outputs_fit` compare what is
asked with the memory and disk there are (:mod:`hartree.resources`) and end with one
:class:`~hartree.errors.ResourceError` (exit code 5) when it cannot fit.  Every file is
written through :func:`hartree.io.files.atomic_path`: on any error or signal no partial
output remains.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from .. import interruption
from ..io import cube as cube_io
from ..io.files import atomic_output, atomic_path
from ..resources import available_memory, check_disk, check_memory
from .api import compute

#: Largest slab (bytes of values and their formatted text) held at once.
SLAB_BYTES = 1 << 30
#: Bytes per value and point while a slab is evaluated and formatted (the float64 values,
#: a reordered copy, 13 characters of cube text and the evaluation's own blocks).
BYTES_PER_VALUE = 40


@dataclass
class Outputs:
    """What to write for one lattice.

    cubes: [(path, labels, orbital numbers or None, two comment lines)]; npy: {label: path};
    h5: path or None, with h5_labels (quantities stored under ``values/``), h5_datasets
    ({name: array} stored as they are) and h5_attrs; keep: labels whose whole arrays are
    returned (pictures)."""

    cubes: list = field(default_factory=list)
    npy: dict = field(default_factory=dict)
    h5: str | None = None
    h5_labels: tuple = ()
    h5_datasets: dict = field(default_factory=dict)
    h5_attrs: dict = field(default_factory=dict)
    keep: tuple = ()


def plan_memory(lattice, nval, nkeep, itemsize):
    """Planes per slab: the largest slab within SLAB_BYTES and a quarter of the memory left
    after the whole arrays kept for pictures.  ResourceError when those arrays (with the
    marching-cube work space) or a single plane do not fit."""
    npoints = lattice.npoints
    keep_bytes = nkeep * npoints * itemsize
    if nkeep:  # marching cubes works on a float64 copy and a few masks of the volume
        check_memory(
            keep_bytes + 4 * npoints * 8,
            f"drawing pictures of a lattice of {npoints:,} points",
            "use a larger --spacing for --png, or write --cube/--npy only",
        )
    plane = lattice.shape[1] * lattice.shape[2] * nval * BYTES_PER_VALUE
    check_memory(
        keep_bytes + plane,
        f"one plane of {lattice.shape[1]} x {lattice.shape[2]} lattice points",
        "use a larger --spacing",
    )
    have = available_memory()
    budget = SLAB_BYTES if have is None else min(SLAB_BYTES, max(have - keep_bytes, 0) // 4)
    return max(1, min(lattice.shape[0], budget // plane))


def check_outputs_fit(lattice, outputs, itemsize):
    """ResourceError when an output file would not fit its disk or the file-size limit;
    returns the bytes all outputs take."""
    sizes = [(path, cube_io.cube_size(lattice.shape, len(labels)) + 4096) for path, labels, _, _ in outputs.cubes]
    sizes += [(path, lattice.npoints * itemsize + 128) for path in outputs.npy.values()]
    if outputs.h5:
        sizes.append((outputs.h5, len(outputs.h5_labels) * lattice.npoints * itemsize + 65536))
    for path, nbytes in sizes:
        check_disk(path, nbytes, "use a larger --spacing")
    total = sum(n for _, n in sizes)
    if len(sizes) > 1:
        check_disk(sizes[0][0], total, "use a larger --spacing or fewer outputs")
    return total


class _Writers:
    """The open outputs of one lattice (each through atomic_path, on one ExitStack)."""

    def __init__(self, stack, lattice, outputs, dtype, header):
        self.cubes = []
        for path, labels, orbitals, comments in outputs.cubes:
            handle = stack.enter_context(atomic_output(path, binary=True))
            handle.write(header(labels, orbitals, comments).encode("ascii"))
            self.cubes.append((handle, labels))
        self.npy = {}
        for label, path in outputs.npy.items():
            tmp = stack.enter_context(atomic_path(path))
            array = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=lattice.shape)
            stack.callback(_close_memmap, array)
            self.npy[label] = array
        self.h5 = {}
        if outputs.h5:
            import h5py

            tmp = stack.enter_context(atomic_path(outputs.h5))
            handle = stack.enter_context(h5py.File(tmp, "w"))
            for key, value in outputs.h5_attrs.items():
                handle.attrs[key] = value
            for name, value in outputs.h5_datasets.items():
                handle[name] = value
            self.h5 = {
                label: handle.create_dataset(f"values/{label}", shape=lattice.shape, dtype=dtype)
                for label in outputs.h5_labels
            }

    def write(self, start, stop, values):
        """Append the slab of planes start..stop-1 ({label: (stop - start, n2, n3) array})."""
        for handle, labels in self.cubes:
            handle.write(cube_io.data_bytes(np.stack([values[label] for label in labels])))
        for label, array in self.npy.items():
            array[start:stop] = values[label]
        for label, dataset in self.h5.items():
            dataset[start:stop] = values[label]


def _close_memmap(array):
    """Flush a memory-mapped .npy array to its file (before the sync and rename; the
    mapping itself goes with the array, and a rename does not disturb it on POSIX)."""
    array.flush()


def write_lattice(wfn, items, lattice, outputs, dtype=np.float64, device="cpu", progress=None):
    """Evaluate ``items`` on ``lattice`` slab by slab and write ``outputs``.

    items: [(label, kind, choice)] as :func:`hartree.grid.api.requested` gives;
    returns ({label: whole array} for ``outputs.keep``, {label: sum of values over the
    lattice}) -- the sums times the voxel volume are the integrals of densities.
    progress: called with the fraction done after each slab.
    """
    itemsize = np.dtype(dtype).itemsize
    labels = [label for label, _, _ in items]
    keep = {label: np.empty(lattice.shape, dtype=dtype) for label in outputs.keep}
    planes = plan_memory(lattice, len(labels), len(keep), itemsize)
    check_outputs_fit(lattice, outputs, itemsize)
    numbers = np.asarray(wfn.molecule.numbers)

    def header(cube_labels, orbitals, comments):
        return cube_io.header_text(
            numbers,
            numbers.astype(float),
            np.asarray(wfn.molecule.coords),
            lattice.origin,
            lattice.axes,
            lattice.shape,
            len(cube_labels),
            orbitals,
            comments,
        )

    sums = dict.fromkeys(labels, 0.0)
    with contextlib.ExitStack() as stack:
        writers = _Writers(stack, lattice, outputs, dtype, header)
        for start in range(0, lattice.shape[0], planes):
            interruption.check()  # a stop request whose exception Python lost
            stop = min(start + planes, lattice.shape[0])
            values = compute(wfn, items, lattice.slab(start, stop), dtype, device)
            writers.write(start, stop, values)
            for label in labels:
                sums[label] += float(values[label].sum(dtype=np.float64))
                if label in keep:
                    keep[label][start:stop] = values[label]
            if progress is not None:
                progress(stop / lattice.shape[0])
    return keep, sums
