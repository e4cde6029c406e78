"""Where an LLM endpoint's weights are kept and how a worker reads them.

The LLM agents weigh the LLM's answers against the offline evidence (:mod:`graph.agents.llm_evidence`);
the weights (:class:`graph.agents.llm_evidence.LLMWeights`) are fitted for one endpoint on the
validation split by the lab (:mod:`lab.calibration.llm`, which says how; `recloop calibrate --agents
llm`). They are a JSON file beside the offline calibration
(``calibration/<rec>+<reward>.llm-<digest>.json``), keyed by the dataset, both models, the model
name the endpoint reports, the prompt version and the structured-output method. A worker only
reads them (:func:`stored_llm_weights`); without them the LLM agents use the conservative default.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

from graph import prompts
from graph.agents.llm_evidence import LLMWeights
from graph.caches import LoopCaches
from graph.calibration import calibration_path, models_key, read_keyed
from graph.config import LoopConfig
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer

LLM_CALIBRATION_VERSION = 2
"""2: the user weight is fitted on the loop's HR@1, not on the verdicts' balanced accuracy."""


def prompt_version() -> str:
    """A digest of every prompt template and answer shape: a changed prompt is a new endpoint fit."""
    from graph.agents.llm import AnswerShapes  # the LLM stack only when used (as graph/context.py)

    text = inspect.getsource(prompts) + inspect.getsource(AnswerShapes)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def portable_model_name(reported: str) -> str:
    """The endpoint's model name without the server's directories: llama.cpp reports the GGUF file's
    absolute path, which would tie a fit to one machine's layout rather than to the model."""
    return Path(reported).name if reported.startswith(("/", "~", "./", "../")) else reported


def llm_weights_key(
    config: LoopConfig, catalog: Dataset, rec: Scorer, reward: Scorer, endpoint_model: str
) -> dict[str, Any]:
    return {
        "version": LLM_CALIBRATION_VERSION,
        **models_key(catalog, rec, reward),
        "endpoint_model": portable_model_name(endpoint_model),
        "prompt_version": prompt_version(),
        "structured_method": config.llm.structured_method,
        "n_candidates": config.n_candidates,
    }


def _digest(key: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def llm_weights_path(rec: Scorer, reward: Scorer, key: dict[str, Any]) -> Path | None:
    """Beside the offline calibration; None for models built in memory (kept per process)."""
    offline = calibration_path(rec, reward)
    return offline.with_name(f"{offline.stem}.llm-{_digest(key)}.json") if offline else None


def llm_weights_memo(key: dict[str, Any]) -> str:
    """Where :class:`LoopCaches` keeps an endpoint's weights."""
    return f"llm:{_digest(key)}"


def read_llm_weights(
    path: Path | None, key: dict[str, Any], caches: LoopCaches | None = None
) -> LLMWeights | None:
    memo = llm_weights_memo(key)
    if caches is not None:
        with caches.lock:
            found = caches.calibrations.get(memo)
        if found is not None:
            return found  # type: ignore[return-value]
    if path is None:
        return None
    return read_keyed(path, key, "weights", LLMWeights.from_json)


def stored_llm_weights(
    config: LoopConfig, catalog: Dataset, rec: Scorer, reward: Scorer, caches: LoopCaches | None = None
) -> tuple[LLMWeights | None, dict[str, Any]]:
    """The weights fitted for the configured endpoint (None: not fitted) and their key."""
    from llm.client import endpoint_model  # the LLM stack only when used (as graph/context.py)

    key = llm_weights_key(config, catalog, rec, reward, endpoint_model(config.llm))
    return read_llm_weights(llm_weights_path(rec, reward, key), key, caches), key
