"""Multi-frame XYZ trajectories: written by ``hartree opt --trajectory``, read by ``--restart``.

One frame per optimization step, each an ordinary XYZ block (Angstrom) whose comment line
reads ``step N energy E Eh charge=Q multiplicity=M`` (plus ``rejected`` or ``converged``);
VMD, Jmol, Avogadro and ASE read the file as an animation.  A trajectory written by
another program (any multi-frame XYZ) can be read for a restart too.
"""

from __future__ import annotations

from ..errors import InputError
from ..io.files import read_text
from ..molecule import Molecule


def frame_comment(step, number=None):
    """The comment line of one step's frame (``number`` overrides the step number)."""
    n = step.step if number is None else number
    flag = " converged" if step.converged else (" rejected" if step.rejected else "")
    mol = step.molecule
    return f"step {n} energy {step.energy:.12f} Eh charge={mol.charge} multiplicity={mol.multiplicity}{flag}"


def trajectory_text(steps, first_number=None, before=()):
    """XYZ text of the frames ``before`` (text of earlier frames, kept as they are) followed
    by one frame per :class:`OptimizationStep`; with ``first_number`` the steps are
    numbered from it (a restart continues the numbering of the trajectory it read)."""
    parts = [f if f.endswith("\n") else f + "\n" for f in before]
    for k, step in enumerate(steps):
        number = None if first_number is None else first_number + k
        parts.append(step.molecule.to_xyz(comment=frame_comment(step, number)))
    return "".join(parts)


def read_frames(path, what="trajectory"):
    """The frames of a multi-frame XYZ file, as a list of XYZ texts (one per frame).
    InputError naming the file and line for a file that is not one."""
    lines = read_text(path, what).splitlines()
    frames, i = [], 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        head = lines[i].split()
        if len(head) != 1 or not head[0].isdigit() or int(head[0]) < 1:
            raise InputError(
                f"{what} {path} line {i + 1}: expected the atom count of a frame, got {lines[i].strip()!r}"
            )
        count = int(head[0])
        if i + count + 2 > len(lines):
            raise InputError(f"{what} {path} line {i + 1}: the frame announces {count} atoms but the file ends early")
        frames.append("\n".join(lines[i : i + count + 2]) + "\n")
        i += count + 2
    if not frames:
        raise InputError(f"{what} {path} has no frames")
    return frames


def restart_geometry(path, molecule):
    """``molecule`` (its atoms, charge and multiplicity) at the coordinates of the last
    frame of the trajectory ``path``; InputError when that frame has other atoms."""
    frames = read_frames(path, "--restart trajectory")
    try:
        last = Molecule.from_string(frames[-1], charge=molecule.charge, multiplicity=molecule.multiplicity)
    except InputError as error:
        raise InputError(f"--restart {path}, last frame: {error}") from None
    if last.natm != molecule.natm:
        raise InputError(f"--restart {path}: the last frame has {last.natm} atoms, the molecule {molecule.natm}")
    if last.symbols != molecule.symbols:
        k = next(i for i, (a, b) in enumerate(zip(last.symbols, molecule.symbols)) if a != b)
        raise InputError(
            f"--restart {path}: atom {k + 1} of the last frame is {last.symbols[k]}, of the molecule "
            f"{molecule.symbols[k]}; the atoms must be the same and in the same order"
        )
    return molecule.replace(coords=last.coords)
