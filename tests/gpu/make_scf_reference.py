"""Write the CPU-engine SCF results the GPU SCF tests compare with (no GPU needed):

python tests/gpu/make_scf_reference.py      # -> tests/gpu/data/scf_cpu_reference.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.pop("HARTREE_GPU_PREFER_STORED", None)
from tests.gpu.test_scf_gpu import CASES, STORED, cpu_reference  # noqa: E402


def main():
    out = {}
    for case in CASES:
        ref = cpu_reference(case)
        out[case[0]] = {k: v for k, v in ref.items() if k != "source"}
        out[case[0]]["engine"] = ref["source"]
        print(case[0], ref["energy"], ref["iterations"])
    with open(STORED, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
