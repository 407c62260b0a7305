"""What the J/K build and the SCF need of GPU memory, and J/K split to fit it.

* :func:`jk_bytes` / :func:`scf_bytes` - estimates (bytes) of what a J/K call on ``nset``
  densities and a whole SCF keep alive at once.
* :func:`batched_jk` - J/K of nset densities in batches of densities that fit the budget
  (:func:`hartree.device.memory.budget_bytes`); on an out-of-memory error it frees cupy's
  cache, halves the batch and tries again.  A single density that does not fit raises
  :class:`hartree.device.memory.GPUMemoryError` (a DeviceError: the CLI prints one line;
  ``scf.run(device='auto')`` then runs on the CPU and says so).

The quartet lists of a J/K build (:mod:`hartree.gpu.quartet_lists`) take at most
``quartet_lists.LIST_FRACTION`` of the budget left when they are allocated (after the densities
and accumulators); longer lists run in waves through one buffer, so they never fail for
lack of memory.

Every decision is reported as a sentence in ``notes`` (the engine's note list), so the
user is told when the work was split.
"""

from hartree.device.memory import GPUMemoryError, budget_bytes, gib, is_out_of_memory


def jk_bytes(basis, nset, with_j=True, with_k=True, ndev=1):
    """Bytes one J/K call on nset densities holds on device 0 (float64 words):
    cartesian densities (nset ncart²), accumulators (nset ncart² per matrix), their
    transposes/transforms (2 x that), the final matrices (nset nao² each), the
    per-shell-pair max |D| (nshell²) and, with several devices, the copied partials."""
    nc2, na2 = basis.ncart**2, basis.nao**2
    nmat = int(with_j) + int(with_k)
    words = nset * (nc2 * (2 + 3 * nmat) + na2 * nmat) + basis.nshell**2
    if ndev > 1:
        words += nset * nc2 * nmat
    return 8 * words


def scf_bytes(basis, nspin, diis_space=8):
    """Bytes the SCF loop keeps on the device besides J/K: S, h, X, per spin Fock, density,
    orbitals, the DIIS history (Fock + error per entry) and eigh workspaces, ~(12 + 2 x
    diis_space) nao² words per spin."""
    return 8 * basis.nao**2 * (6 + nspin * (12 + 2 * diis_space))


def _note(notes, text):
    if notes is not None and text not in notes:
        notes.append(text)


def batched_jk(builder, dms, with_j, with_k, backend, notes=None, omega=0.0):
    """J, K like ``builder.jk`` but in batches of densities that fit the memory budget.

    dms: (nset, nao, nao) or (nao, nao) of the builder's array module; omega (bohr^-1):
    ``builder.jk``'s (0: 1/r12, > 0: erf(omega r12)/r12).  Raises
    GPUMemoryError when one density does not fit (before any allocation when the
    estimate says so, or after an out-of-memory error at batch size 1).
    """
    xp = builder.xp
    basis = builder.basis
    single = getattr(dms, "ndim", 2) == 2
    dms = xp.asarray(dms).reshape(-1, basis.nao, basis.nao)
    nset = dms.shape[0]
    ndev = getattr(builder, "ndev", 1)
    budget = budget_bytes(backend)
    per = jk_bytes(basis, 1, with_j, with_k, ndev)
    if per > budget:
        raise GPUMemoryError(
            f"J/K for one density needs about {gib(per)} of GPU memory; only {gib(budget)} "
            f"are usable ({basis.nao} functions); use the CPU (--device cpu)"
        )
    batch = nset if budget >= per * nset else max(1, int(budget // per))
    while True:
        try:
            if batch >= nset:
                return builder.jk(dms[0] if single else dms, with_j, with_k, omega)
            out_j, out_k = [], []
            for s0 in range(0, nset, batch):
                J, K = builder.jk(dms[s0 : s0 + batch], with_j, with_k, omega)
                out_j.append(J)
                out_k.append(K)
            _note(notes, f"J/K of {nset} densities done in batches of {batch} (GPU memory budget {gib(budget)})")
            J = xp.concatenate(out_j) if with_j else None
            K = xp.concatenate(out_k) if with_k else None
            return J, K
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            for b in getattr(builder, "backends", [backend]):
                free = getattr(b, "free_cached", None)
                if free is not None:
                    free()
            if batch == 1:
                raise GPUMemoryError(
                    "the GPU ran out of memory building J/K for a single density "
                    f"({basis.nao} functions); use the CPU (--device cpu)"
                ) from exc
            batch = max(1, batch // 2)
            _note(notes, f"GPU out of memory in J/K: retried with batches of {batch} densities")
