"""Constants and the per-stage JSON cache shared by benchmarks/atom_basis.py and its report
(benchmarks/atom_basis_report.py)."""

import json
import os

from hartree.atom.wtbs import THESIS_TABLE_2_1

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
THRESHOLD = 5e-9
#: numerical Hartree-Fock limits (Eh): He as in tests/atom, the others as quoted in issue 5
HF_LIMITS = {
    "He": -2.861679996,
    "Ne": -128.547098109,
    "Ar": -526.817512803,
    "Kr": -2752.054977344,
    "Xe": -7232.138364,
    "Rn": -21866.772241,
}
CLOSED_SHELL = [s for s, row in THESIS_TABLE_2_1.items() if row[3] == "1S"]
#: closed-shell ground states that the Madelung order gets wrong (Pd: 4d10 5s0)
OCCUPATIONS = {"Pd": ("s:4,p:3,d:2", "s1/2:4,p1/2:3,p3/2:3,d3/2:2,d5/2:2")}
MODES = {"hf": (False, "point"), "dhf_point": (True, "point"), "dhf_gaussian": (True, "gaussian")}


def default_cache():
    base = os.environ.get("HARTREE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "hartree")
    return os.path.join(base, "atom_basis")


def cache_path(cache, stage, element):
    return os.path.join(cache, f"{stage}_{element}.json")


def load(cache, stage, element):
    try:
        with open(cache_path(cache, stage, element)) as f:
            return json.load(f)
    except OSError:
        return None


def save(cache, stage, element, doc):
    os.makedirs(cache, exist_ok=True)
    tmp = cache_path(cache, stage, element) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, cache_path(cache, stage, element))
