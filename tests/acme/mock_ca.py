#!/usr/bin/env python3
"""A small ACME CA (RFC 8555, RFC 9773 renewal information, profiles) for
the tests: what Debian's Pebble 2.4 lacks (ARI, profiles, short
lifetimes, Retry-After, a CA that goes down), as a real server that a real
client (Debian's lego) gets a certificate from.

It checks what a CA must: JWS signatures (ES256, RS256) against the
account's key, single-use nonces (`badNonce` with a fresh one otherwise),
the protected `url` against the request's, `kid` against known accounts,
POST-as-GET's empty payload, `replaces` against the account's own
unreplaced certificates; it validates HTTP-01 by fetching the token from
HTTP_PORT and TLS-ALPN-01 by a handshake with TLS_PORT (every name is at
127.0.0.1), signs the CSR's names only when the order's identifiers are
valid, and logs every request.

usage: mock_ca.py DIR PORT HTTP_PORT TLS_PORT
  DIR gets ca.pem (the CA's root: trust it for issued certificates),
  tls-ca.pem (the root of the CA's own HTTPS), ready (written once
  listening). The directory is https://127.0.0.1:PORT/dir.

Control (plain JSON over the same HTTPS, no JWS):
  GET  /control/log              every request so far: [{t, method, path, what}]
  POST /control/config {...}     lifetime (s), profiles {name: lifetime},
                                 ari: [start, end] seconds from now for the
                                 certificates issued before it is set (the
                                 others, and null: 2/3 of the lifetime,
                                 ±1 %), ari_retry (s),
                                 ari_off (no renewalInfo in the directory),
                                 rate_limit: {orders: N, retry_after: s},
                                 down: seconds (every request closed unanswered)
  GET  /control/orders           orders placed: [{id, names, replaces, profile}]
"""
import base64, datetime, hashlib, http.server, json, os, secrets, socket, ssl, sys, threading, time, urllib.request
from cryptography import x509
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID, ObjectIdentifier
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa, padding, utils

DIR, PORT, HTTP_PORT, TLS_PORT = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
BASE = f"https://127.0.0.1:{PORT}"
ACME_ID = ObjectIdentifier("1.3.6.1.5.5.7.1.31")
LOCK = threading.RLock()

def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def unb64(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))

def now():
    return datetime.datetime.now(datetime.timezone.utc)

def rfc3339(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")

def make_ca(cn):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now() - datetime.timedelta(days=1)).not_valid_after(now() + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert

def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)

