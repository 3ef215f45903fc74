"""``python -m kgcult.cli``: the same as the ``kgcult`` command."""
from kgcult.cli import main

main()
