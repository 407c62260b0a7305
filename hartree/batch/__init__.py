"""``hartree batch``: many independent inputs as Dask tasks (docs/batch.md).

* :mod:`.task` -- the per-input task, a plain function of plain data (:class:`~.task.Job`
  in, :class:`~.task.Outcome` out) that any Dask worker runs: energy, gradient, geometry
  optimization or frequencies through hartree's Python APIs;
* :mod:`.inputs` -- on the client: input files read (through :mod:`hartree.io.files`),
  unique result names, options merged with an AtomicInput's, the fingerprint that lets a
  rerun skip finished inputs;
* :mod:`.cluster` -- where the tasks run: a local cluster planned from the machine (one
  worker per GPU, else by CPU cores) or an existing scheduler;
* :mod:`.runner` -- submits the jobs, writes each result atomically as it completes and the
  summary CSV, and stops cleanly on SIGINT/SIGTERM.

Dask is imported inside functions only: ``import hartree`` works without it.
"""
