"""Template of the frame of the CPU one-electron kernels, the part of the generated module
of :mod:`hartree.integrals.os_codegen` that is not printed from the programs.

The texts below are real Python: :data:`PRIM_TEMPLATE` is the per-primitive-pair function
with the printed programs in its fields (``{plain}``, ``{rooted}``: if-chains over the
operator codes; ``{views}``: the tables' names), :data:`FRAME_SOURCE` the rest; numba
resolves the generated functions and constants (``NCOMP``, ``ROOTS``, ``NTAB``, ...) as
globals of that module, so the frame has to live beside them (and numba's cache of the
frame is renewed with them).  What it does:

* ``prim_pair_accumulate``: one primitive pair (exponents a, b on A, B): the Gaussian
  product P, 1/(2p) and K_AB = exp(-ab/p |A - B|²) (the other coefficients of
  :mod:`hartree.integrals.os_program` are spelled from them by the printer), then the
  printed program of the operator with the prefactor (π/p)^(3/2) K_AB; for the nuclear
  attraction, per point charge Z_C at C (those of [c0, c1)): T = p |P - C|², the Rys roots
  and weights (:func:`hartree.integrals.rys.rys_roots_weights`, (l_a + l_b + raise)//2 + 1
  roots) and the prefactor -Z_C 2π/p K_AB;
* ``shell_pair_cart_block``: the contracted cartesian block (rows, ncart(l_a), ncart(l_b))
  of two shells, with the contraction coefficients and PySCF's f(l); primitive pairs with
  μ|A - B|² > ``PRIM_CUTOFF`` skipped;
* ``cart_to_final``, ``one_electron_matrix_kernel``: cartesian → final AOs per block, and
  the symmetric matrix over the shell pairs i >= j (numba threads);
* ``_derivative_block``, ``_one_electron_gradient``: the bra derivative of a block from the
  blocks of the raised and lowered shell (``bra_derivative``, printed), and Σ D d(T + V)/dR
  - Σ W dS/dR per atom, see :mod:`hartree.integrals.one_electron_deriv`.
"""

PRIM_TEMPLATE = '''
@numba.njit(cache=True)
def {name}(op, la, lb, a, b, A, B, scale, cart_xyz, origin, charges, coords, c0, c1, rys_table, tab, rtab, rys_u,
           rys_w, block):
    """Add one primitive pair's integrals of operator ``op`` ({ops}), times ``scale``, to
    the cartesian ``block`` (rows, >= ncart(la), >= ncart(lb)).  ``A``, ``B``, ``origin``
    (3,) bohr (origin: C of the dipole); point charges ``charges[c0:c1]`` (e) at ``coords``
    (ncharge, 3) bohr (nuclear attraction); ``tab``, ``rtab``, ``rys_u``, ``rys_w``: scratch
    (zeros; rtab: NRTAB tables of base v, each a block of rtab.shape[0] // NRTAB roots)."""
{views}
    p = a + b
    hp = 0.5 / p
    # Gaussian product centre (tuples: no allocation per primitive pair)
    P = (product_centre(a, b, A[0], B[0]), product_centre(a, b, A[1], B[1]), product_centre(a, b, A[2], B[2]))
    rab2 = (A[0] - B[0]) ** 2 + (A[1] - B[1]) ** 2 + (A[2] - B[2]) ** 2
    kab = math.exp(-product_exponent(a, b, rab2))
    if ROOTS[op] < 0:
        pref = scale * (math.pi / p) ** 1.5 * kab
{plain}
        return
    nroots = (la + lb + ROOTS[op]) // 2 + 1
    prefn = scale * 2.0 * math.pi / p * kab
    for c in range(c0, c1):
        zc = charges[c]
        if zc == 0.0:
            continue
        T = p * ((P[0] - coords[c, 0]) ** 2 + (P[1] - coords[c, 1]) ** 2 + (P[2] - coords[c, 2]) ** 2)
        rys_roots_weights(nroots, T, rys_u, rys_w, rys_table)
        pref = -zc * prefn
{rooted}
'''

