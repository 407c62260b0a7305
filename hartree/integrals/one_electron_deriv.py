"""First derivatives of the one-electron integrals, contracted with densities (numba).

The SCF gradient needs (Pople, Krishnan, Schlegel & Binkley, Int. J. Quantum Chem. Symp.
13, 225 (1979), eq. 9)

    dE_1/dX = sum_mn D_mn d<m|T + V|n>/dX - sum_mn W_mn d<m|n>/dX,

D the total density, W the energy-weighted density, both symmetric.  Differentiating a
cartesian Gaussian by its centre (Obara & Saika, J. Chem. Phys. 84, 3963 (1986), eq. 20)

    d/dA_x phi_a = 2 alpha phi_(a + 1_x) - a_x phi_(a - 1_x)                           (1)

turns every derivative into the operator (aX)_ij = 2a X_(i+1)j - i X_(i-1)j on the x factor of
the 1-D products, a rule of :mod:`hartree.integrals.os_program` (``derivative``), applied to
the 1-D values of the overlap, of the kinetic energy (f(l) of the differentiated shell stays
that of the original shell).  Because the operators and densities are symmetric,
sum_mn D_mn d<m|O|n> = 2 sum_mn D_mn <dm|O|n>: only the bra is differentiated, over all
ordered shell pairs.  The nuclear attraction also moves with its nucleus C; translational
invariance of <m| 1/|r - C| |n> gives

    d/dC <m|V_C|n> = -(d/dA + d/dB) <m|V_C|n>,                                         (2)

so each nucleus's term is computed once, added to the atom of the bra and subtracted from
the atom C (the Hellmann-Feynman part).  Densities are cartesian (``cart_loc`` order): a
spherical density D is handed in as T D T^T with T the cart->spherical blocks.
"""

import numba
import numpy as np

from hartree.integrals.one_electron import _basis_arrays, cart_xyz_table
from hartree.integrals.os_codegen import load_module
from hartree.integrals.rys import rys_table_array

#: largest l of a shell: the raised shell l + 1 must fit the tables of the kernels (l <= 6)
MAX_L_DERIV = 5


def one_electron_gradient(basis, dm_cart, wdm_cart, charges, coords, charge_atom, natm):
    """Per-atom gradient of the one-electron energy, (natm, 3), hartree/bohr.

    basis: hartree Basis (shells on atoms ``basis.shell_atom``); dm_cart, wdm_cart: total
    and energy-weighted densities in the *cartesian* AO basis (ncart, ncart), symmetric;
    charges (ncharge,) in e at coords (ncharge, 3) bohr, the nuclei of the attraction
    operator; charge_atom (ncharge,): the atom each charge moves with (-1: a fixed
    external charge, whose own gradient is not asked for).
    """
    lmax = int(basis.max_l) if basis.nshell else 0
    if lmax > MAX_L_DERIV:
        raise ValueError(f"one-electron derivatives support l <= {MAX_L_DERIV}, basis has l = {lmax}")
    l_, nprim, start, centre, expo, coef = _basis_arrays(basis)
    return load_module()._one_electron_gradient(
        np.array(basis.shell_atom, dtype=np.int64), l_, nprim, start, centre, expo, coef,
        np.array(basis.cart_loc, dtype=np.int64),
        np.ascontiguousarray(dm_cart, dtype=np.float64), np.ascontiguousarray(wdm_cart, dtype=np.float64),
        np.array(charges, dtype=np.float64).reshape(-1), np.array(coords, dtype=np.float64).reshape(-1, 3),
        np.array(charge_atom, dtype=np.int64).reshape(-1), cart_xyz_table(), rys_table_array(), int(natm),
        numba.get_num_threads(),
    )  # fmt: skip
