"""Start `streamlit run` on a free localhost port for a browser test, a benchmark or the docs'
screenshots, and stop it afterwards."""

import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

STARTUP_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(script: Path, log: Path, *flags: str, env: dict | None = None):
    """Yield the URL once the server answers its health check (at most STARTUP_S seconds)."""
    port = free_port()
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless=true",
             f"--server.port={port}", "--server.address=127.0.0.1",
             "--browser.gatherUsageStats=false", *flags],
            cwd=script.parent, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start within {STARTUP_S} s:\n"
                                   f"{log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
