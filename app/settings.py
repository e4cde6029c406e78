"""The one settings class of recloop (environment prefix ``RECLOOP_``).

Read once per process through :func:`get_settings`; tests build their own
``Settings(...)`` and pass it down instead of touching ``os.environ``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from graph.config import LoopConfig
from llm.config import LLMConfig, StructuredMethod
from recmodels.names import ModelName
from steering.config import ParserConfig


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RECLOOP_", env_file=".env", extra="ignore")

    # --- storage -----------------------------------------------------------------
    data_dir: Path = Field(Path("./data"), description="Datasets, model artifacts, embedded database.")
    database_url: str | None = Field(
        None,
        validation_alias=AliasChoices("RECLOOP_DATABASE_URL", "DATABASE_URL"),
        description="PostgreSQL URL; unset means an embedded PostgreSQL under data_dir/pg.",
    )

    # --- models ------------------------------------------------------------------
    dataset: str = Field("movielens", description="Dataset the service recommends from.")
    rec_model: ModelName = "sasrec"
    reward_model: ModelName = "sasrec"
    torch_threads: int = Field(1, ge=1, description="One thread beats two on a shared 2-core box.")
    scan_threads: int = Field(
        2,
        ge=1,
        description="Threads for one pass over a catalog of 2^17 items or more (recmodels/scan.py): "
        "memory-bound, so two cores read a 10^6-item table in about half the time; plain threads "
        "that wait without spinning. Smaller catalogs are one call.",
    )

    # --- the feedback loop -----------------------------------------------------------
    max_rounds: int = Field(4, ge=1, le=20, description="Paper default round limit.")
    n_candidates: int = Field(20, ge=2, le=200)
    accept_top_k: int | None = Field(
        None,
        ge=1,
        description="Offline user agent also accepts what the reward model ranks within this top-k; "
        "unset: only its favourite (then the loop's answer is the validation-weighted agreement of both "
        "models, graph/README.md). The reward-model-only baseline of user simulation likes this share "
        "(k / n_candidates, unset: 1) of a list.",
    )
    reward_display: Literal["top_picks", "score"] = Field(
        "top_picks",
        description="Show the user agent the reward model's top picks (recommendation mode) "
        "or its raw score with a warning (user-simulation mode).",
    )

    # --- LLM (any OpenAI-compatible endpoint) -----------------------------------------
    llm_base_url: str | None = Field(None, description="Unset: deterministic offline agents.")
    llm_model: str = "gpt-4o-mini"
    llm_api_key: SecretStr = SecretStr("not-needed")
    llm_temperature: float = Field(0.0, ge=0.0, le=2.0)
    llm_timeout_s: float = Field(30.0, gt=0)
    llm_max_retries: int = Field(2, ge=0, le=10, description="Retries after invalid output, then fallback.")
    llm_structured_method: StructuredMethod = "json_schema"
    # Output caps per kind of call. A small local model left uncapped talks for 1,000+ tokens; a
    # call that hits its cap is an invalid answer (retried with feedback, then the fallback).
    llm_max_tokens_rec: int = Field(160, ge=16, le=8192, description="Cap of a recommendation call.")
    llm_max_tokens_user: int = Field(128, ge=16, le=8192, description="Cap of a judgement call.")
    llm_max_tokens_items: int = Field(
        512, ge=16, le=8192, description="Cap of a user-simulation call (one verdict per listed item)."
    )
    llm_max_tokens_parser: int = Field(256, ge=16, le=8192, description="Cap of a steering-parser call.")
    llm_thoughts_max_chars: int = Field(
        160,
        ge=0,
        le=4000,
        description="maxLength of the step-by-step 'thoughts' field in structured answers; 0 drops it.",
    )
    llm_reason_max_chars: int = Field(
        200, ge=20, le=4000, description="maxLength of a reason in structured answers."
    )
    llm_loop_budget_s: float = Field(
        60.0,
        gt=0,
        description="LLM wall time one loop may spend (retries included); past it the remaining steps "
        "use the offline agents and the round records the cause 'budget'.",
    )

    # --- HTTP ---------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = Field(1, ge=1, le=64, description="uvicorn worker processes sharing one PostgreSQL.")
    db_pool_size: int = Field(10, ge=1, le=200, description="Connections per worker for the service tables.")
    checkpoint_pool_size: int = Field(
        10, ge=1, le=200, description="Connections per worker for LangGraph checkpoints (one per query)."
    )
    checkpoint_schema: str = Field(
        "langgraph",
        pattern=r"^[a-z_][a-z0-9_]*$",
        description="Schema of LangGraph's checkpoint tables: kept out of Alembic's sight.",
    )
    checkpoint_durability: Literal["sync", "async", "exit"] = Field(
        "async", description="LangGraph durability: when each step's checkpoint is written."
    )
    checkpoint_write_behind: bool = Field(
        True,
        description="Keep a round's checkpoint writes in memory and commit them in one durable "
        "transaction when the round closes (one fsync per round instead of about ten).",
    )
    checkpoint_commit_delay_ms: float = Field(
        100.0,
        ge=0,
        le=1000,
        description="Longest a finished round waits for its background commit, so that rounds closing "
        "together share one fsync; a run that ends sooner commits everything with its loop history. "
        "Nothing is acknowledged before it is committed. 0: commit each round at once.",
    )
    checkpoint_cached_threads: int = Field(
        256,
        ge=0,
        le=100_000,
        description="Threads whose newest checkpoint a worker keeps (as the rows it wrote), so that a "
        "session's next run on the same worker opens with one index lookup instead of reading every "
        "channel back. About 100-300 KB per thread; 0 turns it off.",
    )
    # --- retention (docs/deploy.md, "Retention"; `recloop db prune`) ---------------------------
    checkpoint_retention: Literal["keep_latest", "all"] = Field(
        "keep_latest",
        description="keep_latest: once a session's last loop is checkpoint_history_days old, keep only "
        "its newest checkpoint (what resuming and GET /v1/sessions/{id} read; the loop history lives in "
        "its own tables and is never pruned). all: keep every checkpoint and task write forever.",
    )
    checkpoint_history_days: float = Field(
        7.0,
        ge=0,
        description="How long every checkpoint of an idle session is kept after its last loop (time "
        "travel, forks and replays from any past step work meanwhile); 0: prune right after a loop.",
    )
    session_idle_ttl_days: float = Field(
        0.0,
        ge=0,
        description="Delete sessions (loop history and checkpoints included) idle for this long, as "
        "LangGraph's server expires threads; 0: never (the default: nothing a user made vanishes).",
    )
    prune_batch_size: int = Field(
        500, ge=1, le=100_000, description="Sessions pruned per batch (one short query and lock each)."
    )
    max_history_items: int = Field(1000, ge=1, description="Longest history a session accepts.")
    max_candidates: int = Field(200, ge=2, description="Longest candidate list a request accepts.")
    db_retry_after_s: int = Field(2, ge=1, description="Retry-After sent with 503 when the database is down.")
    db_connect_timeout_s: float = Field(3.0, gt=0, description="Fail fast (503) instead of hanging.")
    db_pool_timeout_s: float = Field(
        15.0, gt=0, description="Longest wait for a pooled connection under load before answering 503."
    )
    db_outage_timeout_s: float = Field(
        1.0,
        gt=0,
        description="Longest wait for a pooled connection while the database is known to be down: its "
        "503 (Retry-After) comes at once instead of after db_pool_timeout_s (postgres/outage.py).",
    )
    run_outage_wait_s: float = Field(
        10.0,
        ge=0,
        description="How long a loop's run that lost the database waits for it to come back, then goes "
        "on from its last checkpoint in the same request (app/services/loops.py); past it the request "
        "answers 503 and the loop is resumed later. 0: never wait.",
    )
    lock_pool_size: int = Field(
        40, ge=1, le=500, description="Connections per worker holding advisory locks (one per running loop)."
    )
    api_key_cache_s: float = Field(
        30.0,
        ge=0,
        description="How long a worker trusts a verified API key before asking the database again.",
    )
    max_body_bytes: int = Field(
        1_048_576,
        ge=1024,
        description="Largest request body accepted; a larger one is answered 413 before it is read.",
    )
    max_json_depth: int = Field(
        32,
        ge=2,
        le=1000,
        description="Deepest nesting of arrays and objects in a JSON body; a deeper one is answered 422.",
    )
    max_metadata_bytes: int = Field(
        65_536,
        ge=1024,
        le=1_048_576,
        description="Largest thread metadata (LangGraph's protocol), as compact UTF-8 JSON; 422 past it.",
    )
    stale_check_s: float = Field(
        2.0, gt=0, description="How often a worker looks for loops left running (app/services/recovery.py)."
    )
    stale_grace_s: float = Field(
        10.0,
        gt=0,
        description="How long a worker's lock must stay free, the database up, before its running loops "
        "are resolved as abandoned.",
    )
    idempotency_ttl_s: int = Field(
        86_400,
        ge=60,
        description="How long an Idempotency-Key's answer is kept for replay (per API key, in "
        "PostgreSQL); `recloop db prune` deletes older keys. 24 h, as Stripe keeps keys: retries "
        "after an outage come within minutes, and a day covers a client that retries the next morning.",
    )
    rate_limit_per_minute: int = Field(
        600,
        ge=0,
        description="Requests per API key and minute, over all workers; beyond it 429 with Retry-After. "
        "0: off.",
    )
    llm_token_budget_per_day: int = Field(
        1_000_000,
        ge=0,
        description="LLM tokens (prompt + completion) per API key and UTC day, counted from the loop "
        "history; LLM requests beyond it answer 429 until midnight UTC. 0: off.",
    )
    checkpointer: Literal["postgres", "postgres_stock", "memory"] = Field(
        "postgres",
        description="postgres: pooled saver with durable rounds (postgres/checkpoints.py); "
        "postgres_stock: LangGraph's AsyncPostgresSaver as shipped, and memory: in-process only "
        "(sessions do not survive a restart) — both for benchmark comparisons.",
    )

    # --- natural-language steering (RecBot) --------------------------------------------
    steering_similarity: Literal["auto", "text", "collaborative"] = Field(
        "auto",
        description="Soft preferences: the bundled MiniLM sentence model (embeddings extra) when "
        "installed, else the rec model's item embeddings; or force one.",
    )
    steering_semantic_weight: float = Field(
        0.7, ge=0.0, le=1.0, description="Matcher: share of semantic similarity vs the rec model's score."
    )
    steering_attenuation: float = Field(
        1.0, ge=0.0, description="Attenuator: penalty per standard deviation of similarity to rejected items."
    )
    steering_max_command_chars: int = Field(500, ge=1, le=10_000, description="Longest command accepted.")
    steering_parser: Literal["auto", "offline", "llm", "learned"] = Field(
        "auto",
        description="Command parser: auto picks the best available -- learned when its artifact exists "
        "(recloop train-parser), else llm when an endpoint is set, else offline (rules).",
    )
    steering_parser_artifact: Path | None = Field(
        None, description="The learned parser's artifact; default models_dir/<dataset>/command-parser.pt."
    )
    steering_parser_train_on_serve: bool = Field(
        True,
        description="A `recloop serve` that prepares (not --no-prepare) starts `recloop prepare-parser` in "
        "the background when auto would use a learned parser not trained yet; workers switch when it is.",
    )
    steering_parser_train_threads: int = Field(
        0,
        ge=0,
        description="torch threads training the learned parser (0: every core this process may use). "
        "Unlike serving's batch-of-one inference, its batches use a second core: 1.4x on 2 cores.",
    )
    steering_warmup: bool = Field(
        True,
        description="Load the soft-preference similarity (the text model takes seconds) in the background "
        "at start-up, so the first steering command does not wait for it.",
    )

    @model_validator(mode="after")
    def _memory_checkpoints_stay_in_one_process(self) -> Settings:
        # Each worker would keep its own threads: a session would fork between workers.
        if self.checkpointer == "memory" and self.workers > 1:
            raise ValueError("checkpointer 'memory' keeps sessions inside one process: use workers 1")
        return self

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @property
    def datasets_dir(self) -> Path:
        return self.data_dir / "datasets"

    @property
    def models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def runs_dir(self) -> Path:
        """Where `recloop eval` writes a run directory unless given --run-dir (browsed by /v1/runs)."""
        return self.data_dir / "runs"

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_base_url)

    def llm_config(self) -> LLMConfig:
        """The LLM endpoint and call limits, as the graph and the steering parser take them."""
        return LLMConfig(
            base_url=self.llm_base_url,
            model=self.llm_model,
            api_key=self.llm_api_key.get_secret_value(),
            temperature=self.llm_temperature,
            timeout_s=self.llm_timeout_s,
            max_retries=self.llm_max_retries,
            structured_method=self.llm_structured_method,
            max_tokens_rec=self.llm_max_tokens_rec,
            max_tokens_user=self.llm_max_tokens_user,
            max_tokens_items=self.llm_max_tokens_items,
            max_tokens_parser=self.llm_max_tokens_parser,
            thoughts_max_chars=self.llm_thoughts_max_chars,
            reason_max_chars=self.llm_reason_max_chars,
        )

    def parser_train_threads(self) -> int:
        """``steering_parser_train_threads``, 0 resolved to the cores this process may run on."""
        if self.steering_parser_train_threads:
            return self.steering_parser_train_threads
        affinity = getattr(os, "sched_getaffinity", None)  # Linux: a container's or taskset's cores
        return len(affinity(0)) if affinity else os.cpu_count() or 1

    def parser_config(self) -> ParserConfig:
        """What choosing and building the steering parser reads (``steering.config``)."""
        return ParserConfig(
            models_dir=self.models_dir,
            choice=self.steering_parser,
            artifact=self.steering_parser_artifact,
            llm=self.llm_config(),
        )

    def loop_config(self) -> LoopConfig:
        """The loop's configuration (``graph.config``): the graph never reads these settings itself."""
        return LoopConfig(
            data_dir=self.data_dir,
            max_rounds=self.max_rounds,
            n_candidates=self.n_candidates,
            accept_top_k=self.accept_top_k,
            reward_display=self.reward_display,
            llm_loop_budget_s=self.llm_loop_budget_s,
            llm=self.llm_config(),
        )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
