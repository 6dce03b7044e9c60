"""Serving: the API as a daemon service (ready once listening, stops on the event) and the alert rules
referring only to metrics the API exports."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path

import httpx

from api.server import ApiService
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Database
from tests.api_support import client_for

RULES = Path(__file__).resolve().parent.parent / "deploy" / "prometheus" / "citeline-alerts.yml"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_api_service_serves_until_stopped(clean_database: Database) -> None:
    port = _free_port()
    retriever = Retriever(clean_database, None, max_connections=2)
    service = ApiService(ApiSettings(port=port), lambda: (clean_database, retriever, None, None))
    assert service.name == "api"

    async def scenario() -> int:
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(service.run(stop, ready.set))
        await asyncio.wait_for(ready.wait(), 30)
        async with httpx.AsyncClient() as client:
            status = (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code
        stop.set()
        await asyncio.wait_for(task, 30)
        return status

    assert asyncio.run(scenario()) == 200
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0, "the port is released after stop"


def test_alert_rules_use_exported_metrics(clean_database: Database) -> None:
    rules = RULES.read_text()
    used = set(re.findall(r"\b(citeline_[a-z_]+)\{", rules))
    assert {"citeline_backlog_oldest_age_seconds", "citeline_database_up"} <= used
    assert "> 300" in rules and "> 1800" in rules and 'up{job="citeline"} == 0' in rules
    retriever = Retriever(clean_database, None, max_connections=2)
    try:
        with client_for(clean_database, retriever, None) as client:
            exported = client.get("/metrics").text
    finally:
        retriever.close()
    for name in used:
        assert f"# TYPE {name} " in exported, name
