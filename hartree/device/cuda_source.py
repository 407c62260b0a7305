"""Hand-written CUDA (and the C++ shim of the emulator) shipped as ``.cu`` files.

    text = cuda_source.read("hartree.gpu", "shell_dmax.cu")

CUDA written by hand lives in ``.cu`` files beside the module that launches it, so that it
can be read, diffed and syntax-highlighted as CUDA; Python strings hold only generated
code.  A file may be a template with ``{name}`` fields that its launcher fills with
``str.format`` (braces of the CUDA itself doubled, as ``{{``).  Files are read once per
process.
"""

import functools
from importlib import resources


@functools.cache
def read(package, name):
    """Text of the file ``name`` shipped in ``package`` (a dotted package name)."""
    return resources.files(package).joinpath(name).read_text(encoding="utf-8")
