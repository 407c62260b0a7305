"""NVRTC without a GPU (hartree.device.nvrtc, pip's nvidia-cuda-nvrtc): every generated J/K
class up to (gg|gg), with its Schwarz kernel and the J-only / K-only variants, compiles for
sm_90; a few large classes are compiled through ptxas with optimisation and their
resource use is checked.  Runs on CPU-only CI machines; skips when libnvrtc is absent."""

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from hartree.device import nvrtc
from hartree.errors import DeviceError
from hartree.gpu import codegen, jk_kernels
from hartree.gpu.tables import RysTable

LMAX = 4  # s..g: the l values the GPU tests cover
NCHUNK = 6  # programs the 120 classes are spread over

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="libnvrtc not found (pip install nvidia-cuda-nvrtc)")


def all_classes(lmax=LMAX):
    """Every quartet class the J/K driver launches for shells s..lmax: bra pair class >=
    ket pair class in the driver's order, la >= lb, lc >= ld."""
    pcs = [(a, b) for a in range(lmax + 1) for b in range(a + 1)]
    return [pcs[i] + pcs[j] for i in range(len(pcs)) for j in range(i + 1)]


def _bundle(sources):
    """One translation unit holding many generated modules, each in its own namespace
    (they share helper names such as rys_<n>); the extern "C" kernels keep their names."""
    return "\n".join(f"namespace m{k} {{\n{src}\n}}" for k, src in enumerate(sources))


@needs_nvrtc
def test_library_version_and_archs():
    major, minor = nvrtc.version()
    assert major >= 12 and minor >= 0
    assert 90 in nvrtc.supported_archs()


@needs_nvrtc
def test_compile_error_carries_the_log():
    with pytest.raises(DeviceError, match="undefined_thing"):
        nvrtc.compile_source('extern "C" __global__ void k() { undefined_thing(); }')
    with pytest.raises(ValueError):
        nvrtc.compile_source("", arch="compute_90", output="cubin")


def test_missing_library_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(nvrtc, "_lib", None)
    monkeypatch.setattr(nvrtc, "_candidates", lambda: iter(["/nonexistent/libnvrtc.so"]))
    with pytest.raises(DeviceError, match="nvidia-cuda-nvrtc"):
        nvrtc.compile_source('extern "C" __global__ void k() {}')
    assert not nvrtc.available()


@needs_nvrtc
@pytest.mark.slow
def test_every_class_up_to_gggg_compiles_for_sm90():
    """All 120 classes s..g with J+K digestion and their Schwarz kernels (NCHUNK programs),
    then J-only and K-only digestion for a small, the largest unrolled and two loop
    classes, through the NVRTC front end and NVVM to PTX.  -G (no optimisation) keeps NVVM
    fast on the large unrolled classes; a source error shows up all the same."""
    table = RysTable.load()
    classes = all_classes()
    assert len(classes) == 120 and (4, 4, 4, 4) in classes
    few = [(1, 0, 1, 0), (2, 2, 2, 2), (3, 3, 2, 2), (4, 4, 4, 4)]
    # programs of ~1 MB of source each, compiled in parallel threads (NVRTC is reentrant)
    jobs = [(classes[k::NCHUNK], True, True) for k in range(NCHUNK)]
    jobs += [(few, True, False), (few, False, True)]

    def check(job):
        cls_list, with_j, with_k = job
        srcs = [jk_kernels.generate(c, table, with_j, with_k) for c in cls_list]
        res = nvrtc.compile_source(_bundle(srcs), "sm_90", output="ptx", options=nvrtc.DEFAULT_OPTIONS + ("-G",))
        ptx = res.image.decode()
        names = [n for c in cls_list for n in jk_kernels.kernel_names(c, c[:2] == c[2:])]
        assert len(names) == len(cls_list) + sum(c[:2] == c[2:] for c in cls_list)
        assert "error" not in res.log.lower()
        return [n for n in names if f".entry {n}(" not in ptx]

    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        missing = [n for m in pool.map(check, jobs) for n in m]
    assert not missing, missing[:5]


@needs_nvrtc
@pytest.mark.slow
@pytest.mark.parametrize("cls", [(4, 4, 4, 4), (3, 3, 2, 2), (2, 1, 1, 0)])
def test_optimised_cubin_resources(cls):
    """Optimised cubins (ptxas) for the largest loop class, a sliced loop class (now
    cooperative: a few spilled words at most) and an unrolled one: at most 255 registers,
    and the loop classes' local arrays stay bounded by
    their slice plus the recurrence arrays (2-D integrals e[3][la+1][lb+1][lc+ld+1][ld+1]:
    27 kB for (gg|gg)); 64 kB bounds (gg|gg) (it was 444 kB with an array per slice)."""
    table = RysTable.load()
    res = nvrtc.compile_source(jk_kernels.generate(cls, table, diag=False), "sm_90")
    info = nvrtc.cubin_resources(res.image)
    k = info[f"jk_{codegen.class_name(cls)}"]
    assert 0 < k["num_regs"] <= 255
    from hartree.gpu.tuning import jk_tuning

    if jk_tuning().cooperative_shape(cls) is not None:  # cooperative kernel (the package's choice)
        assert k["frame_bytes"] <= 256
    elif codegen.is_generic(cls):
        assert (
            8 * max((a1 - a0) * (b1 - b0) for a0, a1, b0, b1 in jk_kernels.split_plan(cls)) <= k["frame_bytes"] <= 65536
        )
    else:
        assert k["frame_bytes"] <= 1024


@needs_nvrtc
@pytest.mark.parametrize("cls", [(1, 0, 1, 0), (2, 1, 0, 0)])
def test_min_blocks_two_caps_registers_at_128(cls):
    """Classes with min_blocks 2 in the shipped tuning compile to at most 128 registers a thread (two
    blocks of 256 threads per SM), spilling at most a few words."""
    assert jk_kernels.min_blocks(cls) == 2
    res = nvrtc.compile_source(jk_kernels.generate(cls, RysTable.load()), "sm_90")
    k = nvrtc.cubin_resources(res.image)[f"jk_{codegen.class_name(cls)}"]
    assert 0 < k["num_regs"] <= 128 and k["frame_bytes"] <= 256
