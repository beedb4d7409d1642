"""Fixtures: a throw-away data directory, and `mnemo serve` on a free loopback port.

The server binary is $MNEMO_BIN, else target/debug/mnemo of this repository (built with the
`server` feature, as scripts/test's build is).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NS = "me"


def mnemo_bin() -> Path:
    return Path(os.environ.get("MNEMO_BIN", REPO / "target" / "debug" / "mnemo"))


class Server:
    def __init__(self, url: str, token: str, admin: str, proc: subprocess.Popen, log: Path) -> None:
        self.url, self.token, self.admin, self.proc, self.log = url, token, admin, proc, log


@pytest.fixture
def server(tmp_path: Path):
    binary = mnemo_bin()
    if not binary.exists():
        pytest.fail(f"{binary} does not exist: build it (cargo build -p mnemo-cli --features server) or set MNEMO_BIN")
    token, admin = "t-" + secrets.token_hex(12), "a-" + secrets.token_hex(12)
    (tmp_path / "serve.toml").write_text(
        f"""
[[serve.tokens]]
principal = "agent"
token_env = "MNEMO_PY_TEST_TOKEN"
namespaces = ["{NS}", "other", "users.u1", "users.u2"]
answers = true

[[serve.tokens]]
principal = "admin"
token_env = "MNEMO_PY_TEST_ADMIN"
namespaces = ["*"]
erase = true
"""
    )
    log = tmp_path / "serve.log"
    env = dict(os.environ, MNEMO_PY_TEST_TOKEN=token, MNEMO_PY_TEST_ADMIN=admin)
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [str(binary), "--data-dir", str(tmp_path / "served"), "--config", str(tmp_path / "serve.toml"),
             "serve", "--addr", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL, stderr=err, env=env,
        )
    url = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read_text())
        if m:
            url = m.group(1)
            break
        if proc.poll() is not None:
            pytest.fail(f"mnemo serve exited: {log.read_text()}")
        time.sleep(0.1)
    if url is None:
        proc.kill()
        pytest.fail(f"mnemo serve did not say where it listens: {log.read_text()}")
    yield Server(url, token, admin, proc, log)
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
