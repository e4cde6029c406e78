"""What a worker reads and plans steering commands with (app/services/steering.py): the catalog, the
rec model, and the command parsers and similarities it builds once."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from app.settings import Settings
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer
from steering.catalog_index import CatalogIndex
from steering.choice import ParserKind
from steering.config import ParserConfig
from steering.parsing import CommandParser
from steering.similarity import Similarity

ParserKey = tuple[ParserKind, ParserConfig, int | None]
"""A parser's kind, its settings and its learned artifact's mtime (None: not learned)."""


@dataclass(frozen=True, eq=False)
class SteeringModels:
    settings: Settings
    catalog: Dataset
    rec_scorer: Scorer | None
    """The offline agents' rec model (None: no models loaded)."""
    parsers: dict[ParserKey, CommandParser] = field(default_factory=dict)
    """Command parsers by what shapes them (built once: the LLM client, the learned model)."""
    similarities: dict[tuple[Scorer, str], Similarity] = field(default_factory=dict)
    """Soft-preference similarity by (rec scorer, backend): the text model takes seconds to load."""
    indexes: dict[str, CatalogIndex] = field(default_factory=dict)
    """The catalog's index by dataset fingerprint: read from the steering look-up prepare saved
    (steering/lookup.py), shared by every parser of the worker."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Guards ``parsers`` and ``indexes``: a command arriving while one is built waits for it."""
    similarity_lock: threading.Lock = field(default_factory=threading.Lock)
    """Guards ``similarities``: only a soft command waits while the start-up warm-up loads the text
    model (6.6 s on MovieLens); under the one lock every first command waited for it."""
