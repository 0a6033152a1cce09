"""An HTTP proxy between floe and a REST catalog server that injects faults
and checks credentials, controlled by method calls from the test.

    proxy = FaultProxy(upstream_uri)          # starts on a free loopback port
    proxy.arm("lost-response", after=3)        # the 3rd commit from now: see below
    ... run floe with --catalog proxy.uri ...
    proxy.fired                                # how many faults were injected
    proxy.close()

Faults, each applied once to the `after`-th matching commit (a POST to
.../namespaces/<ns>/tables/<name>) counted from arm():
  lost-response  forward the commit (it lands), then answer 502: the
                 response is lost, floe must find its commit on reload and
                 not repeat it
  conflict       call `concurrent()` (another writer commits directly to the
                 server), then answer 409 without forwarding: floe reloads,
                 re-checks fencing and frontier, and commits again
  error500       answer 500 without forwarding: nothing landed, floe retries
  hang           hold the commit `hang_s` seconds (past floe's timeout), then
                 forward it (it lands late, or loses to floe's retry) and
                 drop the response
  slow-response  forward the commit at once (it lands), then hold the
                 response `hang_s` seconds, past floe's timeout
  bad-request    answer 400 with an ErrorModel: fatal for floe

Authentication (checked on every request when set; a failure answers 401 or
403 with an ErrorModel and is counted in .rejected):
  require_token(token)               a static bearer token
  oauth2(client_id, secret, ttl_s)   serve the token endpoint /v1/oauth/tokens
                                     (client credentials), issue tokens that
                                     expire after ttl_s, accept only live ones
  sigv4(access_key, secret, region, service)
                                     verify AWS Signature Version 4 on every
                                     request, computed here from the spec

Only the Python standard library is used.  The proxy answers HTTP/1.1 with
keep-alive, as floe's libcurl client expects.
"""
import hashlib
import hmac
import http.client
import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT_RE = re.compile(r"^/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/?]+$")
HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
       "trailers", "transfer-encoding", "upgrade", "host", "content-length"}


def error_model(code, type_, message):
    return json.dumps({"error": {"message": message, "type": type_, "code": code}}).encode()


# ---- SigV4, from the AWS specification -------------------------------------------------

def _uri_encode(s, keep_slash):
    safe = "-_.~" + ("/" if keep_slash else "")
    return urllib.parse.quote(s, safe=safe)


def sigv4_signature(method, raw_path, headers, body, secret, amz_date, scope, signed, service):
    """The signature AWS would compute for this request.  raw_path is the
    path and query as sent; headers maps lower-case names to values."""
    path, _, query = raw_path.partition("?")
    if service == "s3":
        canon_uri = path
    else:                       # every other service: each segment encoded again
        canon_uri = "/".join(_uri_encode(seg, False) for seg in path.split("/"))
    pairs = []
    for part in query.split("&") if query else []:
        k, _, v = part.partition("=")
        pairs.append((_uri_encode(urllib.parse.unquote(k), False),
                      _uri_encode(urllib.parse.unquote(v), False)))
    canon_query = "&".join(f"{k}={v}" for k, v in sorted(pairs))
    canon_headers = "".join(f"{h}:{' '.join(headers[h].strip().split())}\n" for h in signed)
    payload = headers.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest()
    creq = "\n".join([method, canon_uri, canon_query, canon_headers, ";".join(signed), payload])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    date, region, svc, _ = scope.split("/")
    k = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, svc, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()


