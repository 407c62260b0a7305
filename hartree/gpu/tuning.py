"""Per-GPU tuning of the J/K kernels, read from data: ``hartree/gpu/data/jk_tuning.json``.

The file holds one entry per device name (as CUDA reports it, e.g. "NVIDIA H100 80GB
HBM3") and a ``"default"`` entry for every other device; ``tools/tune_gpu_jk.py`` times the
variants of each quartet class on the current GPU and writes that GPU's entry.  An entry
holds

* ``min_blocks``: {class "2110": n}, the second argument of ``__launch_bounds__`` of the
  one-quartet-per-thread kernel (classes not listed: ``codegen.MIN_BLOCKS``);
* ``cooperative``: {class: {"lanes", "groups"[, "unit_mode", "slots"]}}, the classes whose
  J/K kernel is the cooperative one (:mod:`hartree.gpu.cooperative_kernels`) and its shape;
* the measurements behind the choices (``*_measured``, text only).

Nothing is read at import time and no device is queried here: callers pass the device
name when they know it (:func:`jk_tuning`).  The values shape the generated CUDA, so they
enter each kernel's compile-cache key through its source text.
"""

import functools
import pathlib
from dataclasses import dataclass
from types import MappingProxyType

#: the shipped tuning file
TUNING_FILE = pathlib.Path(__file__).resolve().parent / "data" / "jk_tuning.json"

#: name of the entry used for devices without one of their own
DEFAULT = "default"


@dataclass(frozen=True)
class CooperativeShape:
    """Launch shape of a cooperative J/K kernel.

    lanes: threads per quartet (8, 16 or a multiple of 32 up to 256); groups: quartets per
    block (1 when lanes > 32); unit_mode: 'ab' / 'abc' (None: chosen by the class's size);
    slots: primitive quartets per pass."""

    lanes: int
    groups: int
    unit_mode: str | None = None
    slots: int = 1


@dataclass(frozen=True)
class JKTuning:
    """One entry of the tuning file: per quartet class (la, lb, lc, ld) the kernel choices.

    entry: the entry's name (a device name or "default"); min_blocks: {class: blocks};
    cooperative: {class: CooperativeShape} (read-only mappings)."""

    entry: str
    min_blocks: MappingProxyType
    cooperative: MappingProxyType

    def min_blocks_of(self, cls, default):
        """__launch_bounds__ minimum blocks of the class's one-quartet-per-thread kernel."""
        return self.min_blocks.get(_class_key(cls), default)

    def cooperative_shape(self, cls):
        """CooperativeShape of the class, or None for the one-quartet-per-thread kernel."""
        return self.cooperative.get(_class_key(cls))

    def with_cooperative(self, shapes):
        """A copy whose cooperative classes are `shapes` ({class: CooperativeShape}); for
        tests and the tuning script, which try other choices."""
        shapes = {_class_key(c): s for c, s in shapes.items()}
        return JKTuning(f"{self.entry} (modified)", self.min_blocks, MappingProxyType(shapes))

    def with_min_blocks(self, blocks):
        """A copy whose min_blocks table is `blocks` ({class: blocks})."""
        blocks = {_class_key(c): int(b) for c, b in blocks.items()}
        return JKTuning(f"{self.entry} (modified)", MappingProxyType(blocks), self.cooperative)


def _class_key(cls):
    return tuple(int(l) for l in cls)


def _class_text(cls):
    """ "2110" for (2, 1, 1, 0)."""
    return "".join(str(int(l)) for l in cls)


def _parse_class(text):
    """(2, 1, 1, 0) from "2110"."""
    if len(text) != 4 or not text.isdigit():
        raise ValueError(f"tuning file: class {text!r} is not four digits la lb lc ld")
    return tuple(int(c) for c in text)


def parse_entry(name, doc):
    """JKTuning of one entry of the tuning file (a dict as JSON gives it)."""
    blocks = {_parse_class(c): int(n) for c, n in doc.get("min_blocks", {}).items()}
    shapes = {}
    for c, s in doc.get("cooperative", {}).items():
        shapes[_parse_class(c)] = CooperativeShape(
            lanes=int(s["lanes"]), groups=int(s["groups"]), unit_mode=s.get("unit_mode"), slots=int(s.get("slots", 1))
        )
    return JKTuning(name, MappingProxyType(blocks), MappingProxyType(shapes))


@functools.cache
def _entries(path):
    from hartree.io.files import read_json

    doc = read_json(path, "GPU tuning file")
    return MappingProxyType({name: parse_entry(name, e) for name, e in doc["devices"].items()})


def jk_tuning(device_name=None, path=TUNING_FILE):
    """The J/K tuning for the GPU named `device_name` (its own entry, else "default");
    None gives the default entry.  The file is read once per process."""
    entries = _entries(str(path))
    return entries.get(device_name) or entries[DEFAULT]


def entry_json(tuning, measured=None):
    """The JSON form of a JKTuning (an entry of the tuning file); measured: optional dict
    of text notes stored beside the values."""
    name = _class_text
    shapes = {}
    for c, s in sorted(tuning.cooperative.items()):
        d = {"lanes": s.lanes, "groups": s.groups}
        if s.unit_mode is not None:
            d["unit_mode"] = s.unit_mode
        if s.slots != 1:
            d["slots"] = s.slots
        shapes[name(c)] = d
    doc = {"min_blocks": {name(c): b for c, b in sorted(tuning.min_blocks.items())}, "cooperative": shapes}
    if measured:
        doc["measured"] = dict(measured)
    return doc
