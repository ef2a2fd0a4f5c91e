"""Serving memtrace's local web apps (the review app, the OTLP receiver): loopback only unless
asked, a random token, uvicorn on a socket we bind ourselves (so the URL with its port is known,
and a busy port is an error, before the first request)."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from starlette.applications import Starlette

from memtrace.errors import ConfigError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> str | None:
    """Refuse a non-loopback address unless ``allow_remote``; then return the warning to show."""
    if is_loopback(host):
        return None
    if not allow_remote:
        raise ConfigError(
            f"refusing to serve the review app on {host!r}: it binds 127.0.0.1 only, unless "
            "--allow-remote is given (anyone who can reach the port and learns the token could "
            "write labels)"
        )
    return (
        f"serving on {host!r}, reachable from other machines: the token is the only protection "
        "and it travels unencrypted (plain HTTP)"
    )


def new_token() -> str:
    return secrets.token_urlsafe(24)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot bind {host}:{port}: {exc.strerror}") from None
    sock.listen(64)
    return sock


def url_of(sock: socket.socket, token: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


@dataclass
class Running:
    server: uvicorn.Server
    sock: socket.socket

    def serve(self) -> None:
        """Serve until Ctrl-C (uvicorn handles the signal and shuts down cleanly)."""
        self.server.run(sockets=[self.sock])


def prepare(app: Starlette, host: str, port: int) -> Running:
    sock = bind(host, port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    return Running(uvicorn.Server(config), sock)


@contextmanager
def serving_in_thread(app: Starlette, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve in a background thread (tests, notebooks); yields the base URL without token."""
    with running_in_thread(prepare(app, host, port)) as url:
        yield url


@contextmanager
def running_in_thread(running: Running) -> Iterator[str]:
    """Serve a prepared server in a background thread; yields its base URL without token."""
    # uvicorn installs no signal handlers off the main thread
    thread = threading.Thread(target=running.serve, daemon=True)
    thread.start()
    try:
        host, port = running.sock.getsockname()[:2]
        yield f"http://{f'[{host}]' if ':' in host else host}:{port}"
    finally:
        running.server.should_exit = True
        thread.join(timeout=10)
        running.sock.close()
