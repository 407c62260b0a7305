"""Records of the optimizations of benchmarks/atom_basis.py: the checkpoint of a run that may
be cut short, its resumption, the per-κ accumulation of runs, and where the SCFs ran."""

import time


def partial_record(history, t0):
    """Checkpoint of an optimization that may be cut short: its best point, the evaluation
    count, the history so far and the wall time since t0 (time.perf_counter() seconds)."""
    ok = [h for h in history if h["energy"] is not None]
    top = min(ok, key=lambda h: h["energy"])
    return {
        "groups": top["parameters"],
        "energy": top["energy"],
        "evaluations": len(history),
        "wall_time": time.perf_counter() - t0,
        "history": history,
        "start_energy": history[0]["energy"],
        "stop_reason": "interrupted (partial)",
        "device": device_label(),
    }


def merge_prior(res, prior):
    """Prepend the history, count, wall time and start energy of an interrupted run
    (`prior`, a partial_record) to the OptimizationResult `res` of its resumption (in place)."""
    res.history = prior["history"] + [dict(h, evaluation=h["evaluation"] + prior["evaluations"]) for h in res.history]
    res.evaluations = len(res.history)
    res.wall_time += prior["wall_time"]
    res.start_energy = prior["start_energy"]


def append_run(record, res):
    """Add one optimization run `res` (OptimizationResult) to a per-κ record: its history
    (evaluations renumbered after the record's), count and wall time; keep the best point."""
    offset = record["evaluations"]
    record["history"] += [dict(h, evaluation=h["evaluation"] + offset) for h in res.history]
    if res.energy < record["energy"]:
        record.update(groups=res.to_dict()["groups"], energy=res.energy)
    record["evaluations"] = len(record["history"])
    record["wall_time"] += res.wall_time


def device_label():
    """Where the SCFs of this process run (AtomSCFOptions(device='auto')): the GPU's name or 'cpu'."""
    from hartree.device.selection import gpu_status

    ok, name = gpu_status()
    return name if ok else "cpu"
