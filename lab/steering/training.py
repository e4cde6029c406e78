"""Training the learned parser on simulated commands (simulation-augmented distillation, RecBot).

The simulator is the teacher: it writes commands and knows what each span means. Training
commands come from the training share of its templates; the thresholds are chosen on
validation commands written from the held-out share (phrasings the student never saw), so
the choice measures generalisation. Three settings are chosen together: the confidence a hard
constraint needs on its own, the (lower) one it needs when the rule parser reads the same
constraint on the same side, and whether the rules reading it on another side withhold it.
Selection: the fewest validation commands with a polarity inversion, then the best exact-reading
rate. The final head then learns from training and held-out commands together: a new student
trained again, or (``refit_epochs``) the selected one going on for a short pass at a lower rate (the
reported validation figures are those of the selection head, before the refit). The new student
needs neither the selection head nor the thresholds, so on two cores it trains in a forked process
beside them (:func:`refits_beside`); fits run under bfloat16 autocast where the CPU has it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import nn

from lab.steering.natural_labels import NaturalLabels, derive, read_training_set
from lab.steering.scoring import score_all, score_command
from lab.steering.simulator import SimulatedCommand, label_roles, simulate
from steering.catalog_index import CatalogIndex
from steering.learned_parser import LearnedParser, Thresholds
from steering.mentions import Mention, MentionFinder
from steering.preferences import Preferences
from steering.reading import Reading, assemble
from steering.rule_parser import OfflineParser
from steering.student import (
    CommandEncoder,
    CommandStudent,
    Features,
    StudentConfig,
    build_student,
    mention_cues,
)

MAX_INVERTED_KEPT = 50
HARD_CONFIDENCE_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)
AGREED_CONFIDENCE_GRID = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class ParserTrainConfig:
    n_train: int = 6_000
    n_val: int = 600
    epochs: int = 6
    """Fine-tuned encoder layers settle in a few epochs (a frozen encoder's head needed about 10;
    6 read the MovieLens development set v2 better than 4, paired +0.033 [+0.004, +0.065])."""
    batch_size: int = 64
    lr: float = 1e-3
    encoder_lr: float = 5e-5
    """Learning rate of the encoder layers a student fine-tunes (pretrained: a small step)."""
    seed: int = 0
    refit_all: bool = True
    """After the thresholds are chosen, train the final head on training and held-out commands."""
    refit_epochs: int | None = None
    """None: the refit trains a new student from scratch for ``epochs`` (about half of training's time:
    the profile of issue 43). N: it continues the selected student (warm) for N epochs over every
    command at ``refit_lr_scale`` of the rates, at about N / ``epochs`` of that cost."""
    refit_lr_scale: float = 0.3
    bf16: bool | None = None
    """Train under bfloat16 autocast (weights and optimiser stay float32). None: where the CPU has
    bfloat16 arithmetic (:func:`native_bf16`)."""
    natural: tuple[Path, ...] = ()
    """Retired natural-command sets (development data) trained on beside the simulated commands
    (a share of them also helps choose the thresholds: ``natural_select_share``)."""
    natural_repeat: int = 4
    """Each natural command counts this many times (a few hundred beside thousands simulated)."""
    natural_select_share: float = 0.3
    """The share of the natural commands kept out of the first fit and used, beside the simulated
    held-out phrasings, to choose the thresholds (the refit then learns from them too): how sure a
    hard constraint must be is chosen on how people phrase, not only on held-out templates."""


@dataclass
class ParserTrainReport:
    n_train: int
    n_val: int
    seconds: float
    val: dict[str, object]
    thresholds: Thresholds
    oracle_val_exact: float
    n_natural: int = 0
    """Natural commands trained on (each ``natural_repeat`` times)."""
    natural_dropped: int = 0
    """Natural commands whose label the look-up and roles could not rebuild (not trained on)."""


def _targets(
    commands: Sequence[SimulatedCommand], finder: MentionFinder
) -> tuple[list, list[torch.Tensor], torch.Tensor]:
    mentions, roles, flags = [], [], []
    for command in commands:
        found = finder.find(command.text)
        mentions.append(found)
        roles.append(torch.tensor([int(r) for r in label_roles(found, command)], dtype=torch.long))
        flags.append([float(command.reset), float(command.soft_positive), float(command.soft_negative)])
    return mentions, roles, torch.tensor(flags)


def train_parser(
    index: CatalogIndex,
    encoder: CommandEncoder,
    config: ParserTrainConfig = ParserTrainConfig(),
    student_config: StudentConfig = StudentConfig(),
    *,
    on_progress: Callable[[str, int, int], None] | None = None,
    cache_dir: Path | None = None,
    taught: Sequence[SimulatedCommand] = (),
) -> tuple[LearnedParser, ParserTrainReport]:
    """A trained parser (thresholds chosen on validation) and what training measured. ``taught``:
    more training commands, e.g. an LLM teacher's checked rewrites (:mod:`lab.steering.teacher`)."""
    started = time.perf_counter()
    phases = _PhaseClock()
    torch.manual_seed(config.seed)
    pretrained = encoder
    encoder = encoder.configured(student_config)
    parser = LearnedParser(index, build_student(student_config, pretrained), encoder)
    finder = parser.finder
    train = [*simulate(index, config.n_train, split="train", seed=config.seed), *taught]
    val = simulate(index, config.n_val, split="val", seed=config.seed + 10_000)
    progress = on_progress or (lambda _stage, _done, _total: None)

    train_mentions, train_roles, train_flags = _targets(train, finder)
    done = [0]

    def step(stage: str, total: int) -> Callable[[int], None]:
        def advance(n: int) -> None:
            done[0] += n
            progress(stage, done[0], total)

        return advance

    features = _cached_encode(cache_dir, encoder, train, train_mentions, step("encode", len(train)))
    natural = derive(
        [c for path in config.natural for c in read_training_set(path)], finder, index
    ) if config.natural else NaturalLabels([], 0)  # fmt: skip
    k = config.natural_repeat
    chosen: list[int] = []  # natural commands held out of the first fit, for choosing thresholds
    if natural.commands:
        nat_mentions, nat_roles, nat_flags = _targets(natural.commands, finder)
        done[0] = 0
        nat_features = _cached_encode(
            cache_dir, encoder, natural.commands, nat_mentions, step("natural", len(natural.commands))
        )
        order = list(range(len(natural.commands)))
        random.Random(config.seed).shuffle(order)
        chosen = sorted(order[: round(config.natural_select_share * len(order))])
        held_out = set(chosen)
        fit = [i for i in range(len(order)) if i not in held_out]
        features = [*features, *[nat_features[i] for i in fit] * k]
        train_roles = [*train_roles, *[nat_roles[i] for i in fit] * k]
        train_flags = torch.cat([train_flags, nat_flags[fit].repeat(k, 1)])
    val_mentions = [finder.find(c.text) for c in val]
    done[0] = 0
    val_features = _cached_encode(cache_dir, encoder, val, val_mentions, step("validate", len(val)))
    if chosen:
        val = [*val, *[natural.commands[i] for i in chosen]]
        val_mentions = [*val_mentions, *[nat_mentions[i] for i in chosen]]
        val_features = [*val_features, *[nat_features[i] for i in chosen]]
    val_roles = [torch.tensor([int(r) for r in label_roles(m, c)], dtype=torch.long)
                 for m, c in zip(val_mentions, val, strict=True)]  # fmt: skip
    val_flags = torch.tensor([[float(c.reset), float(c.soft_positive), float(c.soft_negative)] for c in val])
    # The final head learns from every phrasing, held-out ones included (held-out natural commands
    # count k times, as in the first fit).
    n_sim = len(val) - len(chosen)
    first_fit = _FitCommands(features, train_roles, train_flags)
    refit = _FitCommands(
        [*features, *val_features[:n_sim], *val_features[n_sim:] * k],
        [*train_roles, *val_roles[:n_sim], *val_roles[n_sim:] * k],
        torch.cat([train_flags, val_flags[:n_sim], val_flags[n_sim:].repeat(k, 1)]),
    )
    phases.lap("encode")
    refit_beside = None
    if refits_beside(config):  # a cold refit needs neither the first student nor the thresholds
        refit_beside = _ForkedFit(
            student_config, pretrained, refit, config,
            lambda n, total: progress("refit", n, total),
        )  # fmt: skip

    def progress_with_refit(stage: str, n: int, total: int) -> None:
        progress(stage, n, total)
        if refit_beside is not None:  # how far the refit beside is, said from this process
            refit_beside.report()

    try:
        _fit(
            parser.student, first_fit, config,
            lambda n, total: progress_with_refit("train", n, total),
        )  # fmt: skip
        phases.lap("fit")
        best, scored, inverted = _choose_thresholds(
            parser, val, val_mentions, val_features, progress_with_refit
        )
        phases.lap("select")
        if refit_beside is not None:
            parser.student = refit_beside.result()
        elif config.refit_all:
            # A new student (cold), or the selected one going on at a lower rate (warm, refit_epochs).
            torch.manual_seed(config.seed)
            refit_config = config
            if config.refit_epochs is None:
                parser.student = build_student(student_config, pretrained)
            else:
                refit_config = replace(
                    config, epochs=config.refit_epochs, lr=config.lr * config.refit_lr_scale,
                    encoder_lr=config.encoder_lr * config.refit_lr_scale,
                )  # fmt: skip
            _fit(
                parser.student, refit, refit_config,
                lambda n, total: progress("refit", n, total),
            )  # fmt: skip
    finally:
        if refit_beside is not None:
            refit_beside.stop()
    phases.lap("refit")
    oracle = _oracle_exact(val, finder, index)
    offline = _offline_score(val, index)
    report = ParserTrainReport(
        len(train), len(val), round(time.perf_counter() - started, 1), best[2], best[1], oracle,
        len(natural.commands), natural.dropped,
    )  # fmt: skip
    parser.info = {
        "dataset": getattr(index.catalog, "name", None),
        "fingerprint": getattr(index.catalog, "fingerprint", None),
        "train": {
            "n_train": len(train),
            "n_val": len(val),
            "epochs": config.epochs,
            "refit_epochs": config.refit_epochs,
            "refit_beside": refit_beside is not None,
            "seed": config.seed,
            "natural": [str(p) for p in config.natural],
            "n_natural": len(natural.commands),
            "natural_dropped": natural.dropped,
            "natural_repeat": config.natural_repeat,
            "natural_select": len(chosen),
            "taught": len(taught),
        },  # fmt: skip
        "val": report.val,
        "val_inverted": inverted[:MAX_INVERTED_KEPT],
        "val_by_threshold": {
            f"{t.hard_confidence}/{t.agreed_confidence}{'' if t.rules_veto else '/no-veto'}": s.summary()
            for t, s in scored
        },
        "oracle_val_exact": oracle,
        "offline_val": offline,
        "seconds": report.seconds,
        "phases": phases.lap("baselines"),
    }
    return parser, report


