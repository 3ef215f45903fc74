"""What acquiring one subgraph did: the report ``mirror`` and ``ingest`` return per subgraph."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SubgraphReport:
    name: str
    graph: str
    members: int = 0
    triples: int = 0
    queries: int = 0
    resumed_queries: int = 0
    retries: int = 0
    dropped: int = 0                  # triples an endpoint sent that no query asked for
    seconds: float = 0.0
    skipped: str | None = None
    warnings: list[str] = field(default_factory=list)
