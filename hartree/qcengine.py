"""hartree as a QCEngine program: ``import hartree.qcengine`` registers it as "hartree".

    import qcengine
    import hartree.qcengine  # noqa: F401  (registers the harness)

    result = qcengine.compute(atomic_input, "hartree")    # an AtomicResult or FailedOperation

Drivers ``energy`` and ``gradient``; ``model.method`` rhf | uhf | rohf or a DFT functional
(b3lyp, pbe, ... or a libxc name: Kohn-Sham RKS for closed shells, UKS otherwise or with the
keyword ``unrestricted``; energies and gradients), ``model.basis`` any basis hartree loads;
``keywords`` are SCF options (``conv_tol``, ``max_cycle``, ``level_shift``, ``guess``,
``cartesian``, ``device``, ``grid_level`` for functionals, ...:
:data:`hartree.io.qcschema_input.KEYWORDS`), ``grid_response`` among them (a functional's
gradient with the grid's derivative; default false, as in PySCF) and ``dispersion`` ('d3bj',
'd3zero', 'd4': the correction in the energy, ``scf_dispersion_correction_energy`` and the
gradient; Hartree-Fock too).  The result document is
the one ``hartree run --json`` (``--gradient``) writes (:mod:`hartree.io.qcschema`), with
the input's ``id`` and ``extras`` carried over.  Errors (a bad molecule, an unknown keyword,
an SCF that does not converge, a driver hartree lacks) are raised as hartree's exceptions;
``qcengine.compute`` turns them into a FailedOperation.  The document is checked by the
reader of ``hartree run input.json`` (:func:`hartree.io.qcschema_input.check_atomic_input`)
and its method and keywords become the arguments of :func:`hartree.scf.run` by the same
mapping (:func:`hartree.keywords.scf_options`: a gradient's SCF converges at least to ``GRADIENT_SCF_DEFAULTS``;
:func:`hartree.keywords.gradient_options`: a functional's RKS or UKS and grid_response).
QCEngine and qcelemental are imported by this module only.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import qcengine
from qcengine.programs.model import ProgramHarness

from ._version import __version__
from .errors import InputError


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

        from .gradients import scf_gradient
        from .gradients.scf_gradient import gradient_engine
        from .io.qcschema import gradient_to_qcschema, result_to_qcschema
        from .io.qcschema_input import check_atomic_input
        from .keywords import gradient_options, scf_options
        from .scf import run

        doc = json.loads(input_model.json())  # plain JSON types (lists, not numpy)
        record = check_atomic_input(doc, "AtomicInput")  # the reader of hartree run input.json
        if record.basis is None:
            raise InputError("AtomicInput: model.basis is required")
        device, options = scf_options(record.driver, record.keywords, "AtomicInput")
        method, options, grid_response = gradient_options(record.method, record.molecule, options, "AtomicInput")
        result = run(record.molecule, record.basis, method, device=device, **options)
        if record.driver == "gradient":
            engine = gradient_engine(result, None, options.get("screening_threshold", 1e-13))
            g = scf_gradient(result, engine, grid_response=grid_response)
            out = gradient_to_qcschema(g, keywords=dict(input_model.keywords or {}))
        else:
            out = result_to_qcschema(result, keywords=dict(input_model.keywords or {}))
        out["id"] = input_model.id
        out["extras"] = {**dict(input_model.extras or {}), **out["extras"]}
        out["molecule"] = doc["molecule"]
        return AtomicResult(**out)


qcengine.register_program(HartreeHarness())
