"""``kgcult serve``: the CLI layer over :class:`kgcult.serve.Server`."""
from __future__ import annotations

import os

import click

from kgcult.cli.main import info
from kgcult.serve import Server, ServeConfig
from kgcult.serve.config import check_config, exposure_warning, open_for_serving


@click.command("serve")
@click.option("--bind", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback exposes the store to the network.")
@click.option("--port", default=7878, show_default=True, type=int, help="TCP port (0: any free port).")
@click.option("--writable", is_flag=True,
              help="Accept SPARQL updates at /update (needs a bearer token; one is generated on loopback).")
@click.option("--token", envvar="KGCULT_SERVE_TOKEN", metavar="TOKEN",
              help="Bearer token for /update (or $KGCULT_SERVE_TOKEN); required with --writable off loopback.")
@click.option("--timeout", default=60.0, show_default=True, type=float,
              help="Seconds a query may run (504 after; WDQS allows 60).")
@click.option("--max-rows", default=None, type=int,
              help="Most rows (SELECT) or triples (CONSTRUCT) in a response (507 beyond; default: no cap, as WDQS).")
@click.option("--max-bytes", default=1 << 30, show_default=True, type=int,
              help="Most bytes in a response (507 beyond); a result past 1 MiB is spooled to disk, not held in memory.")
@click.option("--workers", default=8, show_default=True, type=int,
              help="Query worker processes (queries evaluated at once; each opens the store read-only).")
@click.option("--queue", default=64, show_default=True, type=int, help="Queries waiting for a worker (503 beyond).")
@click.option("--queue-timeout", type=float, default=None,
              help="Seconds a query may wait for a worker before 503 (default: --timeout).")
@click.option("--per-client", type=int, default=None,
              help="Requests in flight per client address (429 beyond; default: half the workers, at least 1).")
@click.option("--client-budget", type=float, default=60.0, show_default=True, metavar="SECONDS",
              help="Worker seconds a client address may use per minute while the workers are busy; past it, "
                   "its queries get 429 with Retry-After and its running ones are pre-empted first (as WDQS's "
                   "per-client time budget).")
@click.option("--preempt-after", type=float, default=0.5, show_default=True, metavar="SECONDS",
              help="A query whose client has nothing running and that finds no free worker for this long stops "
                   "the longest-running query of a heavier client over its --client-budget (429 for it) and "
                   "takes its worker (0: never).")
@click.option("--per-client-connections", type=int, default=16, show_default=True,
              help="Open connections per client address (429 at once beyond).")
@click.option("--worker-memory", type=int, default=None, metavar="MIB",
              help="Memory (address space, MiB) each query worker may use; a query past it gets 507 and its "
                   "worker is replaced (default: 3/4 of the machine's memory over the workers, at least 1024; "
                   "0: no limit).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests whose Host is NAME (repeatable; * for any). IP addresses, localhost "
                   "(on a loopback bind) and the --bind name are always accepted; other names get 421 "
                   "(DNS rebinding protection).")
@click.option("--cors", is_flag=True, help="Allow cross-origin requests (Access-Control-Allow-Origin: *).")
@click.option("--quiet", is_flag=True, help="No access log on stderr.")
@click.pass_obj
def serve(obj, bind, port, writable, token, timeout, max_rows, max_bytes, workers, queue, queue_timeout, per_client,
          client_budget, preempt_after,
          per_client_connections, worker_memory, allow_hosts, cors, quiet):
    """SPARQL 1.1 endpoint over the store, with a query page at /.

    Queries (GET/POST) at /query see every graph's triples, each once; updates at /update only with
    --writable and `Authorization: Bearer TOKEN`. Read-only by default.

    \b
    Examples:
      kgcult serve                       # http://127.0.0.1:7878/
      kgcult serve --port 8000 --timeout 10 --max-rows 10000
      kgcult serve --bind 0.0.0.0 --writable --token "$(openssl rand -hex 16)"
      curl -H 'Accept: text/csv' --data-urlencode 'query=SELECT * WHERE { ?s ?p ?o } LIMIT 3' \\
           http://127.0.0.1:7878/query
    """
    cfg = ServeConfig(bind=bind, port=port, writable=writable, token=token or None, timeout=timeout,
                      max_rows=max_rows, max_bytes=max_bytes, workers=workers, queue=queue,
                      queue_timeout=queue_timeout, per_client=per_client,
                      client_budget=client_budget, preempt_after=preempt_after,
                      per_client_connections=per_client_connections,
                      worker_memory=None if worker_memory is None else worker_memory << 20,
                      allow_hosts=tuple(allow_hosts), cors=cors, access_log=not quiet)
    check_config(cfg)  # refuse unsafe settings before opening the store
    warning = exposure_warning(cfg)
    if warning:
        info(warning)
    store = open_for_serving(obj.location, writable)
    obj._store = store  # closed by the CLI context
    if store.closure_stale:
        info("warning: the hierarchy closure is stale or missing; queries on kgc: closure properties "
             "(and the example queries) miss facts until you run `kgcult closure`")
    with Server(store, cfg) as server:
        def ready() -> None:
            info(f"kgcult serve: {os.path.abspath(obj.location)} at {server.url}/ "
                 f"(SPARQL endpoint {server.url}/query, {'writable' if writable else 'read-only'})")
            if cfg.generated_token:
                info(f"updates at {server.url}/update need: Authorization: Bearer {cfg.token}")
            info("press Ctrl+C to stop")
        server.serve_forever(ready)
