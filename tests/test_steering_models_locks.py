"""A worker's steering models (app/services/steering_models.py): a command waits only for what it
uses. The start-up warm-up loads the soft-preference similarity last (the text model: seconds); a
command that needs only the parser must not wait for it."""

from __future__ import annotations

import threading
from pathlib import Path

from app.services import steering as steering_service
from app.services.steering_models import SteeringModels
from app.settings import Settings


def test_a_command_gets_its_parser_while_the_similarity_is_still_loading(synthetic_dataset, tmp_path: Path):
    settings = Settings(
        _env_file=None, data_dir=tmp_path, dataset=synthetic_dataset.name, steering_parser="offline"
    )
    models = SteeringModels(settings, synthetic_dataset, rec_scorer=None)
    parsers, similarity = [], []
    with models.similarity_lock:  # as the warm-up holds it while the text model loads
        parsing = threading.Thread(target=lambda: parsers.append(steering_service.session_parser(models)))
        parsing.start()
        parsing.join(timeout=60)
        assert not parsing.is_alive() and parsers[0].name == "offline"

        # A soft command's similarity does wait for the load, and gets what it loaded.
        loading = threading.Thread(
            target=lambda: similarity.append(steering_service._similarity(models, None)), daemon=True
        )
        loading.start()
        loading.join(timeout=0.3)
        assert loading.is_alive() and similarity == []
        sentinel = object()
        models.similarities[None, settings.steering_similarity] = sentinel
    loading.join(timeout=10)
    assert similarity == [sentinel]
