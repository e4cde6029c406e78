"""A student that fine-tunes the encoder's top layers: it starts from the pretrained layers, those
layers learn, and the artifact carries them (a reloaded parser reads exactly as the trained one)."""

from __future__ import annotations

import pytest
import torch

from recmodels.text import load_text_encoder
from steering.catalog_index import CatalogIndex
from steering.learned_parser import LearnedParser
from steering.reading import N_ROLES, Role
from steering.student import CommandEncoder, StudentConfig, build_student

TEXTS = ["no more horror please", "something from the nineties, like Fargo"]


@pytest.fixture(scope="module")
def encoder() -> CommandEncoder:
    return CommandEncoder(load_text_encoder())


def test_the_tuned_layers_start_pretrained_and_the_frozen_encoder_stops_below_them(encoder):
    config = StudentConfig(encoder_layers=3, tune_layers=2)
    frozen = encoder.configured(config)
    assert frozen.layers == 1
    student = build_student(config, encoder)
    pretrained = encoder.transformer.encoder.layer[1].state_dict()
    tuned = student.tuned[0].state_dict()
    assert all(torch.equal(pretrained[k], tuned[k]) for k in pretrained)
    # Frozen part + the student's copies of the next layers = the pretrained encoder, before training.
    full = CommandEncoder(encoder._sentence_model, layers=3, quantized=False).encode(TEXTS, [[], []])
    low = CommandEncoder(encoder._sentence_model, layers=1, quantized=False).encode(TEXTS, [[], []])
    student.eval()
    for f_full, f_low in zip(full, low, strict=True):
        hidden = f_low.tokens.unsqueeze(0)
        for layer in student.tuned:
            hidden = layer(hidden, attention_mask=torch.zeros(1, 1, 1, hidden.shape[1]))
            hidden = hidden[0] if isinstance(hidden, tuple) else hidden
        assert torch.allclose(hidden[0], f_full.tokens, atol=1e-4)


def test_a_student_that_tunes_layers_needs_them():
    from steering.student import CommandStudent

    with pytest.raises(ValueError, match="needs them"):
        CommandStudent(StudentConfig(encoder_layers=3, tune_layers=1))


def test_the_tuned_layers_learn_and_travel_in_the_artifact(encoder, ml_dataset, tmp_path):
    config = StudentConfig(encoder_layers=2, tune_layers=1)
    student = build_student(config, encoder)
    before = [p.detach().clone() for p in student.tuned.parameters()]
    parser = LearnedParser(CatalogIndex(ml_dataset), student, encoder.configured(config))
    features = parser.encoder.encode(TEXTS, [parser.finder.find(t) for t in TEXTS])
    optimiser = torch.optim.AdamW(student.parameters(), lr=1e-3)
    student.train()
    for _ in range(2):
        logits, flags = student(features)
        loss = logits.logsumexp(-1).sum() + flags.sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    student.eval()
    assert any(not torch.equal(a, b) for a, b in zip(before, student.tuned.parameters(), strict=True))

    path = tmp_path / "command-parser.pt"
    parser.save(path)
    loaded = LearnedParser.load(path, ml_dataset, encoder=encoder)
    assert loaded.student.config == config and loaded.encoder.layers == 1
    for mine, theirs in zip(parser.predict(TEXTS), loaded.predict(TEXTS), strict=True):
        assert torch.allclose(mine.role_probs, theirs.role_probs, atol=1e-5)
        assert torch.allclose(mine.flag_probs, theirs.flag_probs, atol=1e-5)


def test_a_quantized_encoders_vectors_do_not_depend_on_the_batch(encoder):
    """Dynamic int8 scales activations by the batch's range: training encodes thousands of commands,
    serving one, and both must give a command the same vectors."""
    quantized = CommandEncoder(encoder._sentence_model, layers=1, quantized=True)
    texts = ["no horror", "something from the nineties, like Fargo, but nothing too long or too loud please"]
    together = quantized.encode(texts, [[], []])
    for text, batched in zip(texts, together, strict=True):
        assert torch.equal(quantized.encode([text], [[]])[0].tokens, batched.tokens)


@pytest.mark.parametrize(
    "text, wanted, anchors",
    [
        ("the wrong trousers", {168}, set()),
        ("Il Postino or Cinema Paradiso pls!", {13, 169}, set()),
        ("more like Fargo", set(), {99}),
        ("Fargo, but with more snow", set(), {99}),
    ],
)
def test_a_command_that_only_names_titles_asks_for_them(encoder, ml_dataset, text, wanted, anchors):
    """The labelling contract: naming titles and nothing else asks for them, whatever the student leans
    to; with any other word the student's reading stands."""
    config = StudentConfig(encoder_layers=2, tune_layers=1)
    parser = LearnedParser(
        CatalogIndex(ml_dataset), build_student(config, encoder), encoder.configured(config)
    )
    prediction = parser.predict([text])[0]
    assert [m.kind for m in prediction.mentions] == ["item"] * (len(wanted) or 1)
    leaning = torch.full((len(prediction.mentions), N_ROLES), 0.05)
    leaning[:, Role.SOFT_POSITIVE] = 0.75  # a taste anchor, and not sure of it
    prediction.role_probs = leaning
    update = parser.read(text, prediction, set(), rules=set()).update
    assert set(update.positive.items) == wanted
    assert {s.item for s in update.positive.soft if s.item is not None} == anchors
