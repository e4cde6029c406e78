"""Model names, their config classes and one constructor for all of them."""

from __future__ import annotations

import dataclasses
from typing import Any

from recmodels.base import SequentialRecommender
from recmodels.caser import Caser, CaserConfig
from recmodels.gru4rec import GRU4Rec, GRU4RecConfig
from recmodels.names import MODEL_NAMES, ModelName
from recmodels.sasrec import SASRec, SASRecConfig
from recmodels.textrec import TextRec, TextRecConfig
from recmodels.train_config import TRAIN_FIELDS, TrainConfig

ModelConfig = SASRecConfig | GRU4RecConfig | CaserConfig | TextRecConfig

_MODELS: dict[ModelName, tuple[type[ModelConfig], type[SequentialRecommender]]] = {
    "sasrec": (SASRecConfig, SASRec),
    "gru4rec": (GRU4RecConfig, GRU4Rec),
    "caser": (CaserConfig, Caser),
    "textrec": (TextRecConfig, TextRec),
}


class UnknownModelError(ValueError):
    pass


def config_class(name: str) -> type[ModelConfig]:
    return _entry(name)[0]


def model_class(name: str) -> type[SequentialRecommender]:
    return _entry(name)[1]


def make_config(name: str, **overrides: Any) -> ModelConfig:
    """The model's default config with ``overrides``; an unknown field is an error naming it."""
    cls = config_class(name)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"{name}: unknown config field(s) {unknown}; known: {sorted(known)}")
    return cls(**overrides)


def split_overrides(name: str, overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Overrides of the model's config and of :class:`TrainConfig`; a field of neither is an error."""
    known = {f.name for f in dataclasses.fields(config_class(name))}
    unknown = sorted(set(overrides) - known - TRAIN_FIELDS)
    if unknown:
        raise ValueError(f"{name}: unknown config field(s) {unknown}; known: {sorted(known | TRAIN_FIELDS)}")
    model = {k: v for k, v in overrides.items() if k in known}
    return model, {k: v for k, v in overrides.items() if k not in known}


def make_train_config(name: str, **overrides: Any) -> tuple[ModelConfig, TrainConfig]:
    """The model's config and the training config, each its defaults with its share of ``overrides``."""
    model, train = split_overrides(name, overrides)
    return make_config(name, **model), TrainConfig(**train)


def build_model(name: str, n_items: int, **config_overrides: Any) -> SequentialRecommender:
    config = make_config(name, **config_overrides)
    return _entry(name)[1](n_items, config)


def model_config(model: SequentialRecommender) -> ModelConfig:
    """The config a registered model was built with."""
    config = getattr(model, "config", None)
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"{type(model).__name__} carries no config dataclass")
    return config


def _entry(name: str) -> tuple[type[ModelConfig], type[SequentialRecommender]]:
    try:
        return _MODELS[name]
    except KeyError:
        raise UnknownModelError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}") from None


assert tuple(_MODELS) == MODEL_NAMES, "every name in ModelName has one entry in _MODELS, in order"
