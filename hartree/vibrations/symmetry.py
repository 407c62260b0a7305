"""Point group and rotational symmetry number of a molecule (for the thermochemistry).

The symmetry operations are found exhaustively, not guessed from candidate axes: every
operation R (proper or improper, about the centre of mass) maps an atom a onto an
equivalent atom a' (same element, same mass, same distance from the centre) and a second
atom b, not collinear with a and the centre, onto an equivalent b' with a'.b' = a.b.
Two non-collinear vectors and their images fix R up to its determinant, so trying every
(a', b') with det R = +1 and -1 and keeping the R that map the whole molecule onto itself
(every atom within ``tolerance`` bohr of an equivalent one) gives the whole group.

The Schoenflies symbol follows from the operations (the usual flowchart, e.g. Cotton,
Chemical Applications of Group Theory, 3rd ed., Wiley 1990, ch. 3): linear molecules
are D∞h (with inversion) or C∞v; two or more axes of order >= 3 make a cubic group (I,
Ih; O, Oh; T, Td, Th); otherwise the principal axis C_n (n >= 2) with n perpendicular
C2 axes gives Dnh / Dnd / Dn, without them Cnh / Cnv / S2n / Cn; no axis gives Cs, Ci, C1.

The rotational symmetry number sigma is the number of proper rotations (the identity
included) that map the molecule onto itself: the order of the rotational subgroup
(1 for C∞v, 2 for D∞h).  Atoms are equivalent only when element and mass agree, so
isotopic substitution lowers the symmetry (HOD: Cs, sigma = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Default tolerance (bohr): an operation is a symmetry of the molecule when every atom
#: lands within this distance of an equivalent atom.  Optimized geometries are symmetric
#: to about 1e-4 bohr; 0.01 bohr (0.005 Angstrom) accepts them and still tells apart real
#: distortions (Jahn-Teller, conformers), which are larger.
SYMMETRY_TOLERANCE = 0.01


@dataclass(frozen=True)
class PointGroup:
    """The symmetry of a molecule.

    symbol            Schoenflies symbol: 'C2v', 'D6h', 'Td', 'D∞h', 'C∞v', 'K' (one atom), ...
    symmetry_number   rotational symmetry number sigma (order of the rotational subgroup)
    operations        (nop, 3, 3) orthogonal matrices about the centre of mass, acting on
                      column vectors; empty for linear molecules and atoms (infinite groups)
    rotor             'atom' | 'linear' | 'nonlinear'
    """

    symbol: str
    symmetry_number: int
    operations: np.ndarray
    rotor: str


def centred(coords, masses):
    """(natm, 3) coordinates relative to the centre of mass (bohr)."""
    coords = np.asarray(coords, dtype=np.float64).reshape(-1, 3)
    masses = np.asarray(masses, dtype=np.float64)
    return coords - masses @ coords / masses.sum()


def is_linear(coords, masses, tolerance=SYMMETRY_TOLERANCE):
    """True when every atom lies within ``tolerance`` bohr of one line through the centre of
    mass (two or more atoms)."""
    r = centred(coords, masses)
    if len(r) < 2:
        return False
    axis = np.linalg.svd(r, full_matrices=False)[2][0]
    off_axis = r - np.outer(r @ axis, axis)
    return bool(np.max(np.linalg.norm(off_axis, axis=1)) < tolerance)


def _maps_onto_itself(op, coords, labels, tolerance):
    moved = coords @ op.T
    distance = np.linalg.norm(moved[:, None, :] - coords[None, :, :], axis=2)
    distance[labels[:, None] != labels[None, :]] = np.inf
    nearest = np.argmin(distance, axis=1)
    ok = distance[np.arange(len(coords)), nearest] < tolerance
    return bool(np.all(ok)) and len(set(nearest.tolist())) == len(coords)


def _frame(a, b):
    """Orthonormal frame (3, 3), columns: a, the part of b orthogonal to a, their product."""
    e1 = a / np.linalg.norm(a)
    e2 = b - (b @ e1) * e1
    e2 /= np.linalg.norm(e2)
    return np.column_stack([e1, e2, np.cross(e1, e2)])


def _equivalence_classes(coords, labels, tolerance):
    """Atom indices grouped by label and distance from the centre (within tolerance)."""
    radius = np.linalg.norm(coords, axis=1)
    classes = []
    for i in np.argsort(radius, kind="stable"):
        for members in classes:
            j = members[0]
            if labels[j] == labels[i] and abs(radius[j] - radius[i]) < tolerance:
                members.append(int(i))
                break
        else:
            classes.append([int(i)])
    return classes


def _reference_pair(coords, classes, tolerance):
    """Two atoms (a, b) away from the centre and not collinear with it, from the smallest
    classes, or None (all atoms on one line)."""
    radius = np.linalg.norm(coords, axis=1)
    size = {i: len(members) for members in classes for i in members}
    # small classes first (few images to try), far atoms first within a size (the frame's
    # direction errors, about tolerance / radius, move distant atoms least)
    atoms = sorted((i for i in range(len(coords)) if radius[i] > tolerance), key=lambda i: (size[i], -radius[i]))
    for a in atoms:
        for b in atoms:
            cross = np.linalg.norm(np.cross(coords[a], coords[b]))
            if cross > tolerance * max(np.linalg.norm(coords[a]), np.linalg.norm(coords[b]), 1.0):
                return a, b
    return None


def _class_of(classes, atom):
    return next(members for members in classes if atom in members)


def symmetry_operations(coords, labels, tolerance=SYMMETRY_TOLERANCE):
    """(nop, 3, 3) every orthogonal R with R r mapping the centred ``coords`` (natm, 3, bohr)
    onto themselves, atoms of equal ``labels`` interchanged (module docstring); needs two
    atoms not collinear with the origin (nonlinear molecules)."""
    coords = np.asarray(coords, dtype=np.float64)
    labels = np.asarray(labels)
    classes = _equivalence_classes(coords, labels, tolerance)
    pair = _reference_pair(coords, classes, tolerance)
    if pair is None:
        raise ValueError("symmetry_operations needs a nonlinear molecule")
    a, b = pair
    reference = _frame(coords[a], coords[b])
    dot = coords[a] @ coords[b]
    dot_slack = 2.0 * tolerance * (np.linalg.norm(coords[a]) + np.linalg.norm(coords[b]))
    found = []
    for a2 in _class_of(classes, a):
        for b2 in _class_of(classes, b):
            if a2 == b2 and a != b:
                continue
            if abs(coords[a2] @ coords[b2] - dot) > dot_slack:
                continue
            if np.linalg.norm(np.cross(coords[a2], coords[b2])) < 1e-12:
                continue
            image = _frame(coords[a2], coords[b2])
            for handedness in (1.0, -1.0):
                op = image @ np.diag([1.0, 1.0, handedness]) @ reference.T
                if _maps_onto_itself(op, coords, labels, tolerance) and not any(
                    np.allclose(op, other, atol=1e-6) for other in found
                ):
                    found.append(op)
    return np.array(found).reshape(-1, 3, 3)


def _rotation_axis_and_order(op):
    """(unit axis, order n) of a proper rotation by 2 pi k / n (k, n coprime); the axis
    of the identity is None."""
    angle = np.arccos(np.clip((np.trace(op) - 1.0) / 2.0, -1.0, 1.0))
    if angle < 1e-6:
        return None, 1
    w, v = np.linalg.eig(op)
    axis = np.real(v[:, np.argmin(np.abs(w - 1.0))])
    axis /= np.linalg.norm(axis)
    power = op.copy()
    for n in range(1, 241):
        if np.allclose(power, np.eye(3), atol=1e-6):
            return axis, n
        power = power @ op
    return axis, 0  # not of finite order: cannot happen for a molecule's symmetry


def _axes_by_order(proper):
    """[(unit axis, n)] of the distinct rotation axes (sign-free), n the highest order found."""
    axes = []
    for op in proper:
        axis, n = _rotation_axis_and_order(op)
        if axis is None:
            continue
        for k, (other, m) in enumerate(axes):
            if abs(abs(axis @ other) - 1.0) < 1e-6:
                axes[k] = (other, max(m, n))
                break
        else:
            axes.append((axis, n))
    return axes


def _improper_kinds(improper):
    """[(kind, unit axis or None, n)]: 'inversion', 'mirror' (axis = the plane's normal) or
    'rotoreflection' (S_n: rotation by 2 pi / n about the axis, then reflection in the
    plane perpendicular to it; n = 2 pi / |angle|, so S_n^k with k > 1 may give another n:
    only the presence of an S_2n is used)."""
    kinds = []
    for op in improper:
        if np.allclose(op, -np.eye(3), atol=1e-6):
            kinds.append(("inversion", None, 2))
            continue
        axis, n = _rotation_axis_and_order(-op)  # -op is proper: a rotation about the same axis
        if np.isclose(np.trace(op), 1.0, atol=1e-6):
            kinds.append(("mirror", axis, 1))
            continue
        # op = -C(theta) = S(theta + pi); its order as S_m follows from the angle of op itself
        angle = np.arccos(np.clip((np.trace(-op) - 1.0) / 2.0, -1.0, 1.0))
        m = int(round(2.0 * np.pi / (np.pi - angle))) if np.pi - angle > 1e-6 else 2
        kinds.append(("rotoreflection", axis, m))
    return kinds


def _parallel(u, v):
    return u is not None and v is not None and abs(abs(u @ v) - 1.0) < 1e-6


def _perpendicular(u, v):
    return u is not None and v is not None and abs(u @ v) < 1e-6


def schoenflies(operations):
    """Schoenflies symbol of a finite point group given as (nop, 3, 3) matrices."""
    ops = np.asarray(operations).reshape(-1, 3, 3)
    det = np.linalg.det(ops) if len(ops) else np.zeros(0)
    proper, improper = ops[det > 0], ops[det < 0]
    axes = _axes_by_order(proper)
    kinds = _improper_kinds(improper)
    has_inversion = any(kind == "inversion" for kind, _, _ in kinds)
    mirrors = [axis for kind, axis, _ in kinds if kind == "mirror"]
    high = [axis for axis, n in axes if n >= 3]
    if len(high) >= 2:  # cubic groups
        orders = {n for _, n in axes}
        if 5 in orders:
            return "Ih" if has_inversion else "I"
        if 4 in orders:
            return "Oh" if has_inversion else "O"
        if has_inversion:
            return "Th"
        return "Td" if mirrors else "T"
    if not axes:
        if mirrors:
            return "Cs"
        return "Ci" if has_inversion else "C1"
    n = max(m for _, m in axes)
    candidates = [axis for axis, m in axes if m == n]
    # D2d: of the three C2 axes the principal one is the S4 axis
    s4 = [axis for kind, axis, m in kinds if kind == "rotoreflection" and m == 2 * n]
    main = next((c for c in candidates if any(_parallel(c, s) for s in s4)), candidates[0])
    perpendicular_c2 = sum(1 for axis, m in axes if m % 2 == 0 and _perpendicular(axis, main))
    sigma_h = any(_parallel(normal, main) for normal in mirrors)
    sigma_v = sum(1 for normal in mirrors if _perpendicular(normal, main))
    if perpendicular_c2 >= n:
        if sigma_h:
            return f"D{n}h"
        return f"D{n}d" if sigma_v >= n else f"D{n}"
    if sigma_h:
        return f"C{n}h"
    if sigma_v >= n:
        return f"C{n}v"
    if any(_parallel(axis, main) for axis in s4):
        return f"S{2 * n}"
    return f"C{n}"


def point_group(coords, masses, numbers, tolerance=SYMMETRY_TOLERANCE) -> PointGroup:
    """The :class:`PointGroup` of a molecule: ``coords`` (natm, 3) bohr, ``masses`` (natm,)
    u, ``numbers`` (natm,) atomic numbers; atoms are equivalent when number and mass agree."""
    masses = np.asarray(masses, dtype=np.float64)
    r = centred(coords, masses)
    labels = np.array([f"{int(z)}:{m:.6f}" for z, m in zip(np.asarray(numbers).ravel(), masses)])
    if len(r) == 1:
        return PointGroup("K", 1, np.zeros((0, 3, 3)), "atom")
    if is_linear(r, masses, tolerance):
        symmetric = _maps_onto_itself(-np.eye(3), r, labels, tolerance)
        return PointGroup("D∞h" if symmetric else "C∞v", 2 if symmetric else 1, np.zeros((0, 3, 3)), "linear")
    ops = symmetry_operations(r, labels, tolerance)
    proper = int(np.sum(np.linalg.det(ops) > 0))
    return PointGroup(schoenflies(ops), proper, ops, "nonlinear")
