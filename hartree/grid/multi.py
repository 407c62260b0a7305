"""Dynamic scheduling of slabs over several GPUs (VMD's multi-GPU scheme).

One host thread per device; every thread enters its device's context, builds its own
state once (uploads, compiled module) with ``setup(device)``, then pulls slab indices from
a shared queue until it is empty, so a faster or less loaded GPU simply takes more slabs
(Stone et al. 2009, sec. 4.4).  Works for any number of devices, including one, and for
the same device listed twice (two host threads sharing a GPU).
"""

import queue
import threading


def run_dynamic(items, devices, device_context, setup, work):
    """Call work(state, item) for every item, spread over devices; returns {item index: device}.

    items: list of work items (slabs); devices: device indices; device_context(device):
    a context manager making that device current (cupy.cuda.Device); setup(device) -> state.
    The first exception raised by any thread is re-raised here after all threads stop.
    """
    pending = queue.Queue()
    for i in range(len(items)):
        pending.put(i)
    done, errors, lock = {}, [], threading.Lock()

    def worker(device):
        try:
            with device_context(device):
                state = setup(device)
                while not errors:
                    try:
                        i = pending.get_nowait()
                    except queue.Empty:
                        return
                    work(state, items[i])
                    with lock:
                        done[i] = device
        except BaseException as exc:  # reported to the caller below
            with lock:
                errors.append(exc)

    if len(devices) == 1:
        worker(devices[0])
    else:
        threads = [threading.Thread(target=worker, args=(d,), name=f"grid-gpu-{d}") for d in devices]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    return done
