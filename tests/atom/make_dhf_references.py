"""Regenerate tests/atom/data/dhf_references.json with PySCF's 4-component DHF.

Run:  python tests/atom/make_dhf_references.py [elements...]   (minutes per heavy atom)
      python tests/atom/make_dhf_references.py Ne:kappa            (separate p1/2, p3/2 exponents)

Same uncontracted basis (tests/atom/bases.py), same speed of light
(hartree.atom.DEFAULT_LIGHT_SPEED), Coulomb only (PySCF's DHF defaults: with_ssss=True,
with_gaunt=False, with_breit=False), point nucleus and nucmod='G' (Visscher-Dyall
exponent with PySCF's ISOTOPE_MAIN mass numbers, the same as hartree's MASS_NUMBERS);
PySCF's overlap_zero_eigenvalue_threshold is lowered to 1e-15 so that it keeps every function.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import pyscf.scf.hf  # noqa: E402
from bases import DHF_BASES, KAPPA_BASES, pyscf_basis, pyscf_kappa_basis  # noqa: E402
from pyscf import gto, lib, scf  # noqa: E402

from hartree.atom import DEFAULT_LIGHT_SPEED  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "data", "dhf_references.json")


def pyscf_dhf(element, nucmod, per_kappa=False):
    """PySCF DHF energy (Eh); per_kappa: the basis of bases.KAPPA_BASES (p1/2 and p3/2 shells apart)."""
    pyscf.scf.hf.overlap_zero_eigenvalue_threshold = 1e-15
    lib.param.LIGHT_SPEED = DEFAULT_LIGHT_SPEED
    basis = pyscf_kappa_basis(element) if per_kappa else pyscf_basis(element)
    mol = gto.M(atom=f"{element} 0 0 0", basis=basis, verbose=0, nucmod="G" if nucmod == "gaussian" else None)
    mf = scf.DHF(mol)
    assert mf.with_ssss and not mf.with_gaunt and not mf.with_breit
    mf.conv_tol = 1e-12
    energy = mf.kernel()
    assert mf.converged
    return float(energy)


def main(elements):
    """elements: names of DHF_BASES, or 'Ne:kappa' for the per-κ basis of KAPPA_BASES."""
    data = json.load(open(OUT)) if os.path.exists(OUT) else {}
    data["light_speed"] = DEFAULT_LIGHT_SPEED
    for element in elements:
        name, _, kind = element.partition(":")
        for model in ("point", "gaussian"):
            t = time.time()
            data.setdefault(element, {})[model] = pyscf_dhf(name, model, per_kappa=kind == "kappa")
            print(element, model, data[element][model], f"{time.time() - t:.1f} s", flush=True)
            with open(OUT, "w") as f:
                json.dump(data, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:] or [e for e in DHF_BASES if e not in ("He", "Be")] + [f"{e}:kappa" for e in KAPPA_BASES])