@dataclass(frozen=True)
class _FitCommands:
    """Encoded commands and their targets, as one fit learns them."""

    features: Sequence[Features]
    roles: Sequence[torch.Tensor]
    flags: torch.Tensor  # [N, 3]: reset, soft positive, soft negative


def _choose_thresholds(
    parser: LearnedParser,
    val: Sequence[SimulatedCommand],
    val_mentions: list,
    val_features: list[Features],
    progress: Callable[[str, int, int], None],
) -> tuple[tuple[tuple, Thresholds, dict[str, object]], list, list[str]]:
    """Set ``parser.thresholds`` to the fewest validation commands with an inverted hard constraint,
    then the best exact reading; the choice, every setting's score, and what the choice still inverts."""
    predictions = []
    for start in range(0, len(val), 256):
        predictions += parser.predict_features(
            val_mentions[start : start + 256], val_features[start : start + 256]
        )
    best: tuple[tuple, Thresholds, dict[str, object]] | None = None
    scored = []
    rule_facts = [parser.rule_facts(c.text) for c in val]
    grid = [(hard, agreed, veto) for veto in (True, False) for hard in HARD_CONFIDENCE_GRID
            for agreed in AGREED_CONFIDENCE_GRID if agreed <= hard]  # fmt: skip
    for done_grid, (hard, agreed, veto) in enumerate(grid, 1):
        progress("select", done_grid, len(grid))
        parser.thresholds = replace(
            parser.thresholds, hard_confidence=hard, agreed_confidence=agreed, rules_veto=veto
        )
        score = score_all(
            (c.expected, parser.read(c.text, p, set(), rules).update)
            for c, p, rules in zip(val, predictions, rule_facts, strict=True)
        )
        scored.append((parser.thresholds, score))
    strictest = min(s.commands_with_inversion for _t, s in scored)
    for thresholds, score in scored:
        if score.commands_with_inversion > strictest:
            continue
        key = (score.exact, -thresholds.hard_confidence, -thresholds.agreed_confidence, thresholds.rules_veto)
        if best is None or key > best[0]:
            best = (key, thresholds, score.summary())
    assert best is not None
    parser.thresholds = best[1]
    inverted = [  # what the chosen thresholds still invert, kept for reading (never for selection)
        c.text for c, p, rules in zip(val, predictions, rule_facts, strict=True)
        if score_command(c.expected, parser.read(c.text, p, set(), rules).update).inversions
    ]  # fmt: skip
    return best, scored, inverted


