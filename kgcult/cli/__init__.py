"""The ``kgcult`` command line: one module per command family, each a thin click layer
over the library functions of the same names. ``main`` is the console-script entry point."""
from __future__ import annotations

from kgcult.cli.main import main
from kgcult.cli.acquire import ingest_command, mirror_command
from kgcult.cli.link import link_group, makieval_group
from kgcult.cli.probe import probe_group, spectral_cmd
from kgcult.cli.query import show, sparql, stats
from kgcult.cli.serve import serve
from kgcult.cli.store import closure, load, snapshot_group
from kgcult.cli.synth import synth_cmd, taxonomy_cmd
from kgcult.cli.views import build_command, views_command

for command in (load, snapshot_group, closure, sparql, show, stats, mirror_command, ingest_command,
                views_command, build_command, link_group, makieval_group, probe_group, spectral_cmd,
                serve, taxonomy_cmd, synth_cmd):
    main.add_command(command)

__all__ = ["main"]
