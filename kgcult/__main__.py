"""``python -m kgcult``: the same as the ``kgcult`` command."""
from kgcult.cli import main

main()