def refits_beside(config: ParserTrainConfig) -> bool:
    """Whether the cold refit trains in a forked process beside the first fit: it needs neither the first
    student nor the thresholds, so with two torch threads to spend, the two fits run at once on one
    thread each (a fit's second thread adds only 1.4x). Forked, not a thread: its dropout draws from
    its own generator, so a seed gives the same student as in turn."""
    return (
        config.refit_all and config.refit_epochs is None and torch.get_num_threads() >= 2
        and "fork" in multiprocessing.get_all_start_methods()
    )  # fmt: skip


class _ForkedFit:
    """A new student trained by :func:`_fit` in a forked process (which inherits the commands, no copy),
    handed back through a temporary file. The child touches nothing but torch, its file and a shared
    step counter (no lock, no progress bar: safe to fork beside a bar's monitor thread); the parent
    reports its progress. The caller's torch runs on one thread until :meth:`stop`."""

    def __init__(
        self,
        student_config: StudentConfig,
        pretrained: CommandEncoder,
        commands: _FitCommands,
        config: ParserTrainConfig,
        progress: Callable[[int, int], None],
    ) -> None:
        self._build = lambda: build_student(student_config, pretrained)
        self._progress = progress
        self.total = _fit_steps(len(commands.features), config)
        context = multiprocessing.get_context("fork")
        self._steps = context.Value("q", 0, lock=False)  # written by the child only
        handle, name = tempfile.mkstemp(prefix="refit-", suffix=".pt")
        os.close(handle)
        self._path = Path(name)
        self._threads = torch.get_num_threads()
        torch.set_num_threads(1)  # before the fork: the child starts on one thread, as the parent goes on

        def count(done: int, _total: int) -> None:
            self._steps.value = done

        def train() -> None:
            torch.manual_seed(config.seed)
            student = self._build()
            _fit(student, commands, config, count)
            torch.save(student.state_dict(), self._path)

        self._process = context.Process(target=train, name="parser-refit", daemon=True)
        self._process.start()

    def report(self) -> None:
        self._progress(self._steps.value, self.total)

    def result(self) -> CommandStudent:
        while self._process.is_alive():
            self._process.join(timeout=1.0)
            self.report()
        if self._process.exitcode != 0:
            raise RuntimeError(f"the refit beside the first fit failed (exit code {self._process.exitcode})")
        student = self._build()
        student.load_state_dict(torch.load(self._path, weights_only=True))
        return student.eval()

    def stop(self) -> None:
        """End the child if it still runs (the first fit failed), remove its file, restore the threads."""
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()
        self._path.unlink(missing_ok=True)
        torch.set_num_threads(self._threads)


