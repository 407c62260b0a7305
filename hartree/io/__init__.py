"""hartree.io: files in and out.

* :mod:`hartree.io.files` - the one place user files are read (UTF-8 text, JSON) and
  outputs written (atomically: temporary file, fsync, rename).
* :mod:`hartree.io.paths` - output paths checked before any computation.
* :mod:`hartree.io.molden`, :mod:`hartree.io.molden_read` - Molden files (write, read).
* :mod:`hartree.io.qcschema` - QCSchema ``AtomicResult`` JSON (read and write).
* :mod:`hartree.io.cube` - Gaussian cube files.

Molecule readers (XYZ, QCSchema molecules) live on :class:`hartree.Molecule`.  The
package imports none of its modules, so that importing the leaf modules (files, paths)
pulls in nothing else.
"""
