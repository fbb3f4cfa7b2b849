#!/usr/bin/env python3
"""What an idle keep-alive HTTP connection costs the daemon.

Starts the release `agentbus serve` (target/release/agentbus) on a free
port with a fresh data dir, opens N connections (default 2,000) that each
make one request (`GET /livez`) and then stay open, as HTTP clients keep them for their
next request, and prints the daemon's resident memory before and after.

    cargo build --release && scripts/idle-connection-memory.py [N]
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = os.path.join(target, "release", "agentbus")
    if not os.access(binary, os.X_OK):
        sys.exit(f"idle-connection-memory: {binary} is missing; build it first: cargo build --release")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, HOME=home)
        daemon = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", f"{home}/data"],
            cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port)).close()
                    break
                except OSError:
                    time.sleep(0.1)
            before = rss_kib(daemon.pid)
            conns = []
            for _ in range(count):
                conn = socket.create_connection(("127.0.0.1", port))
                conn.sendall(b"GET /livez HTTP/1.1\r\nHost: bench\r\n\r\n")
                conns.append(conn)
            for conn in conns:
                conn.settimeout(10)
                if not conn.recv(1 << 16):
                    raise RuntimeError("the daemon closed a connection")
            after = rss_kib(daemon.pid)
            print(f"{count} idle keep-alive connections: daemon RSS {before} -> {after} KiB, "
                  f"{(after - before) / count:.1f} KiB each")
        finally:
            daemon.terminate()
            daemon.wait()


if __name__ == "__main__":
    main()
