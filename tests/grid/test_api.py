"""hartree.grid.api.on_lattice: the notebook entry point."""

import numpy as np
import pytest
from pyscf.dft import numint

from hartree.errors import InputError
from hartree.grid import lattice_around
from hartree.grid.api import on_lattice
from hartree.io.molden import write_molden

from .conftest import WATER, fake_result


def test_on_lattice_from_result_and_from_file(tmp_path):
    result, pmol = fake_result(WATER, "cc-pvdz", seed=8)
    lattice, values = on_lattice(result, mo="homo,lumo", density=True, spacing=0.5, margin=1.0, unit="bohr")
    assert set(values) == {"homo", "lumo", "density"}
    ao = numint.eval_ao(pmol, lattice.points())
    np.testing.assert_allclose(values["homo"].ravel(), ao @ result.mo_coeff[:, 4], atol=1e-10, rtol=0)
    np.testing.assert_allclose(values["lumo"].ravel(), ao @ result.mo_coeff[:, 5], atol=1e-10, rtol=0)
    dm = (result.mo_coeff * result.mo_occ) @ result.mo_coeff.T
    np.testing.assert_allclose(values["density"].ravel(), numint.eval_rho(pmol, ao, dm), atol=1e-10, rtol=0)
    write_molden(tmp_path / "w.molden", result)
    same = lattice_around(result.molecule.coords, 0.5, 1.0, unit="bohr")
    _, from_file = on_lattice(tmp_path / "w.molden", lattice=same, dtype=np.float32)
    assert list(from_file) == ["homo"] and from_file["homo"].dtype == np.float32
    np.testing.assert_allclose(from_file["homo"], values["homo"], atol=1e-6 * np.abs(values["homo"]).max())
    with pytest.raises(InputError, match="twice"):
        on_lattice(result, mo="homo,5", spacing=0.5, unit="bohr")
