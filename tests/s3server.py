"""A real S3 server for the S3 tests, and a fault-injecting proxy in front of it.

versitygw (Apache-2.0, built by scripts/install-deps.sh with `go install`)
serves a temporary directory over the S3 protocol on a free loopback port and
verifies every SigV4 signature.  The session fixture `s3` starts one server
(root keys random per run, virtual-hosted buckets under `localhost` as well
as path-style); `bucket` makes a fresh bucket per test.  `s3_tls` starts a
second server with TLS, its certificate issued by a throw-away CA.

FaultProxy sits between floe and the server.  It understands just enough
HTTP/1.1 to see each request (one per client connection), classify it
(PutObject, UploadPart, CompleteMultipartUpload, GET, ...) and apply a rule:
answer 503 SlowDown, 500 InternalError, 404 NoSuchUpload or a 200 with an
<Error> inside, drop the connection, flip a byte of the body
(the checksum makes the server refuse it), forward the request but lose the
reply, or stall.  Everything else is forwarded unchanged (the Host header
too, so signatures stay valid).  `proxy.log` lists (kind, action) per
request.
"""
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

import boto3
import botocore.config
import pytest
from conftest import free_port, stop_process

REGION = "us-east-1"


def versitygw_bin():
    """The versitygw program: $VERSITYGW, $GOBIN, $(go env GOPATH)/bin, ~/go/bin, PATH."""
    cands = [os.environ.get("VERSITYGW")]
    if os.environ.get("GOBIN"):
        cands.append(os.path.join(os.environ["GOBIN"], "versitygw"))
    try:
        gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True,
                                timeout=30).stdout.strip()
        if gopath:
            cands.append(os.path.join(gopath.split(":")[0], "bin", "versitygw"))
    except (OSError, subprocess.TimeoutExpired):
        pass
    cands.append(os.path.expanduser("~/go/bin/versitygw"))
    cands.append(shutil.which("versitygw"))
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    pytest.fail("versitygw is not installed: run scripts/install-deps.sh "
                "(CGO_ENABLED=0 go install github.com/versity/versitygw/cmd/versitygw@v1.7.0)")




class S3Server:
    """One versitygw process on loopback over a temporary directory."""

    def __init__(self, cert=None, key=None, ca_file=None):
        self.root = tempfile.mkdtemp(prefix="floe-s3-")
        self.data = os.path.join(self.root, "data")
        self.meta = os.path.join(self.root, "meta")
        os.makedirs(self.data)
        os.makedirs(self.meta)
        self.access_key = "AK" + secrets.token_hex(8).upper()
        self.secret_key = secrets.token_urlsafe(30)
        self.tls = cert is not None
        self.ca_file = ca_file                  # what clients of a TLS server trust
        self.port = free_port()
        scheme = "https" if self.tls else "http"
        self.endpoint = f"{scheme}://127.0.0.1:{self.port}"
        args = [versitygw_bin(), "--port", f"127.0.0.1:{self.port}", "--region", REGION,
                "--virtual-domain", "localhost", "--keep-alive", "--quiet"]
        if self.tls:
            args += ["--cert", cert, "--key", key]
        args += ["posix", "--sidecar", self.meta, self.data]
        env = dict(os.environ, ROOT_ACCESS_KEY=self.access_key, ROOT_SECRET_KEY=self.secret_key)
        self.log = open(os.path.join(self.root, "versitygw.log"), "wb")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.log.flush()
                with open(self.log.name) as f:
                    pytest.fail(f"versitygw exited ({self.proc.returncode}): {f.read()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        pytest.fail("versitygw did not start listening within 30 s")

    def stop(self):
        stop_process(self.proc, 10)
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- clients --------------------------------------------------------------------
    def client(self, endpoint=None, verify=None):
        """An independent S3 client (boto3), path-style."""
        return boto3.client("s3", endpoint_url=endpoint or self.endpoint, region_name=REGION,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key,
                            verify=verify if verify is not None else self.ca_file,
                            config=botocore.config.Config(s3={"addressing_style": "path"},
                                                          retries={"max_attempts": 1}))

    def new_bucket(self):
        name = "b-" + secrets.token_hex(6)
        os.makedirs(os.path.join(self.data, name))     # a bucket is a folder
        return name

    def env(self, endpoint=None, **extra):
        """The environment for floe: credentials, region, endpoint."""
        env = dict(os.environ)
        for k in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "FLOE_CA_FILE", "FLOE_CATALOG",
                  "FLOE_WAREHOUSE"):
            env.pop(k, None)
        env.update(AWS_ACCESS_KEY_ID=self.access_key, AWS_SECRET_ACCESS_KEY=self.secret_key,
                   AWS_REGION=REGION, AWS_ENDPOINT_URL_S3=endpoint or self.endpoint)
        env.update(extra)
        return env

    def uploads(self, bucket):
        """Multipart uploads in progress (ListMultipartUploads)."""
        return self.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])

    def keys(self, bucket, prefix=""):
        out, token = [], None
        while True:
            kw = {"Bucket": bucket, "Prefix": prefix}
            if token:
                kw["ContinuationToken"] = token
            page = self.client().list_objects_v2(**kw)
            out += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return sorted(out)
            token = page["NextContinuationToken"]

    def get(self, bucket, key):
        return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()


@pytest.fixture(scope="session")
def s3():
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def bucket(s3):
    return s3.new_bucket()


# ---- TLS -------------------------------------------------------------------------------