# The CA that issues, and the one of its own HTTPS.
CA_KEY, CA_CERT = make_ca("nikaia mock ACME CA")
TLS_CA_KEY, TLS_CA_CERT = make_ca("nikaia mock ACME CA (HTTPS)")
tls_key = ec.generate_private_key(ec.SECP256R1())
tls_cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(TLS_CA_CERT.subject).public_key(tls_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now() - datetime.timedelta(days=1)).not_valid_after(now() + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(TLS_CA_KEY, hashes.SHA256()))
open(f"{DIR}/ca.pem", "wb").write(pem(CA_CERT))
open(f"{DIR}/tls-ca.pem", "wb").write(pem(TLS_CA_CERT))
open(f"{DIR}/tls.pem", "wb").write(pem(tls_cert))
open(f"{DIR}/tls.key", "wb").write(tls_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

CONFIG = {"lifetime": 90 * 86400, "profiles": {"classic": 90 * 86400, "shortlived": 6 * 86400},
          "ari": None, "ari_retry": 3600, "ari_off": False, "ari_set_at": 0,
          "rate_limit": None, "down_until": 0}
NONCES, ACCOUNTS, ORDERS, AUTHZS, CHALLS, CERTS = set(), {}, {}, {}, {}, {}
LOG = []

def nonce():
    n = b64(secrets.token_bytes(16))
    NONCES.add(n)
    return n

def thumbprint(jwk):
    if jwk["kty"] == "EC":
        canon = json.dumps({"crv": jwk["crv"], "kty": "EC", "x": jwk["x"], "y": jwk["y"]}, separators=(",", ":"), sort_keys=True)
    else:
        canon = json.dumps({"e": jwk["e"], "kty": "RSA", "n": jwk["n"]}, separators=(",", ":"), sort_keys=True)
    return b64(hashlib.sha256(canon.encode()).digest())

def verify(jwk, alg, data, sig):
    if alg == "ES256" and jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
        x, y = int.from_bytes(unb64(jwk["x"]), "big"), int.from_bytes(unb64(jwk["y"]), "big")
        key = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
        if len(sig) != 64:
            raise ValueError("ES256 signature of the wrong length")
        der = utils.encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        key.verify(der, data, ec.ECDSA(hashes.SHA256()))
    elif alg == "RS256" and jwk.get("kty") == "RSA":
        n, e = int.from_bytes(unb64(jwk["n"]), "big"), int.from_bytes(unb64(jwk["e"]), "big")
        rsa.RSAPublicNumbers(e, n).public_key().verify(sig, data, padding.PKCS1v15(), hashes.SHA256())
    else:
        raise ValueError(f"unsupported alg {alg}")

class Problem(Exception):
    def __init__(self, status, kind, detail, retry_after=None):
        self.status, self.kind, self.detail, self.retry_after = status, kind, detail, retry_after

def cert_id(cert):
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    serial = cert.serial_number
    return f"{b64(aki)}.{b64(serial.to_bytes(serial.bit_length() // 8 + 1, 'big'))}"

def validate(chall, authz, account):
    name = authz["identifier"]["value"]
    ka = chall["token"] + "." + thumbprint(account["jwk"])
    try:
        if chall["type"] == "http-01":
            req = urllib.request.Request(f"http://127.0.0.1:{HTTP_PORT}/.well-known/acme-challenge/{chall['token']}", headers={"Host": name})
            body = urllib.request.urlopen(req, timeout=5).read().decode().strip()
            ok = body == ka
            why = f"got {body!r}"
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            ctx.set_alpn_protocols(["acme-tls/1"])
            with socket.create_connection(("127.0.0.1", TLS_PORT), timeout=5) as s, ctx.wrap_socket(s, server_hostname=name) as t:
                der = t.getpeercert(binary_form=True)
                alpn = t.selected_alpn_protocol()
            c = x509.load_der_x509_certificate(der)
            ext = c.extensions.get_extension_for_oid(ACME_ID)
            sans = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
            want = b"\x04\x20" + hashlib.sha256(ka.encode()).digest()
            ok = alpn == "acme-tls/1" and ext.critical and ext.value.value == want and sans == [name]
            why = f"alpn {alpn}, sans {sans}"
    except Exception as e:
        ok, why = False, f"{type(e).__name__}: {e}"
    with LOCK:
        chall["status"] = authz["status"] = "valid" if ok else "invalid"
        if ok:
            chall["validated"] = rfc3339(now())
        else:
            chall["error"] = {"type": "urn:ietf:params:acme:error:unauthorized", "detail": f"{chall['type']} for {name}: {why}"}
        for order in ORDERS.values():
            if chall["authz"] in order["authz_ids"]:
                states = [AUTHZS[a]["status"] for a in order["authz_ids"]]
                if "invalid" in states:
                    order["status"] = "invalid"
                elif all(s == "valid" for s in states) and order["status"] == "pending":
                    order["status"] = "ready"

def order_body(o):
    body = {"status": o["status"], "expires": o["expires"], "identifiers": o["identifiers"],
            "authorizations": [f"{BASE}/authz/{a}" for a in o["authz_ids"]], "finalize": f"{BASE}/finalize/{o['id']}"}
    if o.get("profile"):
        body["profile"] = o["profile"]
    if o.get("cert"):
        body["certificate"] = f"{BASE}/cert/{o['cert']}"
    if o.get("replaces"):
        body["replaces"] = o["replaces"]
    return body

def issue(o, csr_der):
    csr = x509.load_der_x509_csr(csr_der)
    if not csr.is_signature_valid:
        raise Problem(400, "badCSR", "the CSR's signature does not verify")
    try:
        sans = sorted(csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        sans = []
    names = sorted(i["value"] for i in o["identifiers"])
    if sans != names:
        raise Problem(400, "badCSR", f"the CSR names {sans}, the order {names}")
    lifetime = CONFIG["profiles"].get(o.get("profile")) if o.get("profile") else None
    lifetime = lifetime or CONFIG["lifetime"]
    start = now().replace(microsecond=0)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(CA_CERT.subject)
            .public_key(csr.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(seconds=lifetime))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=True)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(CA_KEY.public_key()), critical=False)
            .sign(CA_KEY, hashes.SHA256()))
    cid = secrets.token_hex(8)
    CERTS[cid] = {"cert": cert, "account": o["account"], "id": cert_id(cert), "replaced": False, "issued": time.time()}
    o["cert"], o["status"] = cid, "valid"

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body=b"", ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Replay-Nonce", nonce())
        self.send_header("Cache-Control", "no-store")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def problem(self, p):
        h = [("Retry-After", str(p.retry_after))] if p.retry_after is not None else []
        self.send(p.status, {"type": f"urn:ietf:params:acme:error:{p.kind}", "detail": p.detail}, "application/problem+json", h)

    def down(self):
        if time.time() < CONFIG["down_until"]:
            self.note("down")
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return True
        return False

    def note(self, what):
        with LOCK:
            LOG.append({"t": time.time(), "method": self.command, "path": self.path, "what": what})

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if self.path.startswith("/control/"):
            return self.control(None)
        if self.down():
            return
        self.note(self.path.split("/")[1])
        if self.path == "/dir":
            meta = {"termsOfService": f"{BASE}/terms", "profiles": {p: f"{l} s" for p, l in CONFIG["profiles"].items()}}
            directory = {"newNonce": f"{BASE}/nonce", "newAccount": f"{BASE}/new-account", "newOrder": f"{BASE}/new-order",
                         "revokeCert": f"{BASE}/revoke", "keyChange": f"{BASE}/key-change", "meta": meta}
            if not CONFIG["ari_off"]:
                directory["renewalInfo"] = f"{BASE}/renewal-info"
            return self.send(200, directory)
        if self.path == "/nonce":
            return self.send(200 if self.command == "GET" else 200)
        if self.path.startswith("/renewal-info/"):
            cid = self.path.split("/", 2)[2]
            with LOCK:
                found = [c for c in CERTS.values() if c["id"] == cid]
            if not found:
                return self.problem(Problem(404, "malformed", "no such certificate"))
            c = found[0]["cert"]
            # A window set by the tests moves the certificates issued
            # before it was set; the ones issued after keep the default.
            if CONFIG["ari"] is not None and found[0]["issued"] <= CONFIG["ari_set_at"]:
                start, end = now() + datetime.timedelta(seconds=CONFIG["ari"][0]), now() + datetime.timedelta(seconds=CONFIG["ari"][1])
            else:
                nb, na = c.not_valid_before_utc, c.not_valid_after_utc
                mid = nb + (na - nb) * 2 / 3
                start, end = mid - (na - nb) / 100, mid + (na - nb) / 100
            return self.send(200, {"suggestedWindow": {"start": rfc3339(start), "end": rfc3339(end)}},
                             headers=[("Retry-After", str(CONFIG["ari_retry"]))])
        self.send(404, {"type": "urn:ietf:params:acme:error:malformed", "detail": "not found"}, "application/problem+json")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        if self.path.startswith("/control/"):
            return self.control(raw)
        if self.down():
            return
        try:
            with LOCK:
                self.post(raw)
        except Problem as p:
            self.note(f"problem {p.kind}")
            self.problem(p)

    def post(self, raw):
        jws = json.loads(raw)
        prot = json.loads(unb64(jws["protected"]))
        if prot.get("nonce") not in NONCES:
            raise Problem(400, "badNonce", "unknown or used nonce")
        NONCES.discard(prot["nonce"])
        if prot.get("url") != BASE + self.path:
            raise Problem(401, "unauthorized", f"url {prot.get('url')} is not {BASE + self.path}")
        data = f"{jws['protected']}.{jws['payload']}".encode()
        if "jwk" in prot:
            if self.path != "/new-account":
                raise Problem(400, "malformed", "jwk only for new-account")
            jwk, account = prot["jwk"], None
        else:
            account = ACCOUNTS.get(prot.get("kid", "").rsplit("/", 1)[-1])
            if account is None:
                raise Problem(400, "accountDoesNotExist", "no such account")
            jwk = account["jwk"]
        try:
            verify(jwk, prot.get("alg"), data, unb64(jws["signature"]))
        except Exception as e:
            raise Problem(400, "malformed", f"the JWS does not verify: {e}")
        payload = json.loads(unb64(jws["payload"])) if jws["payload"] else None
        parts = self.path.strip("/").split("/")
        self.note(parts[0])
        if parts[0] in ("order", "authz", "cert") and payload is not None:
            raise Problem(400, "malformed", "a POST-as-GET has an empty payload")
        if parts[0] == "new-account":
            tp = thumbprint(jwk)
            for aid, a in ACCOUNTS.items():
                if a["thumbprint"] == tp:
                    return self.send(200, {"status": "valid"}, headers=[("Location", f"{BASE}/account/{aid}")])
            if not payload or payload.get("termsOfServiceAgreed") is not True:
                raise Problem(403, "userActionRequired", "the terms of service are not agreed")
            aid = secrets.token_hex(8)
            ACCOUNTS[aid] = {"jwk": jwk, "thumbprint": tp, "id": aid}
            return self.send(201, {"status": "valid", "contact": payload.get("contact", [])}, headers=[("Location", f"{BASE}/account/{aid}")])
        if parts[0] == "new-order":
            rl = CONFIG["rate_limit"]
            if rl and rl["orders"] > 0:
                rl["orders"] -= 1
                raise Problem(429, "rateLimited", "too many new orders", rl["retry_after"])
            profile = payload.get("profile")
            if profile is not None and profile not in CONFIG["profiles"]:
                raise Problem(400, "invalidProfile", f"no profile {profile}")
            replaces = payload.get("replaces")
            if replaces is not None:
                old = [c for c in CERTS.values() if c["id"] == replaces and c["account"] == account["id"]]
                if not old:
                    raise Problem(400, "malformed", "replaces names no certificate of this account")
                if old[0]["replaced"]:
                    raise Problem(409, "alreadyReplaced", "that certificate was replaced already")
                old[0]["replaced"] = True
            oid = secrets.token_hex(8)
            ids = []
            for ident in payload["identifiers"]:
                aid = secrets.token_hex(8)
                chs = []
                for t in ("http-01", "tls-alpn-01"):
                    cid = secrets.token_hex(8)
                    CHALLS[cid] = {"type": t, "status": "pending", "token": b64(secrets.token_bytes(24)), "authz": aid, "id": cid}
                    chs.append(cid)
                AUTHZS[aid] = {"status": "pending", "identifier": ident, "challs": chs, "account": account["id"]}
                ids.append(aid)
            o = {"id": oid, "status": "pending", "identifiers": payload["identifiers"], "authz_ids": ids, "account": account["id"],
                 "profile": profile, "replaces": replaces, "expires": rfc3339(now() + datetime.timedelta(days=7))}
            ORDERS[oid] = o
            return self.send(201, order_body(o), headers=[("Location", f"{BASE}/order/{oid}")])
        if parts[0] == "order":
            o = ORDERS.get(parts[1])
            if not o or o["account"] != account["id"]:
                raise Problem(404, "malformed", "no such order")
            return self.send(200, order_body(o))
        if parts[0] == "authz":
            a = AUTHZS.get(parts[1])
            if not a or a["account"] != account["id"]:
                raise Problem(404, "malformed", "no such authorization")
            chs = []
            for cid in a["challs"]:
                c = CHALLS[cid]
                body = {"type": c["type"], "url": f"{BASE}/chall/{cid}", "token": c["token"], "status": c["status"]}
                if "error" in c:
                    body["error"] = c["error"]
                chs.append(body)
            return self.send(200, {"status": a["status"], "identifier": a["identifier"], "challenges": chs})
        if parts[0] == "chall":
            c = CHALLS.get(parts[1])
            a = AUTHZS.get(c["authz"]) if c else None
            if not c or a["account"] != account["id"]:
                raise Problem(404, "malformed", "no such challenge")
            if payload is not None and c["status"] == "pending":
                c["status"] = "processing"
                threading.Thread(target=validate, args=(c, a, account), daemon=True).start()
            return self.send(200, {"type": c["type"], "url": f"{BASE}/chall/{c['id']}", "token": c["token"], "status": c["status"]},
                             headers=[("Link", f'<{BASE}/authz/{c["authz"]}>;rel="up"')])
        if parts[0] == "finalize":
            o = ORDERS.get(parts[1])
            if not o or o["account"] != account["id"]:
                raise Problem(404, "malformed", "no such order")
            if o["status"] != "ready":
                raise Problem(403, "orderNotReady", f"the order is {o['status']}")
            issue(o, unb64(payload["csr"]))
            return self.send(200, order_body(o), headers=[("Location", f"{BASE}/order/{o['id']}")])
        if parts[0] == "cert":
            c = CERTS.get(parts[1])
            if not c or c["account"] != account["id"]:
                raise Problem(404, "malformed", "no such certificate")
            return self.send(200, pem(c["cert"]) + pem(CA_CERT), "application/pem-certificate-chain")
        raise Problem(404, "malformed", "not found")

    def control(self, raw):
        with LOCK:
            if self.path == "/control/log":
                return self.send(200, LOG)
            if self.path == "/control/orders":
                return self.send(200, [{"id": o["id"], "names": [i["value"] for i in o["identifiers"]],
                                        "replaces": o["replaces"], "profile": o["profile"], "status": o["status"]} for o in ORDERS.values()])
            if self.path == "/control/config":
                change = json.loads(raw)
                if "down" in change:
                    CONFIG["down_until"] = time.time() + change.pop("down")
                if "ari" in change:
                    CONFIG["ari_set_at"] = time.time()
                CONFIG.update(change)
                return self.send(200, {k: v for k, v in CONFIG.items()})
        self.send(404, {})

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

server = Server(("127.0.0.1", PORT), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{DIR}/tls.pem", f"{DIR}/tls.key")
server.socket = ctx.wrap_socket(server.socket, server_side=True)
open(f"{DIR}/ready", "w").write(BASE + "/dir\n")
server.serve_forever()
