"""Write every generated kernel source of this tree to a directory, one file per module.

    python tools/dump_generated.py DIR            # dump
    python tools/dump_generated.py DIR --check    # compare with an earlier dump of DIR

A restructuring that must not change behaviour compares the generated CUDA and numba
sources of the new tree with those of the old one: run the dump on the old commit (e.g. a
``git worktree``), then ``--check`` on the new one.  Byte-identical sources mean identical
kernels; any difference is listed by file.  Covers the J/K classes up to (gg|gg) with
J+K, J only and K only, the screening and density-maximum kernels, the three-index
classes up to (gg|i), the one-electron classes up to (gg), the orbital-lattice kernels
(general flavour, each precision and kind), the atomic kernels and the numba ERI and
one-electron modules.
Only the import lines below name modules; update them when a module moves.
"""

import argparse
import hashlib
import pathlib
import sys


def sources():
    """Yield (file name, source text) for every generated source this tree prints."""
    from hartree.atom import gpu_kernels
    from hartree.gpu import (
        eri3c,
        gradient_kernels,
        jk_direct,
        jk_kernels,
        one_electron_deriv_gpu,
        one_electron_gpu,
        quartet_lists,
    )
    from hartree.gpu.tables import RysTable
    from hartree.grid import gpu_codegen
    from hartree.integrals import eri_codegen, os_codegen

    table = RysTable.load()
    lmax = 4
    pairs = [(a, b) for a in range(lmax + 1) for b in range(a + 1)]
    for bra in pairs:
        for ket in pairs:
            if ket > bra:
                continue
            cls = bra + ket
            name = "".join(map(str, cls))
            for with_j, with_k, tag in ((True, True, "jk"), (True, False, "j"), (False, True, "k")):
                yield f"jk_{name}_{tag}.cu", jk_kernels.generate(cls, table, with_j, with_k)
            yield f"grad_{name}.cu", gradient_kernels.generate(cls, table)
    yield "shell_dmax.cu", jk_direct.dmax_source()
    yield "quartet_screen.cu", quartet_lists.screen_source()
    for a, b in pairs:
        for c in range(7):
            yield f"e3_{a}{b}{c}.cu", eri3c.generate((a, b, c), table)
    yield "one_electron.cu", one_electron_gpu.generate(pairs, table)
    for a, b in pairs:
        yield f"one_electron_grad_{a}{b}.cu", one_electron_deriv_gpu.generate(a, b, table)
    for real in ("double", "float"):
        for pure in (True, False):
            for kind in ("mo", "ao"):
                norbs = (1, 3, 8) if kind == "mo" else (1,)
                for norb in norbs:
                    text = gpu_codegen.generate(real, pure, kind, norb=norb, ls=(0, 1, 2, 3, 4))
                    yield f"lattice_{real}_{int(pure)}_{kind}_{norb}.cu", text
    yield "atom.cu", gpu_kernels.source()
    yield "eri_numba.py", eri_codegen.module_source()
    yield "one_electron_numba.py", os_codegen.module_source()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=pathlib.Path)
    parser.add_argument("--check", action="store_true", help="compare with the dump in DIRECTORY")
    args = parser.parse_args()
    if not args.check:
        args.directory.mkdir(parents=True, exist_ok=True)
        n = 0
        for name, text in sources():
            (args.directory / name).write_text(text)
            n += 1
        print(f"{n} sources written to {args.directory}")
        return 0
    old = {p.name: p.read_bytes() for p in args.directory.iterdir()}
    new = {name: text.encode() for name, text in sources()}
    differ = sorted(n for n in new if n in old and old[n] != new[n])
    missing = sorted(set(old) - set(new))
    added = sorted(set(new) - set(old))
    for n in differ:
        print(f"differs: {n} ({hashlib.sha256(old[n]).hexdigest()[:12]} -> {hashlib.sha256(new[n]).hexdigest()[:12]})")
    for n in missing:
        print(f"missing: {n}")
    for n in added:
        print(f"new: {n}")
    same = len(new) - len(differ) - len(added)
    print(f"{same} of {len(old)} sources byte-identical")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