def make_ca_and_cert(directory):
    """A throw-away CA and a server certificate for 127.0.0.1 / localhost signed by it.
    Returns (ca.pem, server.pem, server.key)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "floe test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = [os.path.join(directory, n) for n in ("ca.pem", "server.pem", "server.key")]
    with open(paths[0], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths[1], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths[2], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption()))
    return paths


@pytest.fixture(scope="session")
def s3_tls(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    ca, cert, key = make_ca_and_cert(str(d))
    server = S3Server(cert=cert, key=key, ca_file=ca)
    yield server
    server.stop()


# ---- the fault proxy ---------------------------------------------------------------------

def request_kind(method, target):
    """The S3 operation of a request, from its method and query."""
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query, keep_blank_values=True)
    if method == "PUT" and "partNumber" in q:
        return "UploadPart"
    if method == "POST" and "uploads" in q:
        return "CreateMultipartUpload"
    if method == "POST" and "uploadId" in q:
        return "CompleteMultipartUpload"
    if method == "DELETE" and "uploadId" in q:
        return "AbortMultipartUpload"
    return {"PUT": "PutObject", "GET": "GetObject", "HEAD": "HeadObject",
            "DELETE": "DeleteObject"}.get(method, method)


class Rule:
    """Apply `action` to requests of `kind` (and part number, when given):
    skip the first `after` matches, then act on the next `times` (None: all)."""

    def __init__(self, kind, action, times=1, after=0, part=None):
        self.kind, self.action, self.times, self.after, self.part = kind, action, times, after, part
        self.seen = 0

    def take(self, kind, part):
        if kind != self.kind or (self.part is not None and part != self.part):
            return None
        self.seen += 1
        if self.seen <= self.after:
            return None
        if self.times is not None and self.seen > self.after + self.times:
            return None
        return self.action


SLOWDOWN = (b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s")
SLOWDOWN_BODY = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
                 b"<Message>Please reduce your request rate.</Message></Error>")
INTERNAL = (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s")
INTERNAL_BODY = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code>"
                 b"<Message>We encountered an internal error. Please try again.</Message></Error>")
NO_SUCH_UPLOAD = (b"HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n%s")
NO_SUCH_UPLOAD_BODY = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchUpload</Code>"
                       b"<Message>The specified upload does not exist.</Message></Error>")
ERROR_IN_200 = (b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n%s")


class FaultProxy:
    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.rules = []
        self.log = []                        # (kind, action or "forward", host, target)
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def add(self, *args, **kw):
        with self.lock:
            self.rules.append(Rule(*args, **kw))

    def kinds(self, action=None):
        with self.lock:
            return [k for k, a, _, _ in self.log if action is None or a == action]

    def close(self):
        self.closed = True
        self.sock.close()

    def _serve(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_head(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None, b""
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        return head, rest

    @staticmethod
    def _read_exact(conn, have, n):
        while len(have) < n:
            chunk = conn.recv(min(1 << 20, n - len(have)))
            if not chunk:
                break
            have += chunk
        return have

    def _handle(self, conn):
        try:
            self._handle_one(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def _handle_one(self, conn):
        head, rest = self._read_head(conn)
        if head is None:
            return
        lines = head.split(b"\r\n")
        method, target, _ = lines[0].decode().split(" ", 2)
        headers = [l for l in lines[1:] if l]
        length = 0
        host = ""
        for h in headers:
            name, _, value = h.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
            if name.strip().lower() == "host":
                host = value.strip()
        body = self._read_exact(conn, rest, length)
        kind = request_kind(method, target)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
        part = int(q["partNumber"][0]) if "partNumber" in q else None
        action = None
        with self.lock:
            for r in self.rules:
                action = r.take(kind, part)
                if action:
                    break
            self.log.append((kind, action or "forward", host, target))
        if action == "slowdown":
            conn.sendall(SLOWDOWN % (len(SLOWDOWN_BODY), SLOWDOWN_BODY))
            return
        if action == "500":
            conn.sendall(INTERNAL % (len(INTERNAL_BODY), INTERNAL_BODY))
            return
        if action == "no-such-upload":
            conn.sendall(NO_SUCH_UPLOAD % (len(NO_SUCH_UPLOAD_BODY), NO_SUCH_UPLOAD_BODY))
            return
        if action == "error-in-200":
            conn.sendall(ERROR_IN_200 % (len(INTERNAL_BODY), INTERNAL_BODY))
            return
        if action == "drop":
            conn.shutdown(socket.SHUT_RDWR)
            return
        if action == "stall":
            time.sleep(5)
            return
        if action == "corrupt" and body:
            i = len(body) // 2
            body = body[:i] + bytes([body[i] ^ 0xFF]) + body[i + 1:]
        reply = self._forward(lines[0], headers, body)
        if action == "lose-reply":
            conn.shutdown(socket.SHUT_RDWR)
            return
        conn.sendall(reply)

    def _forward(self, request_line, headers, body):
        """Send the request upstream on a new connection; the whole reply, with
        Connection: close (one request per client connection)."""
        up = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=60)
        try:
            kept = [h for h in headers if not re.match(rb"(?i)connection\s*:", h)]
            up.sendall(b"\r\n".join([request_line, *kept, b"Connection: close", b"", b""]) + body)
            reply = b""
            while True:
                chunk = up.recv(1 << 20)
                if not chunk:
                    break
                reply += chunk
        finally:
            up.close()
        head, sep, rest = reply.partition(b"\r\n\r\n")
        hl = [l for l in head.split(b"\r\n") if not re.match(rb"(?i)connection\s*:", l)]
        return b"\r\n".join(hl + [b"Connection: close"]) + sep + rest


@pytest.fixture
def proxy(s3):
    p = FaultProxy(s3.port)
    yield p
    p.close()