STAGES = ("encode", "natural", "validate", "train", "select", "refit")
"""The progress stages of :func:`train_parser`, in the order they run ("natural" only with natural sets;
with :func:`refits_beside`, "refit" runs beside "train" and "select")."""
STAGE_SHARES = {
    "encode": 0.09, "natural": 0.02, "validate": 0.01, "train": 0.38, "select": 0.06, "refit": 0.44,
}  # fmt: skip
"""Each stage's share of the default recipe's wall time, fits in turn (bench/README.md "Training time"):
how far a training is, for the time it announces."""
BESIDE_SHARES = {"encode": 0.10, "natural": 0.02, "validate": 0.02, "refit": 0.86}
"""The same with the refit beside the first fit: it is the longer of the two, so the one counted."""


class TrainingEstimate:
    """The seconds a training has left, from the stage it reports and how far into it: its elapsed time
    over the share of the recipe done. None until a twentieth is done, and for a stage off the
    longest path (the first fit and the choice, while the refit runs beside them)."""

    def __init__(self, shares: dict[str, float] = STAGE_SHARES, clock: Callable[[], float] = time.monotonic):
        self.shares, self.clock = shares, clock
        self.started = clock()

    @classmethod
    def for_recipe(cls, config: ParserTrainConfig) -> TrainingEstimate:
        """For a training of ``config`` on this process's torch threads (in turn or beside)."""
        return cls(BESIDE_SHARES if refits_beside(config) else STAGE_SHARES)

    def remaining_s(self, stage: str, done: int, total: int) -> float | None:
        if stage not in self.shares:
            return None
        before = sum(self.shares.get(earlier, 0.0) for earlier in STAGES[: STAGES.index(stage)])
        fraction = before + self.shares[stage] * min(done, total) / max(total, 1)
        if fraction < 0.05:
            return None
        return (self.clock() - self.started) * (1 - fraction) / fraction


