"""The ``kgcult`` command line: a thin click layer over library functions of the same names.

Machine output goes to stdout; messages and errors to stderr; errors exit non-zero.
"""
from __future__ import annotations

import difflib
import errno
import importlib
import logging
from pathlib import Path

import click

from kgcult import log as kglog
from kgcult.errors import KgcultError
from kgcult.safe_text import clip
from kgcult.store import open_store, resolve_location
from kgcult.version import __version__


class Context:
    def __init__(self, location: str | None):
        self.location = resolve_location(location)
        self._store = None

    def store(self, read_only: bool = False, create: bool = True):
        """Open the store on first use (commands that need none never touch it). Write
        commands open it read-write: those that fill a store (load, snapshot import, mirror,
        ingest) create it if missing, the others (closure) pass ``create=False`` so a
        mistyped ``--store`` is an error, not a new empty store; read commands use
        :meth:`reader`."""
        if self._store is None:
            if not create and "://" not in self.location and not Path(self.location).exists():
                raise KgcultError(f"no store at {self.location}: create one with `kgcult load` or "
                                  "`kgcult snapshot import` (or check --store / $KGCULT_STORE)")
            self._store = open_store(self.location, read_only=read_only)
        return self._store

    def reader(self, closure: bool = False, require: bool = True):
        """The store opened read-only, for read commands: a store that does not exist is an
        error (never silently created empty). With ``closure``, a store whose hierarchy
        closure is stale is reopened read-write so the command can rebuild it first, and a
        remote endpoint that holds no closure is an error saying how to provide one (a
        warning with ``require=False``: the command shows what it can without it)."""
        store = self.store(read_only=True)
        if closure and getattr(store, "remote", False):
            if require:
                store.require_closure()
            elif not store.has_closure():
                _cli_log.warning("%s holds no kgcult closure: ancestors and root counts are empty "
                                 "(docs/serve.md, \"The closure on a remote engine\")", store.location)
        if closure and not getattr(store, "remote", False) and store.closure_stale:
            self.close()
            try:
                store = self.store(read_only=False)
            except KgcultError as e:
                raise KgcultError(f"{e}; the hierarchy closure is stale and must be rebuilt "
                                  "(run `kgcult closure` when no other process holds the store)") from None
        return store

    def close(self):
        if self._store is not None:
            self._store.close()
            self._store = None


_cli_log = logging.getLogger("kgcult.cli")


def info(msg: str) -> None:
    """A message for the user on stderr, through logging: ``-q`` silences it."""
    _cli_log.info("%s", msg)


# Each command's module, loaded when the command runs (or --help lists it), so that
# `kgcult link` does not pay for importing the server, the probers or the mirror.
COMMANDS = {
    "load": "kgcult.cli.store:load",
    "snapshot": "kgcult.cli.store:snapshot_group",
    "closure": "kgcult.cli.store:closure",
    "sparql": "kgcult.cli.query:sparql",
    "show": "kgcult.cli.query:show",
    "stats": "kgcult.cli.query:stats",
    "mirror": "kgcult.cli.acquire:mirror_command",
    "ingest": "kgcult.cli.acquire:ingest_command",
    "views": "kgcult.cli.views:views_command",
    "build": "kgcult.cli.views:build_command",
    "link": "kgcult.cli.link:link_group",
    "annotate": "kgcult.cli.annotate:annotate_command",
    "makieval": "kgcult.cli.link:makieval_group",
    "probe": "kgcult.cli.probe:probe_group",
    "spectral": "kgcult.cli.probe:spectral_cmd",
    "serve": "kgcult.cli.serve:serve",
    "taxonomy": "kgcult.cli.synth:taxonomy_cmd",
    "synth": "kgcult.cli.synth:synth_cmd",
}


class KgcultGroup(click.Group):
    """The ``kgcult`` group: commands from :data:`COMMANDS`, loaded on first use (click's
    lazy-group pattern), and KgcultError turned into ``error: ...`` on stderr and exit 1."""

    def list_commands(self, ctx) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def resolve_command(self, ctx, args):
        """Click's lookup, with the closest command names suggested for a typo."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            name = args[0] if args else ""
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            if close and not name.startswith("-"):
                e.message = f"{e.message} Did you mean {' or '.join(repr(c) for c in close)}?"
            raise

    def get_command(self, ctx, name: str):
        if name not in self.commands and name in COMMANDS:
            module, attr = COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return self.commands.get(name)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KgcultError as e:
            message, code = str(e), e.exit_code
        except OSError as e:  # disk full, permission denied, ...: what and where, not a traceback
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            hint = " (the disk is full)" if e.errno == errno.ENOSPC else ""
            message, code = f"{where}{e.strerror or e}{hint}", 1
        except MemoryError as e:
            message, code = f"out of memory{': ' + str(e) if str(e) else ''}", 1
        except RecursionError:  # a reader that recursed per nesting level: one line, not a traceback
            message, code = "the input is nested too deeply to read (past Python's recursion limit)", 1
        # Exit outside the except block: the error's traceback (frames holding the open
        # store) is dropped, so an in-process caller can reopen the store at once.
        click.echo(f"error: {clip(message)}", err=True)  # one line of bounded length, whatever it quotes
        ctx.exit(code)


@click.group(cls=KgcultGroup)
@click.option("--store", "store_location", metavar="PATH", envvar="KGCULT_STORE",
              help="Store directory (default .kgcult/store, or $KGCULT_STORE), or "
                   "sparql+http(s)://host/path for a remote SPARQL endpoint (read commands).")
@click.option("-v", "--verbose", count=True, help="More messages on stderr (debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings and errors on stderr.")
@click.version_option(__version__, prog_name="kgcult")
@click.pass_context
def main(ctx, store_location, verbose, quiet):
    """kgcult: a local Wikidata mirror for research on cultural knowledge in LMs."""
    kglog.setup_cli(-1 if quiet else verbose)
    ctx.obj = Context(store_location)
    ctx.call_on_close(ctx.obj.close)