class FaultProxy:
    def __init__(self, upstream):
        u = urllib.parse.urlparse(upstream)
        self.upstream = (u.hostname, u.port)
        self.lock = threading.Lock()
        self.mode = None
        self.countdown = 0
        self.fired = 0
        self.commits = 0                # commit requests seen
        self.log = []                   # (method, path, status)
        self.concurrent = None
        self.hang_s = 0.0
        self.late = []                  # (status) of commits forwarded after a hang
        self.auth = None                # None, ("token", t), ("oauth2", ...), ("sigv4", ...)
        self.tokens = {}                # issued token -> expiry (monotonic)
        self.token_requests = 0
        self.rejected = 0
        self.verified = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _do(self):
                proxy._handle(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _do

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.uri = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    # ---- control ------------------------------------------------------------------------
    def arm(self, mode, after=1, concurrent=None, hang_s=0.0):
        assert mode in ("lost-response", "conflict", "error500", "hang", "slow-response",
                        "bad-request"), mode
        with self.lock:
            self.mode, self.countdown = mode, after
            self.concurrent, self.hang_s = concurrent, hang_s

    def require_token(self, token):
        self.auth = ("token", token)

    def oauth2(self, client_id, secret, ttl_s):
        self.auth = ("oauth2", client_id, secret, ttl_s)

    def sigv4(self, access_key, secret, region, service):
        self.auth = ("sigv4", access_key, secret, region, service)

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # ---- the request path -------------------------------------------------------------------
    def _reply(self, h, status, body=b"", ctype="application/json"):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)
        with self.lock:
            self.log.append((h.command, h.path, status))

    def _forward(self, h, body):
        conn = http.client.HTTPConnection(*self.upstream, timeout=120)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP}
        conn.request(h.command, h.path, body=body if body else None, headers=headers)
        r = conn.getresponse()
        data = r.read()
        out = (r.status, [(k, v) for k, v in r.getheaders() if k.lower() not in HOP], data)
        conn.close()
        return out

    def _relay(self, h, status, headers, data):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)
        with self.lock:
            self.log.append((h.command, h.path, status))

    def _handle(self, h):
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        try:
            if self.auth and self.auth[0] == "oauth2" and h.path.split("?")[0] == "/v1/oauth/tokens":
                return self._token_endpoint(h, body)
            if self.auth and not self._authorized(h, body):
                return
            fault = self._take_fault(h)
            if fault:
                return self._inject(h, body, fault)
            self._relay(h, *self._forward(h, body))
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _take_fault(self, h):
        if h.command != "POST" or not COMMIT_RE.match(h.path.split("?")[0]):
            return None
        with self.lock:
            self.commits += 1
            if not self.mode:
                return None
            self.countdown -= 1
            if self.countdown > 0:
                return None
            mode, self.mode = self.mode, None
            self.fired += 1
            return mode

    def _inject(self, h, body, mode):
        if mode == "lost-response":
            self._forward(h, body)                  # it lands ...
            return self._reply(h, 502, b"<html>502 Bad Gateway</html>", "text/html")
        if mode == "conflict":
            self.concurrent()
            return self._reply(h, 409, error_model(
                409, "CommitFailedException",
                "Commit failed: Requirement failed: branch main has changed"))
        if mode == "error500":
            return self._reply(h, 500, error_model(500, "RuntimeException",
                                                   "injected internal error"))
        if mode == "hang":
            time.sleep(self.hang_s)                 # floe gives up meanwhile
            status, _, _ = self._forward(h, body)
            with self.lock:
                self.late.append(status)
            h.close_connection = True
            return None
        if mode == "slow-response":
            status, _, _ = self._forward(h, body)
            with self.lock:
                self.late.append(status)
            time.sleep(self.hang_s)
            h.close_connection = True
            return None
        if mode == "bad-request":
            return self._reply(h, 400, error_model(
                400, "BadRequestException", "injected: the request is malformed"))
        raise AssertionError(mode)

    # ---- authentication ------------------------------------------------------------------------
    def _reject(self, h, status, why):
        with self.lock:
            self.rejected += 1
        self._reply(h, status, error_model(status, "NotAuthorizedException", why))
        return False

    def _token_endpoint(self, h, body):
        _, client_id, secret, ttl = self.auth
        form = dict(urllib.parse.parse_qsl(body.decode()))
        with self.lock:
            self.token_requests += 1
        if (form.get("grant_type") != "client_credentials" or form.get("client_id") != client_id
                or form.get("client_secret") != secret):
            return self._reply(h, 401, json.dumps({
                "error": "invalid_client", "error_description": "unknown client"}).encode())
        token = f"tok-{self.token_requests}-{time.monotonic_ns()}"
        with self.lock:
            self.tokens[token] = time.monotonic() + ttl
        self._reply(h, 200, json.dumps({"access_token": token, "token_type": "bearer",
                                        "expires_in": ttl,
                                        "issued_token_type":
                                            "urn:ietf:params:oauth:token-type:access_token"}
                                       ).encode())

    def _authorized(self, h, body):
        auth = h.headers.get("Authorization", "")
        kind = self.auth[0]
        if kind == "token":
            if auth != f"Bearer {self.auth[1]}":
                return self._reject(h, 401, "a bearer token is required")
            return True
        if kind == "oauth2":
            tok = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
            with self.lock:
                exp = self.tokens.get(tok)
            if exp is None:
                return self._reject(h, 401, "unknown token")
            if time.monotonic() >= exp:
                return self._reject(h, 401, "token expired")
            return True
        return self._check_sigv4(h, body, auth)

    def _check_sigv4(self, h, body, auth):
        _, access_key, secret, region, service = self.auth
        m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/([^,]+), ?SignedHeaders=([^,]+), ?"
                     r"Signature=([0-9a-f]+)$", auth)
        if not m:
            return self._reject(h, 403, "no SigV4 Authorization header")
        key, scope, signed, sig = m.groups()
        if key != access_key or scope.split("/")[1:3] != [region, service]:
            return self._reject(h, 403, f"wrong credential scope {scope}")
        headers = {k.lower(): v for k, v in h.headers.items()}
        names = signed.split(";")
        if "host" not in names or "x-amz-date" not in names or any(n not in headers for n in names):
            return self._reject(h, 403, f"signed headers {signed} incomplete")
        want = sigv4_signature(h.command, h.path, headers, body, secret, headers["x-amz-date"],
                               scope, names, service)
        if not hmac.compare_digest(want, sig):
            return self._reject(h, 403, "signature mismatch")
        with self.lock:
            self.verified += 1
        return True
