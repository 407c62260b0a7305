"""hartree.df: density fitting of the SCF's Coulomb and exchange matrices (RI-J, RI-JK).

>>> res = hartree.scf.run(mol, "def2-svp", "rks", xc="b3lyp", density_fitting=True)
>>> res.density_fitting   # {'aux_basis': 'def2-universal-JKFIT', 'naux': ..., 'exact_k': False, ...}

:mod:`hartree.df.auxiliary`: the default J/K fitting basis of an orbital basis;
:mod:`hartree.df.jk`: the fitted J/K (:class:`~hartree.df.jk.FittedJK`) and the engine that
serves it to the SCF (:class:`~hartree.df.engine.FittedEngine`); :mod:`hartree.df.pairs`: the
orbital pairs over which the fitted tensor is kept; :mod:`hartree.df.storage`: where it is
kept (GPU memory, split with pinned host memory, host memory, or recomputed);
:mod:`hartree.df.metric`: the factor of the Coulomb metric, shared with RI-MP2;
:mod:`hartree.df.mixed_k`: the fitted K in mixed precision with an a-priori bound per build
(``precision='mixed'``).
:mod:`hartree.df.range_separated`: the second fit, of an attenuated operator (the long-range
exchange of range-separated hybrids).
docs/architecture.md, "Density fitting".
"""
