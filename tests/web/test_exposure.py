"""What a server bound to 127.0.0.1 exposes to other sites and to guessers: host names it
answers to, login throttling, request body size, and the HTTPS settings of a deployment."""

from __future__ import annotations

import http.client

import pytest

from .webtools import PASSWORD, Client, Server, web_collection


def request(server: Server, method: str, path: str, host: str | None = None, body: bytes | None = None,
            headers: dict | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=host is not None)
        if host is not None:
            connection.putheader("Host", host)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders()
        if body is not None:
            connection.send(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = Server(web_collection(tmp_path_factory.mktemp("exposure") / "data", plugins="noop"))
    try:
        server.wait_healthy()
        yield server
    finally:
        server.stop()


def test_a_rebinding_host_name_is_refused_and_the_bound_address_and_localhost_are_served(server):
    assert request(server, "GET", "/health/", host="attacker.example")[0] == 400
    assert request(server, "GET", "/admin/login/", host=f"attacker.example:{server.port}")[0] == 400
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}"):
        assert request(server, "GET", "/health/", host=host)[0] == 200, host


def test_allowed_hosts_is_configurable(tmp_path):
    server = Server(web_collection(tmp_path / "data", plugins="noop"), env={"ALLOWED_HOSTS": "archive.example"})
    try:
        pass  # not healthy-checked over 127.0.0.1: that host is not allowed here
        assert request(server, "GET", "/health/", host="archive.example")[0] == 200
        assert request(server, "GET", "/health/", host=f"127.0.0.1:{server.port}")[0] == 400
    finally:
        server.stop()


def test_repeated_failed_logins_lock_the_user_out_even_with_the_right_password(server):
    guesser = Client(server.url)
    guesser.get("/admin/login/")
    statuses = [guesser.post("/admin/login/", {"username": "admin", "password": f"wrong-{n}", "next": "/admin/"}).status
                for n in range(5)]
    assert statuses == [200, 200, 200, 200, 429]  # the fifth failure locks admin out from this address
    locked = guesser.post("/admin/login/", {"username": "admin", "password": PASSWORD, "next": "/admin/"})
    assert locked.status == 429 and "/admin/" != locked.location
    # Another user name from the same address is not locked (lockout is per address and user).
    other = Client(server.url)
    other.get("/admin/login/")
    assert other.post("/admin/login/", {"username": "nobody", "password": "x", "next": "/admin/"}).status == 200


def test_a_large_request_body_is_refused_before_it_is_read(server):
    # Only the headers are sent, declaring 2 MiB: the answer must come from them alone (a
    # server that read the body first would wait for it until the client's timeout). Sending
    # the body too raced with the server closing the connection (a broken pipe on our side).
    status, _ = request(server, "POST", "/admin/login/", headers={"Content-Type": "application/x-www-form-urlencoded",
                                                                  "Content-Length": str(2 * 1024 * 1024)})
    assert status == 413
    assert request(server, "GET", "/health/")[0] == 200  # and the server carries on


def test_check_deploy_is_clean_with_the_https_settings_from_the_environment(tmp_path):
    collection = web_collection(tmp_path / "data", plugins="noop")
    https = {"SECURE_SSL_REDIRECT": "true", "SECURE_HSTS_SECONDS": "31536000", "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
             "SECURE_HSTS_PRELOAD": "true", "SESSION_COOKIE_SECURE": "true", "CSRF_COOKIE_SECURE": "true",
             "SECURE_PROXY_SSL_HEADER": "true", "ALLOWED_HOSTS": "archive.example"}
    plain = collection.cli("manage", "check", "--deploy", "--fail-level", "WARNING", check=False)
    assert plain.returncode != 0 and "security.W004" in plain.stderr
    secured = collection.cli("manage", "check", "--deploy", "--fail-level", "WARNING", env=https, check=False)
    assert secured.returncode == 0, secured.stderr
    # And they take effect: plain HTTP is redirected, except the health probe.
    server = Server(collection, env=https)
    try:
        assert request(server, "GET", "/admin/login/", host="archive.example")[0] == 301
        assert request(server, "GET", "/health/", host="archive.example")[0] in (200, 503)
        assert request(server, "GET", "/admin/login/", host="archive.example", headers={"X-Forwarded-Proto": "https"})[0] == 200
    finally:
        server.stop()