FRAME_SOURCE = '''
#: primitive pairs with mu |A-B|^2 above this are skipped: exp(-60) ~ 1e-26 relative
PRIM_CUTOFF = 60.0


@numba.njit(cache=True)
def ncomp_of(op):
    """Rows of the block of operator code ``op``."""
    return NCOMP[op]


@numba.njit(cache=True)
def shell_pair_cart_block(op, ish, jsh, shell_l, shell_nprim, shell_prim_start, shell_center, exponents,
                          coefficients, cart_xyz, origin, charges, coords, c0, c1, rys_table):
    """Contracted cartesian block (rows, ncart(l_i), ncart(l_j)) of operator ``op`` for
    shells ish, jsh, with the contraction coefficients and PySCF's f(l).  Atomic units."""
    la = shell_l[ish]
    lb = shell_l[jsh]
    block = np.zeros((NCOMP[op], (la + 1) * (la + 2) // 2, (lb + 1) * (lb + 2) // 2))
    # scratch tables, zeros: the printed programs read row and column 0 as index -1
    nroots = (la + lb) // 2 + 1
    tab = np.zeros((NTAB, 3, la + IEXTRA + 2, lb + JEXTRA + 2))
    rtab = np.zeros((NRTAB * nroots, 3, la + IEXTRA + 2, lb + JEXTRA + 2))
    rys_u = np.empty(nroots)
    rys_w = np.empty(nroots)
    A = shell_center[ish]
    B = shell_center[jsh]
    rab2 = (A[0] - B[0]) ** 2 + (A[1] - B[1]) ** 2 + (A[2] - B[2]) ** 2
    norm = angular_factor(la) * angular_factor(lb)
    pa0 = shell_prim_start[ish]
    pb0 = shell_prim_start[jsh]
    for pa in range(pa0, pa0 + shell_nprim[ish]):
        a = exponents[pa]
        for pb in range(pb0, pb0 + shell_nprim[jsh]):
            b = exponents[pb]
            if product_exponent(a, b, rab2) > PRIM_CUTOFF:
                continue
            scale = norm * coefficients[pa] * coefficients[pb]
            prim_pair_accumulate(op, la, lb, a, b, A, B, scale, cart_xyz, origin, charges, coords, c0, c1,
                                 rys_table, tab, rtab, rys_u, rys_w, block)
    return block


@numba.njit(cache=True)
def cart_to_final(block, la, lb, pure, c2s, out_block):
    """A cartesian block (rows, ncart(la), ncart(lb)) in the final AO basis: out_block
    (rows, nfa, nfb) = C_a^T block C_b when ``pure`` (c2s (lmax+1, ncart_max, 2 lmax+1):
    cart2sph(l) per l, the identity for l < 2), else a copy."""
    ncomp = block.shape[0]
    nca = (la + 1) * (la + 2) // 2
    ncb = (lb + 1) * (lb + 2) // 2
    if not pure:
        for k in range(ncomp):
            for ia in range(nca):
                for ib in range(ncb):
                    out_block[k, ia, ib] = block[k, ia, ib]
        return
    nsa = 2 * la + 1
    nsb = 2 * lb + 1
    tmp = np.zeros((nca, nsb))
    for k in range(ncomp):
        for ia in range(nca):  # tmp = block C_b
            for sb in range(nsb):
                acc = 0.0
                for ib in range(ncb):
                    acc += block[k, ia, ib] * c2s[lb, ib, sb]
                tmp[ia, sb] = acc
        for sa in range(nsa):  # out = C_a^T tmp
            for sb in range(nsb):
                acc = 0.0
                for ia in range(nca):
                    acc += c2s[la, ia, sa] * tmp[ia, sb]
                out_block[k, sa, sb] = acc


@numba.njit(cache=True, parallel=True)
def one_electron_matrix_kernel(op, shell_l, shell_nprim, shell_prim_start, shell_center, exponents, coefficients,
                               ao_loc, pure, c2s, cart_xyz, origin, charges, coords, rys_table, out):
    """Fill ``out`` (rows, nao, nao) with a symmetric one-electron operator: the shell pairs
    i >= j shared among numba threads (each writes disjoint blocks), both triangles."""
    nshell = shell_l.shape[0]
    ncomp = NCOMP[op]
    npair = nshell * (nshell + 1) // 2
    for ij in numba.prange(npair):
        # pair index ij = ish (ish + 1)/2 + jsh with jsh <= ish
        ish = int((math.sqrt(8.0 * ij + 1.0) - 1.0) / 2.0)
        while ish * (ish + 1) // 2 > ij:
            ish -= 1
        while (ish + 1) * (ish + 2) // 2 <= ij:
            ish += 1
        jsh = ij - ish * (ish + 1) // 2
        block = shell_pair_cart_block(op, ish, jsh, shell_l, shell_nprim, shell_prim_start, shell_center,
                                      exponents, coefficients, cart_xyz, origin, charges, coords, 0,
                                      charges.shape[0], rys_table)
        i0 = ao_loc[ish]
        j0 = ao_loc[jsh]
        nfa = ao_loc[ish + 1] - i0
        nfb = ao_loc[jsh + 1] - j0
        fin = np.empty((ncomp, nfa, nfb))
        cart_to_final(block, shell_l[ish], shell_l[jsh], pure, c2s, fin)
        for k in range(ncomp):
            for a in range(nfa):
                for b in range(nfb):
                    out[k, i0 + a, j0 + b] = fin[k, a, b]
                    out[k, j0 + b, i0 + a] = fin[k, a, b]


@numba.njit(cache=True)
def _derivative_block(op, ish, jsh, c, shell_l, shell_nprim, shell_prim_start, shell_center, exponents,
                      coefficients, cart_xyz, origin, charges, coords, rys_table, tab, rtab, rys_u, rys_w, up, down,
                      out):
    """<d m/dA|O|n> (3, nca, ncb) into ``out`` for shells ish (bra, centre A) and jsh,
    cartesian, operator code ``op`` (O = -Z_c/|r - C_c| for the nuclear attraction): the
    blocks of the raised shell (primitive weights times 2a) and of the lowered one, into
    ``up``, ``down`` (scratch), then ``bra_derivative``."""
    la = shell_l[ish]
    lb = shell_l[jsh]
    ncb = (lb + 1) * (lb + 2) // 2
    up[:, : (la + 2) * (la + 3) // 2, :ncb] = 0.0
    down[:, : la * (la + 1) // 2, :ncb] = 0.0
    A = shell_center[ish]
    B = shell_center[jsh]
    rab2 = (A[0] - B[0]) ** 2 + (A[1] - B[1]) ** 2 + (A[2] - B[2]) ** 2
    norm = angular_factor(la) * angular_factor(lb)
    for pa in range(shell_prim_start[ish], shell_prim_start[ish] + shell_nprim[ish]):
        a = exponents[pa]
        for pb in range(shell_prim_start[jsh], shell_prim_start[jsh] + shell_nprim[jsh]):
            b = exponents[pb]
            if product_exponent(a, b, rab2) > PRIM_CUTOFF:
                continue
            scale = norm * coefficients[pa] * coefficients[pb]
            for k in range(2 if la > 0 else 1):  # one call site: 0 raised, 1 lowered
                prim_pair_accumulate(op, la + 1 - 2 * k, lb, a, b, A, B, scale * (2.0 * a if k == 0 else 1.0),
                                     cart_xyz, origin, charges, coords, c, c + 1, rys_table, tab, rtab, rys_u, rys_w,
                                     up if k == 0 else down)
    bra_derivative(la, ncb, up, down, cart_xyz, out)


@numba.njit(cache=True, inline="always")
def _contract(block, dm, oa, ob, nca, ncb):
    """(3,): sum_ab dm[oa + a, ob + b] block[:, a, b]."""
    g0 = 0.0
    g1 = 0.0
    g2 = 0.0
    for ia in range(nca):
        for ib in range(ncb):
            w = dm[oa + ia, ob + ib]
            g0 += w * block[0, ia, ib]
            g1 += w * block[1, ia, ib]
            g2 += w * block[2, ia, ib]
    return g0, g1, g2


@numba.njit(cache=True, parallel=True)
def _one_electron_gradient(shell_atom, shell_l, shell_nprim, shell_prim_start, shell_center, exponents,
                           coefficients, cart_loc, dm, wdm, charges, coords, charge_atom, cart_xyz, rys_table,
                           natm, nthreads):
    """Per-atom gradient (natm, 3) of hartree.integrals.one_electron_deriv's dE_1/dX
    (cartesian densities): 2 sum_ab X_ab <da|O|b> over all ordered shell pairs, the
    nuclei's own motion by translational invariance."""
    nshell = shell_l.shape[0]
    lmax = 0
    for i in range(nshell):
        lmax = max(lmax, shell_l[i])
    nc = (lmax + 1) * (lmax + 2) // 2
    buf = np.zeros((nthreads, natm, 3))
    origin = np.zeros(3)
    for t in numba.prange(nthreads):
        nroots = lmax + 1  # (2 lmax + 1)//2 + 1: the raised shell has l_a + 1
        tab = np.zeros((NTAB, 3, lmax + IEXTRA + 3, lmax + JEXTRA + 2))
        rtab = np.zeros((NRTAB * nroots, 3, lmax + IEXTRA + 3, lmax + JEXTRA + 2))
        rys_u = np.empty(nroots)
        rys_w = np.empty(nroots)
        up = np.empty((1, (lmax + 2) * (lmax + 3) // 2, nc))
        down = np.empty((1, nc, nc))
        blk = np.empty((3, nc, nc))
        g = buf[t]
        for ish in range(t, nshell, nthreads):
            ia = shell_atom[ish]
            oa = cart_loc[ish]
            nca = cart_loc[ish + 1] - oa
            for jsh in range(nshell):
                ob = cart_loc[jsh]
                ncb = cart_loc[jsh + 1] - ob
                # one call site per kernel (numba compiles each inlined copy): task 0 the
                # overlap with -W, 1 the kinetic energy with D, 2 + c the attraction to
                # nucleus c with D, its own motion by translational invariance
                for task in range(2 + charges.shape[0]):
                    c = max(task - 2, 0)
                    if task >= 2 and charges[c] == 0.0:
                        continue
                    op = OP_OVERLAP if task == 0 else (OP_KINETIC if task == 1 else OP_NUCLEAR)
                    _derivative_block(op, ish, jsh, c, shell_l, shell_nprim, shell_prim_start, shell_center,
                                      exponents, coefficients, cart_xyz, origin, charges, coords, rys_table, tab,
                                      rtab, rys_u, rys_w, up, down, blk)
                    x0, x1, x2 = _contract(blk, wdm if task == 0 else dm, oa, ob, nca, ncb)
                    f = -2.0 if task == 0 else 2.0  # 2 sum_ab X_ab <da|O|b>
                    g[ia, 0] += f * x0
                    g[ia, 1] += f * x1
                    g[ia, 2] += f * x2
                    ic = charge_atom[c] if task >= 2 else -1
                    if ic >= 0:
                        g[ic, 0] -= f * x0
                        g[ic, 1] -= f * x1
                        g[ic, 2] -= f * x2
    out = np.zeros((natm, 3))
    for t in range(nthreads):  # a loop, not buf.sum(axis=0): numba compiles that for seconds
        for i in range(natm):
            for x in range(3):
                out[i, x] += buf[t, i, x]
    return out
'''
