#!/usr/bin/env python3
"""Measures `mnemo serve`'s guards on loopback (docs/serving.md), standard library only:

  1. slow heads: 200 connections each send half a request head and stop; how long until the
     server closes them (header_read_timeout_secs, default 10), and /ready's latency meanwhile;
  2. shedding: 32 concurrent remembers against max_in_flight = 4: how many are answered 200 and
     how many 503 overloaded, how fast a 503 comes back, what /metrics counted;
  3. the cost of a /metrics scrape over 2,000 memories: reading the store figures, and cached.

Every server it starts is on 127.0.0.1 with a throw-away data directory, and is stopped.

    scripts/serve-guards-measure.py target/debug/mnemo     # a binary built with --features server
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

TOKEN = "measure-token-0123456789"


def start(bin_path, serve_toml):
    """`mnemo serve` on a free port with `serve_toml` (a [serve] section, or nothing); (process, host:port)."""
    d = tempfile.mkdtemp(prefix="mnemo-guards.")
    config = os.path.join(d, "serve.toml")
    with open(config, "w") as f:
        f.write(serve_toml + '\n[[serve.tokens]]\nprincipal = "m"\ntoken_env = "MNEMO_MEASURE_TOKEN"\nnamespaces = ["*"]\n')
    p = subprocess.Popen(
        [bin_path, "--data-dir", os.path.join(d, "data"), "--config", config, "serve", "--addr", "127.0.0.1:0"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "MNEMO_MEASURE_TOKEN": TOKEN},
    )
    for line in p.stderr:
        if "listening on http://" in line:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, line.split("http://")[1].split()[0]
    raise SystemExit("mnemo serve ended before listening")


def stop(p):
    p.terminate()
    p.wait(timeout=60)


def call(addr, method, path, body=None):
    """(status, body bytes, seconds, headers)."""
    r = urllib.request.Request(f"http://{addr}{path}", method=method,
                               data=None if body is None else json.dumps(body).encode())
    r.add_header("Authorization", f"Bearer {TOKEN}")
    if body is not None:
        r.add_header("Content-Type", "application/json")
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            return resp.status, resp.read(), time.perf_counter() - t, resp.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), time.perf_counter() - t, e.headers


def closed_at(s, started, limit):
    """Seconds from `started` until the server closed `s` (None: still open after `limit`)."""
    s.settimeout(limit)
    try:
        while s.recv(4096):
            pass
    except socket.timeout:
        return None
    except ConnectionResetError:
        pass
    return time.perf_counter() - started


def slow_heads(bin_path):
    p, addr = start(bin_path, "")
    host, port = addr.rsplit(":", 1)
    started = time.perf_counter()
    socks = []
    for _ in range(200):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x")
        socks.append(s)
    ready_ms = [call(addr, "GET", "/ready")[2] * 1000 for _ in range(20)]
    closed = [closed_at(s, started, 30) for s in socks]
    stop(p)
    done = [c for c in closed if c is not None]
    print(f"slow heads: 200 connections with half a head; /ready meanwhile max {max(ready_ms):.1f} ms (20 calls); "
          f"{len(done)}/200 closed, the first after {min(done):.2f} s, all by {max(done):.2f} s "
          f"(header_read_timeout_secs = 10)")


def shedding(bin_path):
    p, addr = start(bin_path, "[serve]\nmax_in_flight = 4")
    results = []
    lock = threading.Lock()

    def one(i):
        r = call(addr, "POST", "/v1/namespaces/load/remember", {"text": f"[SEM] Item {i} | stock | {i}"})
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(32)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    metrics = call(addr, "GET", "/metrics")[1].decode()
    stop(p)
    ok = sorted(r[2] * 1000 for r in results if r[0] == 200)
    shed = [r for r in results if r[0] == 503]
    shed_ms = sorted(r[2] * 1000 for r in shed)
    counted = [line for line in metrics.splitlines() if line.startswith("mnemo_http_requests_shed_total")]
    print(f"shedding: 32 concurrent remembers, max_in_flight = 4: {len(ok)} x 200 (median {ok[len(ok) // 2]:.1f} ms), "
          f"{len(shed)} x 503 overloaded (Retry-After {shed[0][3].get('Retry-After') if shed else '-'}, median "
          f"{shed_ms[len(shed_ms) // 2] if shed_ms else 0:.1f} ms); wall {wall * 1000:.0f} ms; /metrics {counted}")


def scrape_cost(bin_path):
    p, addr = start(bin_path, "")
    for b in range(20):
        text = "\n".join(f"[SEM] Part {b * 100 + i} | lead time | {i} days" for i in range(100))
        status = call(addr, "POST", "/v1/namespaces/load/remember", {"text": text})[0]
        assert status == 200, status
    read_ms = []
    for i in range(5):
        # The store moved and a second passed: this scrape reads the store figures again.
        call(addr, "POST", "/v1/namespaces/load/remember", {"text": f"[SEM] Extra {i} | x | y"})
        time.sleep(1.05)
        read_ms.append(call(addr, "GET", "/metrics")[2] * 1000)
    cached_ms = [call(addr, "GET", "/metrics")[2] * 1000 for _ in range(5)]
    body = call(addr, "GET", "/metrics")[1].decode()
    stop(p)
    active = [line for line in body.splitlines() if line.startswith('mnemo_memories{kind="semantic",status="active"}')]
    print(f"scrape: {active}: reading the store figures {min(read_ms):.1f}-{max(read_ms):.1f} ms, "
          f"cached {min(cached_ms):.1f}-{max(cached_ms):.1f} ms (5 scrapes each)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    slow_heads(sys.argv[1])
    shedding(sys.argv[1])
    scrape_cost(sys.argv[1])
