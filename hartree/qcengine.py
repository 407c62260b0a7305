"""hartree as a QCEngine program: ``import hartree.qcengine`` registers it as "hartree".

    import qcengine
    import hartree.qcengine  # noqa: F401  (registers the harness)

    result = qcengine.compute(atomic_input, "hartree")    # an AtomicResult or FailedOperation

Drivers ``energy`` and ``gradient``; ``model.method`` rhf | uhf | rohf, ``model.basis`` any
basis hartree loads; ``keywords`` are SCF options (``conv_tol``, ``max_cycle``, ``level_shift``,
``guess``, ``cartesian``, ``device``, ...: :class:`hartree.scf.SCFOptions` and ``device``).  The
result document is the one ``hartree run --json`` (``--gradient``) writes
(:mod:`hartree.io.qcschema`), with the input's ``id`` and ``extras`` carried over.  Errors (a
bad molecule, an unknown keyword, an SCF that does not converge, a driver hartree lacks) are
raised as hartree's exceptions; ``qcengine.compute`` turns them into a FailedOperation.
QCEngine and qcelemental are imported by this module only.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import qcengine
from qcengine.programs.model import ProgramHarness

from ._version import __version__
from .errors import InputError

#: drivers the harness runs
DRIVERS = ("energy", "gradient")


class HartreeHarness(ProgramHarness):
    """The QCEngine harness of hartree (module docstring)."""

    _defaults: ClassVar[dict[str, Any]] = {
        "name": "hartree",
        "scratch": False,
        "thread_safe": False,
        "thread_parallel": True,
        "node_parallel": False,
        "managed_memory": False,
    }

    @staticmethod
    def found(raise_error: bool = False) -> bool:
        """hartree is importable wherever this module is."""
        return True

    def get_version(self) -> str:
        return __version__

    def compute(self, input_model, config):
        """Run the AtomicInput ``input_model`` (QCSchema v1 or v2); returns an AtomicResult of
        the same version."""
        if getattr(input_model, "schema_version", 1) == 2:  # v2 input: run as v1, answer in v2
            return self._compute_v1(input_model.convert_v(1), config).convert_v(2)
        return self._compute_v1(input_model, config)

    def _compute_v1(self, input_model, config):
        from qcelemental.models.v1 import AtomicResult

        from .gradients import GRADIENT_SCF_DEFAULTS, scf_gradient
        from .gradients.scf_gradient import gradient_engine
        from .io.qcschema import gradient_to_qcschema, result_to_qcschema
        from .molecule import Molecule
        from .scf import run

        driver = str(getattr(input_model.driver, "value", input_model.driver))
        if driver not in DRIVERS:
            raise InputError(f"hartree runs the drivers {', '.join(DRIVERS)}, not {driver!r}")
        method = str(input_model.model.method).lower()
        basis = input_model.model.basis
        if not basis:
            raise InputError("model.basis is required")
        mol_doc = json.loads(input_model.molecule.json())  # plain JSON types (lists, not numpy)
        molecule = Molecule.from_qcschema(mol_doc)
        keywords = dict(input_model.keywords or {})
        device = keywords.pop("device", "auto")
        options = {**GRADIENT_SCF_DEFAULTS, **keywords} if driver == "gradient" else keywords
        result = run(molecule, basis, method, device=device, **options)
        if driver == "gradient":
            g = scf_gradient(result, gradient_engine(result, None, options.get("screening_threshold", 1e-13)))
            doc = gradient_to_qcschema(g, keywords=dict(input_model.keywords or {}))
        else:
            doc = result_to_qcschema(result, keywords=dict(input_model.keywords or {}))
        doc["id"] = input_model.id
        doc["extras"] = {**dict(input_model.extras or {}), **doc["extras"]}
        doc["molecule"] = mol_doc
        return AtomicResult(**doc)


qcengine.register_program(HartreeHarness())
