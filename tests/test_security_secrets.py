"""The database password is never printed, however the URL holds it: not by `status`, `status --json`, an
error or a log line; and a URL that cannot be parsed is a one-line configuration error, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from daemon.cli import main
from indexer.database import Database, masked_url

SECRET = "Sup3rSecretPW"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.delenv("CITELINE_API_KEYS", raising=False)
    return monkeypatch


def _with_password(url: str) -> str:
    """The test database's URL with a password in its user info (the socket's trust auth ignores it)."""
    params = psycopg.conninfo.conninfo_to_dict(url)
    user = params.get("user") or "postgres"
    rest = url.split("://", 1)[1].split("@", 1)[-1] if "@" in url else url.split("://", 1)[1]
    return f"postgresql://{user}:{SECRET}@{rest}"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://citeline:{SECRET}@db.example/citeline",
        f"postgresql://citeline@db.example/citeline?password={SECRET}&sslmode=require",
        f"host=db.example user=citeline password={SECRET} dbname=citeline",
        f"postgres://citeline:{SECRET}@/citeline?host=/run/postgresql",
    ],
)
def test_every_form_of_the_password_is_masked(url: str) -> None:
    shown = masked_url(url)
    assert SECRET not in shown and "***" in shown
    assert SECRET not in Database(url).describe()


def test_status_and_its_json_never_print_the_password(
    env: pytest.MonkeyPatch, clean_database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _with_password(clean_database.url)
    assert SECRET in url
    env.setenv("CITELINE_DATABASE_URL", url)
    assert main(["status"]) == 0
    assert main(["status", "--json"]) == 0
    out, err = capsys.readouterr()
    assert SECRET not in out and SECRET not in err
    assert "***" in json.loads(out[out.index("{") :])["database"]


def test_an_unreachable_database_is_named_without_the_password(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("CITELINE_DATABASE_URL", f"postgresql://citeline:{SECRET}@127.0.0.1:1/citeline")
    env.setenv("PGPASSWORD", "AnotherSecretPW")
    assert main(["status"]) == 2
    out, err = capsys.readouterr()
    assert "does not answer" in err
    assert SECRET not in out + err and "AnotherSecretPW" not in out + err


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://citeline:{SECRET}@db.example/citeline?bogus=1",
        f"postgresql://citeline:%zz{SECRET}@db.example/citeline",
        "not a url at all",
    ],
)
def test_a_malformed_url_is_a_one_line_configuration_error(
    url: str, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("CITELINE_DATABASE_URL", url)
    assert main(["status"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("citeline: database_url:") and err.count("\n") == 1, err
    assert "Traceback" not in err and SECRET not in out + err
