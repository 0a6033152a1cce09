"""Authentication to a REST catalog: a static bearer token, OAuth2 client
credentials with short-lived tokens refreshed before they expire, and AWS
SigV4 signatures.  Apache's reference server does not check credentials, so
the checks live in the proxy in front of it (tests/faultproxy.py): it
requires the token, serves the token endpoint and verifies signatures with
its own SigV4 implementation.  Secrets must never appear in floe's output.
"""
import os
import subprocess
import time

import pytest

from conftest import floe_bin
from faultproxy import FaultProxy
from restserver import check_rest_snapshots, rest_server  # noqa: F401
from sinkmodel import SCHEMA, Stream

TOKEN = "tok-3f9a1c-static-secret"
CLIENT, CLIENT_SECRET = "floe-client", "cs-77d1e0-very-secret"
AKID, AWS_SECRET = "AKIDFLOETEST", "aws-secret-5b2c9e"


@pytest.fixture
def proxy(rest_server):
    p = FaultProxy(rest_server.uri)
    yield p
    p.close()


def sink(proxy, table, *extra, env=None, input_text=None, pace_s=0.0):
    """Run floe sink on a stream through the proxy; with pace_s, the input
    is fed over stdin in ten slices pace_s apart (a run that outlives
    short-lived tokens)."""
    args = [floe_bin(), "sink", "--table", table, "--schema", SCHEMA, "--key", "id", "--catalog",
            proxy.uri, "--commit-interval", "10", "--input", "-", "--close", *extra]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))
    lines = input_text.splitlines(keepends=True)
    step = max(1, len(lines) // 10)
    for i in range(0, len(lines), step):
        proc.stdin.write("".join(lines[i:i + step]))
        proc.stdin.flush()
        time.sleep(pace_s)
    out, err = proc.communicate(timeout=300)
    assert "AddressSanitizer" not in err and "runtime error" not in err, err
    return proc.returncode, out, err


def no_secrets(*texts):
    for t in texts:
        for s in (TOKEN, CLIENT_SECRET, AWS_SECRET):
            assert s not in t, f"a secret leaked: {t[-2000:]}"


def test_bearer_token(rest_server, proxy):
    proxy.require_token(TOKEN)
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(41, steps=20)
    code, out, err = sink(proxy, table, "--catalog-token", TOKEN, input_text=stream.text())
    assert code == 0, err
    assert proxy.rejected == 0
    no_secrets(out, err)
    check_rest_snapshots(rest_server, table, stream, "upsert", final_only=True)


def test_bearer_token_from_the_environment_and_a_wrong_one(rest_server, proxy):
    proxy.require_token(TOKEN)
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(42, steps=10)
    code, out, err = sink(proxy, table, env={"FLOE_CATALOG_TOKEN": TOKEN},
                          input_text=stream.text())
    assert code == 0, err
    code, out, err = sink(proxy, table, env={"FLOE_CATALOG_TOKEN": "wrong-" + TOKEN},
                          input_text=stream.text())
    assert code != 0
    assert "HTTP 401 Unauthorized" in err and "a bearer token is required" in err, err
    no_secrets(out, err)


def test_oauth2_tokens_are_refreshed_before_they_expire(rest_server, proxy):
    """Tokens live 2 s; the run lasts about 6 s.  floe must fetch new ones in
    time: the proxy never sees an expired (or unknown) token."""
    proxy.oauth2(CLIENT, CLIENT_SECRET, ttl_s=2)
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(43, steps=40)
    t0 = time.monotonic()
    code, out, err = sink(proxy, table, "--catalog-credential", f"{CLIENT}:{CLIENT_SECRET}",
                          input_text=stream.text(), pace_s=0.6)
    elapsed = time.monotonic() - t0
    assert code == 0, err
    assert elapsed > 5, elapsed
    assert proxy.rejected == 0, "a request went out with an expired token"
    assert proxy.token_requests >= int(elapsed / 2), (proxy.token_requests, elapsed)
    assert proxy.token_requests <= int(elapsed / 1.2) + 2, "refreshed far too often"
    no_secrets(out, err)
    check_rest_snapshots(rest_server, table, stream, "upsert", final_only=True)


def test_oauth2_a_revoked_token_is_replaced_once(rest_server, proxy):
    """The server forgets every token mid-run: the next request gets a 401,
    floe fetches a new token and repeats the request."""
    proxy.oauth2(CLIENT, CLIENT_SECRET, ttl_s=3600)
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(44, steps=30)
    lines = stream.text().splitlines(keepends=True)
    args = [floe_bin(), "sink", "--table", table, "--schema", SCHEMA, "--key", "id", "--catalog",
            proxy.uri, "--commit-interval", "10", "--input", "-", "--close", "--catalog-credential",
            f"{CLIENT}:{CLIENT_SECRET}"]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    half = len(lines) // 2
    proc.stdin.write("".join(lines[:half]))
    proc.stdin.flush()
    time.sleep(1.5)
    with proxy.lock:
        proxy.tokens.clear()                 # revoke
    proc.stdin.write("".join(lines[half:]))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert proxy.rejected == 1, proxy.rejected
    assert proxy.token_requests == 2, proxy.token_requests
    no_secrets(out, err)
    check_rest_snapshots(rest_server, table, stream, "upsert", final_only=True)


def test_oauth2_wrong_secret_is_a_clear_error_without_the_secret(rest_server, proxy):
    proxy.oauth2(CLIENT, CLIENT_SECRET, ttl_s=60)
    wrong = "wrong-" + CLIENT_SECRET
    res = subprocess.run([floe_bin(), "inspect", "--table", "a.b", "--catalog", proxy.uri,
                          "--catalog-credential", f"{CLIENT}:{wrong}"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0
    assert f"OAuth2 token request to {proxy.uri}/v1/oauth/tokens refused: HTTP 401" in res.stderr
    assert "invalid_client: unknown client" in res.stderr, res.stderr
    assert wrong not in res.stderr and wrong not in res.stdout
    no_secrets(res.stdout, res.stderr)


def test_sigv4_signatures_verify(rest_server, proxy):
    proxy.sigv4(AKID, AWS_SECRET, "eu-west-3", "execute-api")
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(45, steps=15)
    env = {"AWS_ACCESS_KEY_ID": AKID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}
    code, out, err = sink(proxy, table, "--catalog-sigv4-region", "eu-west-3", env=env,
                          input_text=stream.text())
    assert code == 0, err
    assert proxy.rejected == 0
    assert proxy.verified >= 10, proxy.verified      # config, loads, creates, commits
    no_secrets(out, err)
    check_rest_snapshots(rest_server, table, stream, "upsert", final_only=True)


def test_sigv4_with_the_wrong_key_is_refused(rest_server, proxy):
    proxy.sigv4(AKID, AWS_SECRET, "eu-west-3", "execute-api")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AKID, AWS_SECRET_ACCESS_KEY="not-" + AWS_SECRET)
    res = subprocess.run([floe_bin(), "inspect", "--table", "a.b", "--catalog", proxy.uri,
                          "--catalog-sigv4-region", "eu-west-3"], capture_output=True,
                         text=True, timeout=60, env=env)
    assert res.returncode != 0
    assert "HTTP 403 Forbidden" in res.stderr and "signature mismatch" in res.stderr, res.stderr
    assert "not-" + AWS_SECRET not in res.stderr
    no_secrets(res.stdout, res.stderr)


def test_help_and_errors_never_show_secrets(rest_server):
    env = dict(os.environ, FLOE_CATALOG_TOKEN=TOKEN, FLOE_CATALOG_CREDENTIAL=f"x:{CLIENT_SECRET}",
               AWS_SECRET_ACCESS_KEY=AWS_SECRET)
    for cmd in (["sink", "--help"], ["append", "--help"], ["inspect", "--help"]):
        res = subprocess.run([floe_bin(), *cmd], capture_output=True, text=True, env=env)
        no_secrets(res.stdout, res.stderr)
    res = subprocess.run([floe_bin(), "inspect", "--table", "a.b", "--catalog",
                          f"http://user:{CLIENT_SECRET}@127.0.0.1:1"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert res.returncode != 0
    no_secrets(res.stdout, res.stderr)
