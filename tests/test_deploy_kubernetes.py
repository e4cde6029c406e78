"""deploy/kubernetes/: every manifest validates against the Kubernetes schemas (kubernetes-validate,
which ships them: no network), and the pieces fit together (commands, probes, volume, settings)."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from app.settings import Settings
from cli import cli

MANIFESTS = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes"
# The oldest Kubernetes release still widely run, and the newest the package ships schemas for.
VERSIONS = ("1.30.0", str(kubernetes_validate.latest_version()))


def _documents() -> list[tuple[str, dict]]:
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


@pytest.fixture(scope="module")
def resources() -> dict[str, dict]:
    return {doc["kind"]: doc for _, doc in _documents()}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("name", "document"), _documents(), ids=lambda v: v if isinstance(v, str) else "")
def test_manifest_validates_strictly(name, document, version):
    # strict: a misspelt or misplaced field is an error, not silently ignored by the API server
    kubernetes_validate.validate(document, version, strict=True)


def test_the_set_is_complete(resources):
    assert {"ConfigMap", "Secret", "PersistentVolumeClaim", "Job", "Deployment", "Service"} <= set(resources)
    prune = resources["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert prune["command"] == ["recloop", "db", "prune", "--json"]
    jobs = [doc for _, doc in _documents() if doc["kind"] == "Job"]
    commands = {tuple(job["spec"]["template"]["spec"]["containers"][0]["command"]) for job in jobs}
    assert commands == {
        ("recloop", "db", "migrate"), ("recloop", "prepare", "--no-parser"), ("recloop", "prepare-parser"),
    }  # fmt: skip
    for job in jobs:
        assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")


def test_the_commands_exist_in_the_cli(resources):
    runner = CliRunner()
    container = resources["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    commands = (
        container["command"],
        ["recloop", "db", "migrate"],
        ["recloop", "prepare", "--no-parser"],
        ["recloop", "prepare-parser"],
        ["recloop", "db", "prune"],
    )
    for command in commands:
        result = runner.invoke(cli, [*command[1:], "--help"])
        assert result.exit_code == 0, (command, result.output)
        options = [part for part in command[1:] if part.startswith("--")]
        assert all(option in result.output for option in options), (command, result.output)


def test_the_deployment_probes_liveness_and_readiness_apart_and_asks_for_resources(resources):
    deployment = resources["Deployment"]
    assert deployment["spec"]["replicas"] >= 2
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["command"] == ["recloop", "serve", "--no-migrate", "--no-prepare"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"  # never the database
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    claim = resources["PersistentVolumeClaim"]["metadata"]["name"]
    assert [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]] == [claim]
    assert container["volumeMounts"][0]["mountPath"] == resources["ConfigMap"]["data"]["RECLOOP_DATA_DIR"]
    labels = pod and deployment["spec"]["template"]["metadata"]["labels"]
    assert resources["Service"]["spec"]["selector"].items() <= labels.items()
    assert pod["securityContext"]["runAsUser"] == 10001 and pod["securityContext"]["runAsNonRoot"]


def test_the_settings_are_real_settings_and_the_database_is_external_with_tls(resources):
    fields = {name.upper() for name in Settings.model_fields}
    for key in resources["ConfigMap"]["data"]:
        assert key.startswith("RECLOOP_") and key.removeprefix("RECLOOP_") in fields, key
    url = resources["Secret"]["stringData"]["DATABASE_URL"]
    assert url.startswith("postgresql://") and "sslmode=" in url
    settings = Settings(
        _env_file=None,
        **{
            key.removeprefix("RECLOOP_").lower(): value
            for key, value in resources["ConfigMap"]["data"].items()
        },
    )
    assert settings.workers == 1 and settings.db_pool_size >= 1  # the values parse as the service reads them


def test_the_validation_can_fail():
    """A probe misspelt in a copy of the Deployment is refused: the strict check is not a no-op."""
    (deployment,) = [doc for _, doc in _documents() if doc["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    broken = {**container, "readinesProbe": container["readinessProbe"]}
    bad = {
        **deployment,
        "spec": {
            **deployment["spec"],
            "template": {
                **deployment["spec"]["template"],
                "spec": {**deployment["spec"]["template"]["spec"], "containers": [broken]},
            },
        },
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, VERSIONS[-1], strict=True)
