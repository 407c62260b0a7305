"""``python -m hartree``: the same as the ``hartree`` command."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
