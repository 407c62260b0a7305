"""The device layer: everything that knows a GPU exists, in one package.

Nothing here touches a device at import time.  Modules are imported where needed:
``cuda_source`` reads the hand-written CUDA files shipped with the package.
"""