class _PhaseClock:
    """Wall and process CPU seconds of each training phase (CPU: the honest figure on a shared box)."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), self._cpu_s()
        self.seconds: dict[str, dict[str, float]] = {}

    @staticmethod
    def _cpu_s() -> float:
        """This process's CPU seconds and its ended children's (the refit beside, once joined)."""
        times = os.times()
        return time.process_time() + times.children_user + times.children_system

    def lap(self, phase: str) -> dict[str, dict[str, float]]:
        wall, cpu = time.perf_counter(), self._cpu_s()
        self.seconds[phase] = {"wall": round(wall - self._wall, 1), "cpu": round(cpu - self._cpu, 1)}
        self._wall, self._cpu = wall, cpu
        return self.seconds


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AMX tiles or AVX-512 BF16). Without it,
    autocast would emulate bfloat16 and train slower than float32."""
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(getattr(torch.cpu, probe, lambda: False)() for probe in probes)


def _fit(
    student: CommandStudent,
    commands: _FitCommands,
    config: ParserTrainConfig,
    progress: Callable[[int, int], None],
) -> None:
    features, roles, flags = commands.features, commands.roles, commands.flags
    student.train()
    tuned = {id(p) for p in student.tuned.parameters()} if student.tuned is not None else set()
    groups = [
        {"params": [p for p in student.parameters() if id(p) not in tuned], "lr": config.lr},
        {"params": [p for p in student.parameters() if id(p) in tuned], "lr": config.encoder_lr},
    ]
    groups = [g for g in groups if g["params"]]
    optimiser = torch.optim.AdamW(groups, weight_decay=1e-4, fused=True)  # one kernel per step, not ~10
    role_loss, flag_loss = nn.CrossEntropyLoss(), nn.BCEWithLogitsLoss()
    rng = random.Random(config.seed)
    order = list(range(len(features)))
    total_steps = _fit_steps(len(order), config)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimiser, max_lr=[g["lr"] for g in groups], total_steps=total_steps
    )
    steps = 0
    bf16 = config.bf16 if config.bf16 is not None else native_bf16()
    for _epoch in range(config.epochs):
        for batch in _length_batches(order, features, config.batch_size, rng):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits, predicted = student([features[i] for i in batch])
            loss = flag_loss(predicted.float(), flags[batch])
            targets = torch.cat([roles[i] for i in batch])
            if targets.numel():
                loss = loss + role_loss(logits.float(), targets)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            scheduler.step()
            steps += 1
            progress(steps, total_steps)
    student.eval()


_POOL_BATCHES = 32
"""Commands are sorted by length within pools of this many batches (shuffled pools, then batches)."""


