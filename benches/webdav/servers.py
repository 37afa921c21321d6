"""The servers bench.py measures: each one started on a free port of
127.0.0.1 serving the fixture's tree, stopped at the end; and one request
on a fresh connection. A server that cannot be measured here raises
Skip, saying why."""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import time


class Skip(Exception):
    """A server that cannot be measured here, and why."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, name, log):
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            raise Skip(f"{name} exited at start ({proc.returncode}): {tail(log)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise Skip(f"{name} did not listen on {port} within 15 s: {tail(log)}")


def tail(path, n=6):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(line.strip() for line in f.readlines()[-n:])
    except OSError:
        return "(no log)"


class Server:
    def __init__(self, name, proc, port, log):
        self.name, self.proc, self.port, self.log = name, proc, port, log

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM if self.name != "nginx" else signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


NGINX_MODULE = "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"


def start_nginx(tree, work, workers, locks=False):
    port = free_port()
    d = os.path.join(work, "nginx")
    os.makedirs(os.path.join(d, "body"), exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = f"""{user}worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
load_module {NGINX_MODULE};
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    client_max_body_size 0;
    {"dav_ext_lock_zone zone=lk:64m timeout=1h;" if locks else ""}
    server {{
        listen 127.0.0.1:{port};
        root {tree};
        location / {{
            dav_methods PUT DELETE MKCOL COPY MOVE;
            dav_ext_methods PROPFIND OPTIONS{" LOCK UNLOCK" if locks else ""};
            {"dav_ext_lock zone=lk;" if locks else ""}
            dav_access user:rw group:rw all:r;
        }}
    }}
}}
"""
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)
    log = os.path.join(d, "stderr.log")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen(
        [nginx, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e", os.path.join(d, "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
    )
    wait_port(port, proc, "nginx", log)
    return Server("nginx", proc, port, log)


def start_rclone(tree, work, workers):
    port = free_port()
    log = os.path.join(work, "rclone.log")
    env = dict(os.environ, GOMAXPROCS=str(workers), RCLONE_CONFIG=os.path.join(work, "rclone.conf"))
    proc = subprocess.Popen(
        ["rclone", "serve", "webdav", tree, "--addr", f"127.0.0.1:{port}", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
        env=env,
    )
    wait_port(port, proc, "rclone", log)
    return Server("rclone", proc, port, log)


def nikaia_runtime(port, workers, durability, locks_dir=None, max_locks=0):
    locks = ""
    if locks_dir:
        locks = f"""
[webdav-locks]
dir = "{locks_dir}"
max-locks = {max_locks}
max-locks-per-user = {max_locks}
"""
    return f"""listen = "127.0.0.1:{port}"
workers = {workers}
access-log = "off"
webdav = true

[[write]]
match = ["**"]
anyone = true
create = true
replace = true
delete = true
delete-dirs = true
webdav = true
plain-http = true
max-size = "2GiB"
durability = "{durability}"
{locks}"""


def start_nikaia(name, binary, tree, work, workers, max_locks=0):
    if not binary:
        raise Skip("no --nikaia binary given")
    durability = "none" if name == "nikaia-none" else "data"
    port = free_port()
    rt = os.path.join(work, f"{name}.toml")
    with open(rt, "w") as f:
        locks_dir = os.path.join(work, f"{name}-locks") if max_locks else None
        f.write(nikaia_runtime(port, workers, durability, locks_dir, max_locks))
    log = os.path.join(work, f"{name}.log")
    proc = subprocess.Popen(
        [binary, "serve", tree, "--runtime", rt],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
    )
    try:
        wait_port(port, proc, name, log)
    except Skip as e:
        with open(log, errors="replace") as f:
            text = f.read()
        if "webdav" in text:
            first = next(line for line in text.splitlines() if "webdav" in line)
            raise Skip(
                f"{binary} refuses the WebDAV keys of #49 (not built there): "
                f"{first.split(': ', 1)[-1].split('; the ')[0]}"
            ) from None
        raise Skip(f"{e} (its runtime file: {rt})") from None
    server = Server(name, proc, port, log)
    status, _, _ = request(port, "PROPFIND", "/", {"Depth": "0"}, b"")
    if status in (405, 501):
        server.stop()
        raise Skip(
            f"{name} answers PROPFIND with {status}: its WebDAV methods (#49) are not "
            f"built in {binary}; nothing measured for it"
        )
    return server


def request(port, method, path, headers, body):
    """(status, response headers, body bytes) of one request on a fresh
    connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    try:
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
    finally:
        conn.close()
