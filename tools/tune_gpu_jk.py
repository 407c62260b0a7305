"""Time the J/K kernel variants of every quartet class on this GPU and write its tuning entry.

    python tools/tune_gpu_jk.py [--molecule 057_Tamoxifen] [--basis def2-tzvp] [--repeat 3]
                                [--out hartree/gpu/data/jk_tuning.json] [--dry-run]

Needs a CUDA GPU (cupy).  Each *variant* is a :class:`hartree.gpu.tuning.JKTuning` that
applies one choice to every class it can: the one-quartet-per-thread kernel with
``__launch_bounds__`` minimum blocks 1 or 2, or the cooperative kernel with one of
:data:`SHAPES` (classes whose shared memory does not fit keep the classic kernel).  For each
variant a :class:`hartree.gpu.jk_direct.DirectJK` builds J+K of one density with per-class
profiling (``DirectJK.profile``: CUDA events around each class's launches, serialised),
``repeat`` times (median), and its J/K are checked against the first variant's (1e-11 of
the largest element).  Per class the fastest classic variant sets ``min_blocks`` (2 only when
faster than 1), and the class is cooperative with its fastest shape when that is at least
:data:`COOPERATIVE_GAIN` faster than the best classic one.  The density is a proxy with
blocks of every angular momentum, 0.3 exp(-0.35 r_μν / bohr) x uniform(-1, 1) (the SAD
density has no d/f blocks).  The entry, with the measured seconds, is written under the
device's name as CUDA reports it (``--dry-run``: printed only).
"""

import argparse
import json
import pathlib
import statistics
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: cooperative shapes tried: (lanes per quartet, groups per block, primitive quartets a pass)
SHAPES = ((16, 8, 1), (16, 8, 2), (32, 2, 1), (32, 2, 2), (64, 1, 1))

#: a class goes cooperative when its best shape takes at most this fraction of the best
#: classic variant's time
COOPERATIVE_GAIN = 0.9


def proxy_density(basis, seed=7):
    """Symmetric (nao, nao) density with blocks of every l: 0.3 exp(-0.35 r) x U(-1, 1),
    r the distance (bohr) between the functions' centres."""
    centre = np.repeat(np.asarray(basis.shell_center), np.diff(np.asarray(basis.ao_loc)), axis=0)
    r = np.linalg.norm(centre[:, None, :] - centre[None, :, :], axis=-1)
    d = 0.3 * np.exp(-0.35 * r) * np.random.default_rng(seed).uniform(-1.0, 1.0, r.shape)
    return 0.5 * (d + d.T)


def variants(base):
    """{name: JKTuning}: classic with min blocks 1 and 2, and each cooperative shape."""
    from hartree.gpu import cooperative_kernels
    from hartree.gpu.tuning import CooperativeShape
    from tests.gpu.test_nvrtc import all_classes

    classes = all_classes(4)
    out = {
        "classic_1": base.with_cooperative({}).with_min_blocks({}),
        "classic_2": base.with_cooperative({}).with_min_blocks({c: 2 for c in classes}),
    }
    for lanes, groups, slots in SHAPES:
        shape = CooperativeShape(lanes, groups, slots=slots)
        fit = {c: shape for c in classes if cooperative_kernels.fits(c, groups, slots)}
        out[f"coop_{lanes}x{groups}s{slots}"] = base.with_cooperative(fit).with_min_blocks({})
    return out


def time_variant(basis, tuning, dm, repeat):
    """({class name: median seconds}, J, K) of one variant on the current GPU."""
    import cupy

    from hartree.device.backend import CudaBackend
    from hartree.gpu.jk_direct import DirectJK

    b = DirectJK(basis, CudaBackend(), 1e-13, tuning=tuning)
    dm_gpu = cupy.asarray(dm)
    J, K = b.jk(dm_gpu)  # compile, warm up
    runs = []
    for _ in range(repeat):
        b.profile, b.stats = {}, {}
        b.jk(dm_gpu)
        runs.append(dict(b.profile))
    b.profile = None
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}, J.get(), K.get()


def choose(base, times, shapes):
    """JKTuning and the measured seconds per class from {variant: {class: s}}."""
    from hartree.gpu import codegen

    blocks, coop, measured = {}, {}, {}
    for name in sorted(times["classic_1"]):
        cls = tuple(int(c) for c in name)
        t1, t2 = times["classic_1"][name], times["classic_2"].get(name, float("inf"))
        best_classic = min(t1, t2)
        if t2 < t1:
            blocks[cls] = 2
        coop_times = {v: t[name] for v, t in times.items() if v.startswith("coop_") and cls in shapes[v].cooperative}
        note = {v: round(t[name], 6) for v, t in times.items() if name in t}
        if coop_times:
            v = min(coop_times, key=coop_times.get)
            if coop_times[v] <= COOPERATIVE_GAIN * best_classic:
                coop[cls] = shapes[v].cooperative[cls]
        measured[codegen.class_name(cls)] = note
    blocks = {c: b for c, b in blocks.items() if c not in coop}  # min blocks: classic kernels only
    return base.with_cooperative(coop).with_min_blocks(blocks), measured


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--molecule", default="057_Tamoxifen")
    ap.add_argument("--basis", default="def2-tzvp")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=pathlib.Path, default=None, help="tuning file (default: the package's)")
    ap.add_argument("--dry-run", action="store_true", help="print the entry, write nothing")
    args = ap.parse_args(argv)
    import cupy

    from benchmarks.molecules import molecule_path
    from hartree.basis import load_basis
    from hartree.gpu.tuning import TUNING_FILE, entry_json, jk_tuning
    from hartree.io.files import json_text, read_json, write_text
    from hartree.molecule import Molecule

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    device = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    mol = Molecule.from_xyz(molecule_path(args.molecule))
    basis = load_basis(mol, args.basis)
    dm = proxy_density(basis)
    base = jk_tuning()
    shapes = variants(base)
    times, ref = {}, None
    for name, tuning in shapes.items():
        times[name], J, K = time_variant(basis, tuning, dm, args.repeat)
        if ref is None:
            ref = (J, K)
        for x, r in zip((J, K), ref):
            err = float(np.abs(x - r).max() / np.abs(r).max())
            if err > 1e-11:
                raise SystemExit(f"variant {name}: J/K differ from classic_1 by {err:.1e}")
        print(f"{name}: {sum(times[name].values()):.4f} s over {len(times[name])} classes", flush=True)
    tuned, measured = choose(base, times, shapes)
    entry = entry_json(tuned, measured)
    entry["measured_on"] = f"{device}, {args.molecule}/{args.basis}, proxy density, median of {args.repeat}"
    if args.dry_run:
        print(json.dumps({device: entry}, indent=1))
        return 0
    path = args.out or TUNING_FILE
    doc = read_json(path, "GPU tuning file")
    doc["devices"][device] = entry
    write_text(path, json_text(doc))
    print(f"entry {device!r} written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