def _fit_steps(n_commands: int, config: ParserTrainConfig) -> int:
    """The optimiser steps :func:`_fit` takes over ``n_commands`` (what its progress counts to)."""
    return config.epochs * _n_length_batches(n_commands, config.batch_size)


def _n_length_batches(n: int, batch_size: int) -> int:
    """How many batches :func:`_length_batches` makes of ``n`` commands (each pool's last may be short)."""
    pool = _POOL_BATCHES * batch_size
    return sum(-(-min(pool, n - start) // batch_size) for start in range(0, n, pool))


def _length_batches(
    order: list[int], features: Sequence[Features], batch_size: int, rng: random.Random
) -> list[list[int]]:
    """Shuffled batches of commands of about the same length: a batch is padded to its longest
    command, and fine-tuned encoder layers pay for every padded token."""
    rng.shuffle(order)
    pool = _POOL_BATCHES * batch_size
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: features[i].tokens.shape[0])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def _cached_encode(
    cache_dir: Path | None,
    encoder: CommandEncoder,
    commands: Sequence[SimulatedCommand],
    mentions: list,
    on_batch: Callable[[int], None],
) -> list[Features]:
    """Encoder vectors of the commands, from ``cache_dir`` when the same commands were encoded before
    (the encoder is frozen: re-training the head with other settings need not re-encode)."""
    texts = [c.text for c in commands]
    key = hashlib.sha256(
        json.dumps(
            [
                texts,
                [[(m.start, m.end, m.kind) for m in ms] for ms in mentions],
                encoder.layers,
                encoder.quantized,
                "one-at-a-time",  # quantized features were once encoded in padded batches
            ]
        ).encode()
    )
    path = None if cache_dir is None else Path(cache_dir) / f"features-{key.hexdigest()[:16]}.pt"
    if path is not None and path.is_file():
        features = [Features(**f) for f in torch.load(path, weights_only=True)]
        if any(f.boundaries is None for f in features):  # cached before clause breaks were kept
            for f, breaks in zip(features, encoder.boundaries(texts), strict=True):
                f.boundaries = breaks
        for f, text, found in zip(features, texts, mentions, strict=True):
            f.cues = mention_cues(
                text, found
            )  # text work: recomputed, so a new cue list needs no re-encoding
        return features
    features = encode_all(encoder, texts, mentions, on_batch=on_batch)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save([f.__dict__ for f in features], path)
    return features


def _offline_score(val: Sequence[SimulatedCommand], index: CatalogIndex) -> dict[str, object]:
    """The rule parser on the same held-out commands: what ``auto`` compares the student with."""
    rules = OfflineParser(index)

    async def read_all() -> list:
        return [(await rules.parse(c.text, memory=Preferences())).update for c in val]

    updates = asyncio.run(read_all())
    return score_all((c.expected, u) for c, u in zip(val, updates, strict=True)).summary()


def _oracle_exact(val: Sequence[SimulatedCommand], finder: MentionFinder, index: CatalogIndex) -> float:
    """Exact reading with the true roles: how much the mention look-up alone caps the parser."""
    pairs = []
    for command in val:
        found = finder.find(command.text)
        reading = Reading(
            found, label_roles(found, command), reset=command.reset,
            soft_positive="wish" if command.soft_positive else None,
            soft_negative="wish" if command.soft_negative else None,
        )  # fmt: skip
        pairs.append((command.expected, assemble(reading, index)))
    score = score_all(pairs)
    return round(score.exact / max(1, score.n), 4)


def encode_all(
    encoder: CommandEncoder,
    texts: Sequence[str],
    mentions: Sequence[Sequence[Mention]],
    batch_size: int = 64,
    on_batch: Callable[[int], None] | None = None,
) -> list[Features]:
    out: list[Features] = []
    for start in range(0, len(texts), batch_size):
        out += encoder.encode(texts[start : start + batch_size], mentions[start : start + batch_size])
        if on_batch is not None:
            on_batch(min(batch_size, len(texts) - start))
    return out


__all__ = ["ParserTrainConfig", "ParserTrainReport", "TrainingEstimate", "train_parser"]
