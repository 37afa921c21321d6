#!/usr/bin/env python3
"""What HTTP/3 costs: `nikaia serve` over HTTP/3 beside its own HTTP/2 over
TLS, Caddy (quic-go), ngtcp2's gtlsserver and nginx over HTTP/2, one worker
each (--workers N: N each), side by side in one run (issues #47 and #48,
"Benchmarks").

Servers (--servers picks; all by default), each started afresh for every run:

  nikaia-h3         nikaia serve, `workers = 1`, TLS, `http3 = true`; load over
                    HTTP/3 (UDP, the TLS listener's port)
  nikaia-h3-nogso   the same with UDP GSO off (`http3-gso = false`): one
                    datagram per sendmsg
  nikaia-h2         the same server and runtime file; load over HTTP/2 + TLS
  caddy-h3          Debian's caddy (quic-go), GOMAXPROCS=1; HTTP/3 is on by
                    default on its TLS site
  caddy-h2          the same Caddy over HTTP/2 + TLS
  gtls-h3           ngtcp2's gtlsserver (C, GnuTLS; Debian ngtcp2-server),
                    serving the fixture with -d, --max-udp-payload-size 1452
  gtls-h3-nogso     the same with --max-gso-dgrams 1
  nginx-h2          Debian's nginx 1.22 (no HTTP/3 there) over HTTP/2 + TLS,
                    sendfile on, `worker_processes` --workers

--workers N: nikaia's `workers = N`, Caddy's GOMAXPROCS=N, nginx's
worker_processes N; gtlsserver has one thread whatever N. With N > 1 the
server and the clients share every CPU (--server-cpu and --client-cpus
default to all of them), and machine CPU is the figure to compare.

Loads:

  bulk   a 100 MiB file: --bulk-clients processes (connections), each fetching
         it --bulk-streams times at once on its one connection; the batch is
         repeated until --seconds have passed. Figures per GiB of body.
  small  64 files of 4 KiB: --small-clients processes (connections), each
         fetching --small-requests of them (as many streams at once as the
         server allows, 100 to 128); repeated until --seconds have passed.
         Figures per request.
  stream one download of a --stream-mib file (64 MiB) on one connection, one
         stream, per run (no batching, no warm-up): the rate of the whole
         download (body / the client's wall time, handshake included) and
         the settled rate (from the clients' interface counters, sampled
         every 5 ms: the body's bytes from 25 % to 98 % of the download over
         the time they took). HTTP/3 by one gtlsclient, HTTP/2 by curl
         --http2. Meant for --wire tun.

Clients: HTTP/3 by many `gtlsclient` processes (Debian ngtcp2-client; h2load
here has no HTTP/3), each with a 4 MiB UDP receive buffer (--client-rcvbuf,
set by a second LD_PRELOAD shim: gtlsclient asks for none, and the kernel's
208 KiB drops datagrams of a fast download), HTTP/2 by h2load (-m the same
streams). CPU is read
from /proc: server = the server process's utime+stime (all threads), clients
= the client processes' rusage, machine = every CPU's non-idle time
(/proc/stat), server+irq = the server process's and the irq and softirq
time of the CPU it is pinned to (/proc/stat's cpuN line: the receive work RPS
steers there, the ACKs or requests it gets). The targets are judged on
server CPU; machine CPU includes the clients, which differ by protocol.

Network: two network namespaces joined by a veth pair with MTU 1500 (so no
datagram can exceed 1472 bytes of UDP payload), server in `nkh3-srv` on
10.203.0.1 under `taskset -c --server-cpu`, clients in `nkh3-cli` on
10.203.0.2 under `taskset -c --client-cpus`, receive work steered to each
side's CPU with RPS. Each namespace's own /proc/net/snmp and the veth's
counters show what the server sent: UDP datagrams read by the clients, the
server's sendmsg calls (one per GSO batch), and the payload bytes; during
the check download of the 100 MiB file a packet socket on the clients' end
(bench.py --capture) counts the UDP payload size of every datagram, a GSO
batch by its virtio-net header's segment size. Needs
root; --loopback (or a failure to make the namespaces) runs on 127.0.0.1 in
the root namespace instead, where the counters include everything else on
the machine and datagram sizes are pinned only by each server's own cap.

    sudo python3 benches/http3/bench.py --nikaia target/release/nikaia \
        [--rounds 5] [--seconds 5] [--servers nikaia-h3,caddy-h3] [--loads bulk]
        [--out benches/http3/results/DATE.md] [--json FILE] [--quick]

--wire tun (#48) replaces the veth with a TUN device in each namespace and
benches/http3/relay (a compiled relay, `tun-relay`) copying IP packets
between them: each way a link of --link-mbit (200) with a drop-tail queue of
--queue-bytes (one bandwidth-delay product by default) and --delay-ms (10)
of propagation, so a round trip of 20 ms, TCP and UDP alike. The relay's CPU
and its counters (packets dropped at its queue, packets written late) are
reported per run, so that it is seen not to be the bottleneck.

--quick: 1 round of 2 s (a smoke test, about 4 minutes). A full run (5 rounds
of 5 s) takes about 15 minutes on a quiet machine.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
HERE = os.path.dirname(os.path.abspath(__file__))

NS_SRV, NS_CLI = "nkh3-srv", "nkh3-cli"
VETH_SRV, VETH_CLI = "nkh3-s", "nkh3-c"
TUN_SRV, TUN_CLI = "nkh3-ts", "nkh3-tc"
SRV_ADDR, CLI_ADDR = "10.203.0.1", "10.203.0.2"
MTU = 1500
# UDP payload cap for the servers that take one (gtlsserver): quinn-proto's
# and quic-go's MTU discovery stop at 1452 too.
MAX_UDP_PAYLOAD = 1452
BULK_SIZE = 100 << 20
SMALL_SIZE = 4 << 10
SMALL_FILES = 64
STREAMS = 100          # h2load -m for the small load: what the QUIC servers grant
STREAM_FILE = "stream.bin"
PORTS = {"nikaia": 8443, "caddy": 8444, "gtls": 8445, "nginx": 8446}
ALL_SERVERS = ["nikaia-h3", "nikaia-h3-nogso", "nikaia-h2", "caddy-h3", "caddy-h2", "gtls-h3", "gtls-h3-nogso",
               "nginx-h2"]

RCVBUF_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
/* A client's UDP sockets get a receive buffer of NKH3_RCVBUF bytes
   (SO_RCVBUFFORCE: root, past rmem_max), as browsers and quic-go's client
   ask for megabytes where gtlsclient asks for nothing. */
int socket(int domain, int type, int protocol) {
    static int (*real)(int, int, int);
    if (!real) real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    int fd = real(domain, type, protocol);
    const char *want = getenv("NKH3_RCVBUF");
    if (fd >= 0 && (type & 0xf) == SOCK_DGRAM && want) {
        int v = atoi(want) / 2;  /* the kernel doubles it */
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v);
    }
    return fd;
}
"""

CADDYFILE = """{{
	admin off
	auto_https disable_redirects
	storage file_system {work}/caddy-data
	servers {{
		protocols h1 h2 h3
	}}
}}
https://{addr}:{port} {{
	bind {addr}
	tls {work}/cert.pem {work}/key.pem
	root * {root}
	file_server
}}
"""

NGINX_CONF = """
worker_processes {workers};
daemon off;
master_process on;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    http2_max_requests 1000000;
    http2_max_concurrent_streams 128;
    open_file_cache max=1000 inactive=60s;
    default_type application/octet-stream;
    client_body_temp_path {work}/nginx-tmp;
    proxy_temp_path {work}/nginx-tmp;
    fastcgi_temp_path {work}/nginx-tmp;
    uwsgi_temp_path {work}/nginx-tmp;
    scgi_temp_path {work}/nginx-tmp;
    server {{
        listen {addr}:{port} ssl http2;
        root {root};
        ssl_certificate {work}/cert.pem;
        ssl_certificate_key {work}/key.pem;
        ssl_protocols TLSv1.3;
    }}
}}
"""


# ------------------------------------------------------------------ helpers

def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


def cpu_lines():
    """{'cpu': non-idle jiffies, 'cpu0': …, 'cpu0_irq': irq+softirq jiffies, …}
    from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            name, *v = line.split()
            v = list(map(int, v))
            out[name] = sum(v[:7]) - v[3] - v[4]   # steal left out; guest is inside user
            out[name + "_irq"] = v[5] + v[6]
    return out


def proc_cpu(pid):
    """utime + stime of `pid` (all its threads) and of its living
    descendants (nginx's workers), in jiffies."""
    total, kids = 0, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append((int(d), int(fields[11]) + int(fields[12])))
        if int(d) == pid:
            total += int(fields[11]) + int(fields[12])
    todo = [pid]
    while todo:
        for child, cpu in kids.get(todo.pop(), []):
            total += cpu
            todo.append(child)
    return total


def cpu_list(cpus):
    out = []
    for part in cpus.split(","):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def spread(xs, fmt="{:.2f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "–"
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def snmp(path):
    """{('Udp', 'InDatagrams'): n, …} from a /proc/…/net/snmp."""
    out = {}
    with open(path) as f:
        lines = f.read().splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        proto, names = head.split(":", 1)
        for k, v in zip(names.split(), vals.split(":", 1)[1].split()):
            out[(proto, k)] = int(v)
    return out


def netdev(path, dev):
    """(rx_bytes, rx_packets, tx_bytes, tx_packets) of `dev` from a /proc/…/net/dev."""
    with open(path) as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == dev:
                v = list(map(int, rest.split()))
                return v[0], v[1], v[8], v[9]
    return 0, 0, 0, 0


# ------------------------------------------------------------------ the net

class Net:
    """Two namespaces and a veth pair (or loopback). Each namespace holds a
    `sleep` whose /proc/PID/net/… are that namespace's counters."""

    def __init__(self, args):
        self.args = args
        self.made = False
        self.loopback = args.loopback
        self.anchors = {}
        self.note = ""
        self.srv_sysctls = "?"
        self.tun = args.wire == "tun"
        self.relay = None
        self.dev_srv, self.dev_cli = (TUN_SRV, TUN_CLI) if self.tun else (VETH_SRV, VETH_CLI)
        # Bytes a packet carries on the device beyond its UDP payload: IP
        # and UDP, and Ethernet's on a veth.
        self.hdr = 28 if self.tun else 42

    def leftovers(self):
        for ns in (NS_SRV, NS_CLI):
            if ns in sh("ip", "netns", "list", check=False).stdout.split():
                for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (ProcessLookupError, ValueError):
                        pass
                sh("ip", "netns", "del", ns, check=False)

    def setup(self):
        if not self.loopback:
            try:
                self.leftovers()
                self.made = True
                sh("ip", "netns", "add", NS_SRV)
                sh("ip", "netns", "add", NS_CLI)
                if self.tun:
                    self.start_relay()
                else:
                    sh("ip", "link", "add", VETH_SRV, "netns", NS_SRV, "type", "veth", "peer", "name", VETH_CLI,
                       "netns", NS_CLI)
                for ns, dev, addr, cpus in ((NS_SRV, self.dev_srv, SRV_ADDR, self.args.server_cpu),
                                            (NS_CLI, self.dev_cli, CLI_ADDR, self.args.client_cpus)):
                    sh("ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
                    sh("ip", "-n", ns, "link", "set", dev, "mtu", str(MTU), "up")
                    sh("ip", "-n", ns, "link", "set", "lo", "up")
                    # veth queues a received packet on the sender's CPU;
                    # RPS moves each side's receive work onto its own CPU.
                    sh("ip", "netns", "exec", ns, "sh", "-c",
                       f"echo {cpumask(cpus)} > /sys/class/net/{dev}/queues/rx-0/rps_cpus")
                    self.anchors[ns] = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "100000"])
                self.srv_sysctls = ", ".join(
                    f"{k} = {v}" for k, v in zip(
                        ("rmem_default", "rmem_max", "wmem_default", "wmem_max"),
                        sh("ip", "netns", "exec", NS_SRV, "sysctl", "-n", "net.core.rmem_default",
                           "net.core.rmem_max", "net.core.wmem_default", "net.core.wmem_max").stdout.split()))
            except (RuntimeError, OSError) as e:
                self.teardown()
                if self.tun:
                    raise SystemExit(f"--wire tun: {e}")
                self.loopback = True
                self.note = f"Network namespaces failed ({e}); loopback instead."
        if self.loopback:
            self.anchors = {}
        self.addr = "127.0.0.1" if self.loopback else SRV_ADDR

    def start_relay(self):
        """The TUN pair and the relay between them (benches/http3/relay)."""
        a = self.args
        cmd = [a.relay, NS_SRV, TUN_SRV, NS_CLI, TUN_CLI, "--delay-ms", str(a.delay_ms),
               "--rate-mbit", str(a.link_mbit), *(["--queue-bytes", str(a.queue_bytes)] if a.queue_bytes else [])]
        self.relay = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.relay.stdout.readline().strip() != "ready":
            raise RuntimeError(f"{a.relay} did not start")
        self.relay_conf = self.relay_counters()

    def relay_counters(self):
        """The relay's counters: {'a_to_b': {...}, 'b_to_a': {...}, ...}
        (a is the server's side), and its CPU in jiffies."""
        self.relay.stdin.write("\n")
        self.relay.stdin.flush()
        c = json.loads(self.relay.stdout.readline())
        c["cpu"] = proc_cpu(self.relay.pid)
        return c

    def proc(self, side):
        """The /proc directory whose net/ is `side`'s namespace's."""
        if self.loopback:
            return "/proc/self"
        return f"/proc/{self.anchors[NS_SRV if side == 'srv' else NS_CLI].pid}"

    def srv(self, cmd):
        pin = ["taskset", "-c", self.args.server_cpu]
        return pin + cmd if self.loopback else ["ip", "netns", "exec", NS_SRV, *pin, *cmd]

    def cli(self, cmd):
        pin = ["taskset", "-c", self.args.client_cpus]
        return pin + cmd if self.loopback else ["ip", "netns", "exec", NS_CLI, *pin, *cmd]

    def counters(self):
        s, c = snmp(self.proc("srv") + "/net/snmp"), snmp(self.proc("cli") + "/net/snmp")
        dev = "lo" if self.loopback else self.dev_cli
        rx_bytes, rx_packets, _, _ = netdev(self.proc("cli") + "/net/dev", dev)
        return {"srv_udp_out": s[("Udp", "OutDatagrams")], "srv_udp_in": s[("Udp", "InDatagrams")],
                "srv_tcp_out": s[("Tcp", "OutSegs")], "srv_tcp_retrans": s[("Tcp", "RetransSegs")],
                "cli_udp_in": c[("Udp", "InDatagrams")], "cli_udp_drop": c[("Udp", "RcvbufErrors")],
                "cli_rx_bytes": rx_bytes, "cli_rx_packets": rx_packets}

    def listening(self, port, proto):
        """Whether something in the server's namespace listens on `port`."""
        want = f":{port:04X}"
        path = self.proc("srv") + ("/net/udp" if proto == "udp" else "/net/tcp")
        with open(path) as f:
            for line in f.readlines()[1:]:
                p = line.split()
                if p[1].endswith(want) and (proto == "udp" or p[3] == "0A"):
                    return True
        return False

    def rx_bytes(self):
        """Bytes the clients' device has received."""
        return netdev(self.proc("cli") + "/net/dev", "lo" if self.loopback else self.dev_cli)[0]

    def teardown(self):
        if self.relay:
            self.relay.stdin.close()
            self.relay.wait()
            self.relay = None
        for p in self.anchors.values():
            p.kill()
            p.wait()
        self.anchors = {}
        if self.made:
            self.made = False
            self.leftovers()


def cpumask(cpus):
    mask = 0
    for part in cpus.split(","):
        a, _, b = part.partition("-")
        for c in range(int(a), int(b or a) + 1):
            mask |= 1 << c
    return f"{mask:x}"


# ------------------------------------------------------------------ servers

class Server:
    def __init__(self, name, args, net, work, root):
        self.name, self.args, self.net, self.work, self.root = name, args, net, work, root
        self.kind, self.proto = name.split("-")[0], name.split("-")[1]
        self.nogso = name.endswith("-nogso")
        self.port = PORTS[self.kind]
        self.proc = None
        self.sizes = ""

    @property
    def base(self):
        return f"https://{self.net.addr}:{self.port}"

    def start(self):
        env = dict(os.environ)
        log = open(os.path.join(self.work, f"{self.name}.log"), "ab")
        if self.kind == "nikaia":
            rt = os.path.join(self.work, "runtime.toml")
            with open(rt, "w") as f:
                f.write(f'listen = "{self.net.addr}:{self.port}"\nworkers = {self.args.workers}\naccess-log = "off"\n'
                        f'tls-cert = "{self.work}/cert.pem"\ntls-key = "{self.work}/key.pem"\n'
                        'http3 = true\nhttp2-max-requests = 1000000\n'
                        f'stats-socket = "{self.work}/stats.sock"\n'
                        + ('http3-gso = false\n' if self.nogso else ''))
            cmd = [self.args.nikaia, "serve", self.root, "--runtime", rt]
        elif self.kind == "caddy":
            conf = os.path.join(self.work, "Caddyfile")
            with open(conf, "w") as f:
                f.write(CADDYFILE.format(work=self.work, addr=self.net.addr, port=self.port, root=self.root))
            env.update(GOMAXPROCS=str(self.args.workers), HOME=self.work, XDG_DATA_HOME=self.work, XDG_CONFIG_HOME=self.work)
            cmd = ["caddy", "run", "--config", conf, "--adapter", "caddyfile"]
        elif self.kind == "nginx":
            conf = os.path.join(self.work, "nginx.conf")
            os.makedirs(os.path.join(self.work, "nginx-tmp"), exist_ok=True)
            with open(conf, "w") as f:
                f.write(NGINX_CONF.format(work=self.work, addr=self.net.addr, port=self.port, root=self.root,
                                          workers=self.args.workers))
            cmd = [shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-p", self.work]
        else:
            cmd = ["gtlsserver", "-q", "--no-quic-dump", "--no-http-dump", "-d", self.root,
                   f"--max-udp-payload-size={MAX_UDP_PAYLOAD}",
                   *(["--max-gso-dgrams=1"] if self.nogso else []),
                   self.net.addr, str(self.port), f"{self.work}/key.pem", f"{self.work}/cert.pem"]
        # `ip netns exec` and taskset exec the server: the pid is the server's.
        self.proc = subprocess.Popen(self.net.srv(cmd), stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.name} exited at start: see {self.work}/{self.name}.log")
            tcp = self.kind == "gtls" or self.net.listening(self.port, "tcp")
            udp = self.proto == "h2" or self.net.listening(self.port, "udp")
            if tcp and udp:
                break
            time.sleep(0.05)
        else:
            raise SystemExit(f"{self.name} did not start: see {self.work}/{self.name}.log")
        self.pid = self.proc.pid
        time.sleep(0.2)

    def h3_counters(self):
        """nikaia's `explain --json` "h3" counters (datagrams, handed, …)."""
        if self.kind != "nikaia":
            return None
        r = subprocess.run([self.args.nikaia, "explain", "--socket", f"{self.work}/stats.sock", "--json"],
                           capture_output=True, text=True)
        try:
            return json.loads(r.stdout).get("h3")
        except ValueError:
            return None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


# ------------------------------------------------------------------ clients

def gtlsclient_cmd(net, server, n, uris, download=None):
    return net.cli(["gtlsclient", "-q", "--no-quic-dump", "--no-http-dump", "--exit-on-all-streams-close",
                    "--timeout=10s", *([f"--download={download}"] if download else []),
                    "-n", str(n), net.addr, str(server.port), *uris])


def client_env(server):
    """gtlsclient's environment: the receive-buffer shim."""
    if not server.args.client_rcvbuf:
        return None
    return dict(os.environ, LD_PRELOAD=os.path.join(server.work, "rcvbuf.so"),
                NKH3_RCVBUF=str(server.args.client_rcvbuf))


def run_clients(cmds, timeout, env=None):
    """Runs the commands at once: (failed count, client CPU µs, outputs)."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env) for c in cmds]
    timer = threading.Timer(timeout, lambda: [p.kill() for p in procs if p.returncode is None])
    timer.start()
    failed, cpu_us, outs = 0, 0.0, []
    try:
        for p in procs:
            out = p.stdout.read().decode(errors="replace")
            p.stdout.close()
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            outs.append(out)
            cpu_us += (ru.ru_utime + ru.ru_stime) * 1e6
            failed += p.returncode != 0
    finally:
        timer.cancel()
    return failed, cpu_us, outs


def h2load_done(out, want):
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, want)


def batch(server, load, args, net):
    """One batch of the load: (requests succeeded, failed, client CPU µs)."""
    base = server.base
    if load == "bulk":
        uri, n, conns, size = f"{base}/100m.bin", args.bulk_streams, args.bulk_clients, BULK_SIZE
        uris, streams = [uri], args.bulk_streams
    else:
        uris = [f"{base}/4k/{i}.bin" for i in range(SMALL_FILES)]
        n, conns, size, streams = args.small_requests, args.small_clients, SMALL_SIZE, STREAMS
    if server.proto == "h3":
        cmds = []
        for c in range(conns):
            rot = (c * 7) % len(uris)
            cmds.append(gtlsclient_cmd(net, server, n, uris[rot:] + uris[:rot]))
        failed, cpu_us, _ = run_clients(cmds, timeout=120, env=client_env(server))
        return (conns - failed) * n, failed * n, cpu_us, size
    cmd = net.cli(["h2load", "-c", str(conns), "-m", str(min(streams, n)), "-n", str(conns * n), *uris])
    failed, cpu_us, outs = run_clients([cmd], timeout=120)
    ok, bad = h2load_done(outs[0], conns * n)
    return ok, bad, cpu_us, size


def measure_stream(server, args, net):
    """One download of the stream file on one connection, one stream: its
    rates, the CPU it took and the relay's counters."""
    uri = f"{server.base}/{STREAM_FILE}"
    size = args.stream_mib << 20
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((time.time(), net.rx_bytes()))
            time.sleep(0.005)

    if server.proto == "h3":
        cmd, env = gtlsclient_cmd(net, server, 1, [uri]), client_env(server)
    else:
        cmd, env = net.cli(["curl", "-sk", "--http2", "-o", "/dev/null", "-w", "%{http_version} %{size_download}",
                            uri]), None
    rel0 = net.relay_counters() if net.relay else None
    c0, m0, p0 = net.counters(), cpu_lines(), proc_cpu(server.pid)
    th = threading.Thread(target=sample)
    th.start()
    t0 = time.time()
    failed, cli_us, outs = run_clients([cmd], timeout=300, env=env)
    t1 = time.time()
    time.sleep(0.05)
    stop.set()
    th.join()
    p1, m1, c1 = proc_cpu(server.pid), cpu_lines(), net.counters()
    rel1 = net.relay_counters() if net.relay else None
    wall = t1 - t0
    d = {k: c1[k] - c0[k] for k in c0}
    tick_us = 1e6 / CLK_TCK
    srv_us = (p1 - p0) * tick_us
    mach_us = (m1["cpu"] - m0["cpu"]) * tick_us
    core_us = srv_us + sum(m1[f"cpu{c}_irq"] - m0[f"cpu{c}_irq"] for c in cpu_list(args.server_cpu)) * tick_us
    irq_all_us = (m1["cpu_irq"] - m0["cpu_irq"]) * tick_us
    relay_us = (rel1["cpu"] - rel0["cpu"]) * tick_us if rel0 else 0.0
    if server.proto == "h2":
        got = outs[0].split()
        ok = not failed and got == ["2", str(size)]
    else:
        udp_payload = max(d["cli_rx_bytes"] - net.hdr * d["cli_rx_packets"], 0)
        ok = not failed and (net.loopback or udp_payload >= 0.99 * size)
    r = {"requests": int(ok), "failed": int(not ok), "wall_s": wall, "body_bytes": size if ok else 0,
         "server_us": srv_us, "client_us": cli_us, "machine_us": mach_us, "core_us": core_us, "relay_us": relay_us,
         "others_pct": max(mach_us - srv_us - cli_us - irq_all_us - relay_us, 0) / wall / 1e4,
         "irq_pct": irq_all_us / wall / 1e4, "relay_pct": relay_us / wall / 1e4,
         "server_busy_pct": srv_us / wall / 1e4, "client_busy_pct": cli_us / wall / 1e4,
         "counters": d, "bytes_ok": ok, "whole_mb_s": size / 1e6 / wall,
         "tcp_retrans": d["srv_tcp_retrans"] if server.proto == "h2" else None}
    # The settled rate: the body from 25 % to 98 % of the download's bytes on
    # the wire, over the time between (linear between 5 ms samples).
    base, total = samples[0][1], samples[-1][1] - samples[0][1]

    def when(frac):
        want = base + frac * total
        for (ta, a), (tb, b) in zip(samples, samples[1:]):
            if b >= want:
                return ta + (tb - ta) * ((want - a) / (b - a) if b > a else 1)
        return samples[-1][0]

    t25, t98 = when(0.25), when(0.98)
    r["settled_mb_s"] = 0.73 * size / 1e6 / (t98 - t25) if ok and t98 > t25 else None
    r["first_quarter_s"] = t25 - t0
    if rel0:
        for side, name in (("a_to_b", "down"), ("b_to_a", "up")):
            a, b = rel0[side], rel1[side]
            r[f"relay_{name}"] = {
                "packets": b["packets"] - a["packets"], "dropped": b["dropped"] - a["dropped"],
                "late_over_1ms": b["late_over_1ms"] - a["late_over_1ms"], "max_late_us": b["max_late_us"],
                "mean_late_us": (b["late_us_sum"] - a["late_us_sum"]) / max(b["packets"] - a["packets"], 1),
                "max_queue_bytes": b["max_queue_bytes"]}
    gib = size / (1 << 30)
    for k in ("server", "client", "machine", "core"):
        r[f"{k}_s_per_gib"] = r[f"{k}_us"] / 1e6 / gib if ok else None
    return r


def warm_up(server, args, net):
    """One connection's 200 small requests before a measured run."""
    warm = argparse.Namespace(**{**vars(args), "small_clients": 1, "small_requests": 200})
    batch(server, "small", warm, net)


def measure(server, load, args, net, seconds):
    """Batches of `load` until `seconds` have passed, with the counters."""
    c0, m0, p0, t0 = net.counters(), cpu_lines(), proc_cpu(server.pid), time.time()
    ok = bad = 0
    cli_us = 0.0
    size = 0
    while True:
        o, b, cu, size = batch(server, load, args, net)
        ok, bad, cli_us = ok + o, bad + b, cli_us + cu
        if time.time() - t0 >= seconds or bad:
            break
    t1, p1, m1, c1 = time.time(), proc_cpu(server.pid), cpu_lines(), net.counters()
    wall = t1 - t0
    d = {k: c1[k] - c0[k] for k in c0}
    tick_us = 1e6 / CLK_TCK
    srv_us = (p1 - p0) * tick_us
    mach_us = (m1["cpu"] - m0["cpu"]) * tick_us
    # The server's process and the interrupt work on its CPU (receiving
    # the clients' packets there, RPS): not the other processes there.
    core_us = srv_us + sum(m1[f"cpu{c}_irq"] - m0[f"cpu{c}_irq"] for c in cpu_list(args.server_cpu)) * tick_us
    irq_all_us = (m1["cpu_irq"] - m0["cpu_irq"]) * tick_us
    body = ok * size
    udp_payload = max(d["cli_rx_bytes"] - net.hdr * d["cli_rx_packets"], 0)
    datagrams = d["cli_udp_in"] + d["cli_udp_drop"]
    r = {"requests": ok, "failed": bad, "wall_s": wall, "body_bytes": body,
         "server_us": srv_us, "client_us": cli_us, "machine_us": mach_us, "core_us": core_us,
         # Other processes: what is left past ours and all interrupt work.
         "others_pct": max(mach_us - srv_us - cli_us - irq_all_us, 0) / wall / 1e4,
         "irq_pct": irq_all_us / wall / 1e4,
         "server_busy_pct": srv_us / wall / 1e4, "client_busy_pct": cli_us / wall / 1e4,
         "counters": d}
    if server.proto == "h3":
        r["datagrams"] = datagrams
        r["dropped"] = d["cli_udp_drop"]
        r["sends"] = d["srv_udp_out"]
        r["acks_in"] = d["srv_udp_in"]
        r["avg_payload"] = udp_payload / datagrams if datagrams else None
        r["per_send"] = datagrams / d["srv_udp_out"] if d["srv_udp_out"] else None
        # With the veth's counters the payload is known; it must hold the bodies.
        r["bytes_ok"] = net.loopback or udp_payload >= 0.99 * body
    else:
        r["segments"] = d["srv_tcp_out"]
        r["bytes_ok"] = True
    if load == "bulk":
        gib = body / (1 << 30) if body else None
        for k in ("server", "client", "machine", "core"):
            r[f"{k}_s_per_gib"] = r[f"{k}_us"] / 1e6 / gib if gib else None
        r["mib_s"] = body / (1 << 20) / wall
    else:
        for k in ("server", "client", "machine", "core"):
            r[f"{k}_us_per_req"] = r[f"{k}_us"] / ok if ok else None
        r["req_s"] = ok / wall
    return r


# ------------------------------------------------------------------ checks

def check_answers(server, net, work, root):
    """Fetches the 100 MiB file and one 4 KiB file once and compares bytes;
    notes the server's UDP socket buffers (ss -uam)."""
    got = os.path.join(work, f"got-{server.name}")
    shutil.rmtree(got, ignore_errors=True)
    os.makedirs(got)
    names = ([("100m.bin", "100m.bin")] if "bulk" in server.args.loads else []) + \
        ([(STREAM_FILE, STREAM_FILE)] if "stream" in server.args.loads else []) + [("4k/5.bin", "5.bin")]
    sizes = None
    for path, leaf in names:
        cap = None
        if server.proto == "h3" and not net.loopback and not net.tun and path == "100m.bin":
            sizes = os.path.join(work, f"sizes-{server.name}.json")
            cap = subprocess.Popen(net.cli([sys.executable, os.path.abspath(__file__), "--capture", VETH_CLI,
                                            str(server.port), sizes]))
            time.sleep(0.5)
        if server.proto == "h3":
            cmd = gtlsclient_cmd(net, server, 1, [f"{server.base}/{path}"], download=got)
        else:
            cmd = net.cli(["curl", "-sk", "--http2", "-o", os.path.join(got, leaf), "-w", "%{http_version}",
                           f"{server.base}/{path}"])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           env=client_env(server) if server.proto == "h3" else None)
        if cap:
            cap.terminate()
            cap.wait()
        if server.proto == "h2" and r.stdout.strip() != "2":
            return f"curl said HTTP/{r.stdout.strip()}"
    for path, leaf in names:
        a, b = os.path.join(root, path), os.path.join(got, leaf)
        if not os.path.exists(b) or subprocess.run(["cmp", "-s", a, b]).returncode != 0:
            return f"{path} differs"
    shutil.rmtree(got, ignore_errors=True)
    if sizes and os.path.exists(sizes):
        with open(sizes) as f:
            server.sizes = size_line(json.load(f))
    return "identical"


def udp_buffers(server, net):
    if server.proto != "h3":
        return ""
    cmd = ["ss", "-uamnH", "src", f"{net.addr}:{server.port}"]
    out = subprocess.run(cmd if net.loopback else ["ip", "netns", "exec", NS_SRV, *cmd],
                         capture_output=True, text=True).stdout
    m = re.search(r"skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)", out)
    return f"rb {int(m.group(1)) >> 10} KiB, tb {int(m.group(2)) >> 10} KiB" if m else "?"


def capture(dev, port, out):
    """Run inside the clients' namespace (bench.py --capture DEV PORT OUT)
    until SIGTERM: the UDP payload size of every datagram from `port` seen
    arriving on `dev`, written to OUT as {size: count}. A GSO batch arrives
    whole on a veth; its virtio-net header gives the segment size, so the
    batch is counted as the datagrams it stands for."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    sock.setsockopt(263, 15, 1)   # SOL_PACKET, PACKET_VNET_HDR
    sock.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)   # SO_RCVBUFFORCE: Python is slow, the server fast
    sock.bind((dev, 0))
    sock.settimeout(0.2)
    sizes = {}
    while not stop:
        try:
            data, addr = sock.recvfrom(1 << 17)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if addr[2] == 4:          # PACKET_OUTGOING: the client's own
            continue
        gso_type, gso_size = data[1], int.from_bytes(data[4:6], "little")
        ip = data[10 + 14:]       # past the virtio-net header and the Ethernet one
        ihl = (ip[0] & 15) * 4
        if ip[9] != 17 or int.from_bytes(ip[ihl:ihl + 2], "big") != port:
            continue
        payload = len(ip) - ihl - 8
        if gso_type and gso_size:
            full, last = divmod(payload, gso_size)
            sizes[gso_size] = sizes.get(gso_size, 0) + full
            if last:
                sizes[last] = sizes.get(last, 0) + 1
        else:
            sizes[payload] = sizes.get(payload, 0) + 1
    with open(out, "w") as f:
        json.dump(sizes, f)


def size_line(sizes):
    """'1452 B 99.1%, 1200 B 0.5%, …; largest 1452 B' from {size: count}."""
    total = sum(sizes.values())
    if not total:
        return "–"
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
    head = ", ".join(f"{int(k)} B {100 * v / total:.1f}%" for k, v in top)
    return f"{head}; largest {max(int(k) for k in sizes)} B ({total} datagrams)"


# ------------------------------------------------------------------ the run

def fixture(root, args):
    os.makedirs(os.path.join(root, "4k"), exist_ok=True)
    if "bulk" in args.loads:
        with open(os.path.join(root, "100m.bin"), "wb") as f:
            f.write(os.urandom(BULK_SIZE))
    if "stream" in args.loads:
        with open(os.path.join(root, STREAM_FILE), "wb") as f:
            f.write(os.urandom(args.stream_mib << 20))
    for i in range(SMALL_FILES):
        with open(os.path.join(root, "4k", f"{i}.bin"), "wb") as f:
            f.write(os.urandom(SMALL_SIZE))
    time.sleep(1.1)  # older than nikaia's kept table's one-tick rule


def material(work):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", os.path.join(work, "key.pem"), "-out", os.path.join(work, "cert.pem"),
                    "-days", "7", "-subj", "/CN=localhost",
                    "-addext", f"subjectAltName=IP:127.0.0.1,IP:{SRV_ADDR},DNS:localhost"],
                   check=True, capture_output=True)
    src = os.path.join(work, "rcvbuf.c")
    with open(src, "w") as f:
        f.write(RCVBUF_C)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", os.path.join(work, "rcvbuf.so"), src, "-ldl"],
                   check=True)


def wait_quiet(limit_pct, max_wait):
    deadline = time.time() + max_wait
    while True:
        m0 = cpu_lines()["cpu"]
        time.sleep(1)
        busy = (cpu_lines()["cpu"] - m0) * 100 / CLK_TCK
        if busy < limit_pct or time.time() > deadline:
            return busy


def versions(args):
    def first(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
            return ((r.stdout or r.stderr).strip().splitlines() or ["?"])[0]
        except OSError:
            return "?"

    def deb(pkg):
        return first(["dpkg-query", "-W", "-f", "${Version}", pkg])

    st = os.stat(args.nikaia)
    h = subprocess.run(["sha256sum", args.nikaia], capture_output=True, text=True).stdout.split()[0][:16]
    commit = subprocess.run(["git", "-C", HERE, "log", "-1", "--format=%h %s"], capture_output=True,
                            text=True).stdout.strip()
    lock = open(os.path.join(HERE, "..", "..", "Cargo.lock")).read()

    def crate(name):
        m = re.search(rf'name = "{name}"\nversion = "([^"]+)"', lock)
        return m.group(1) if m else "?"

    return [
        f"nikaia: {args.nikaia} ({st.st_size} bytes, sha256 {h}…, built "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(st.st_mtime))}); tree at {commit}; "
        f"quinn-proto {crate('quinn-proto')}, quinn-udp {crate('quinn-udp')}, rustls {crate('rustls')} (aws-lc-rs)",
        f"caddy {first(['caddy', 'version'])} (Debian {deb('caddy')}; quic-go of that build), GOMAXPROCS=1",
        f"gtlsserver/gtlsclient: Debian ngtcp2-server/-client {deb('ngtcp2-server')} (GnuTLS {deb('libgnutls30')})",
        f"h2load: {first(['h2load', '--version'])} (Debian nghttp2-client {deb('nghttp2-client')}); "
        f"curl {deb('curl')}",
    ]


def run(args):
    work = tempfile.mkdtemp(prefix="nikaia-h3bench-")
    os.chmod(work, 0o755)
    root = os.path.join(work, "root")
    print(f"# work dir {work}; load average {loadavg()}", flush=True)
    fixture(root, args)
    material(work)
    net = Net(args)
    results, checks, buffers, sizes, redone = {}, {}, {}, {}, []
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = loadavg()

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        net.setup()
        if net.note:
            print(net.note, flush=True)
        for name in args.servers:
            s = Server(name, args, net, work, root)
            s.start()
            try:
                checks[name] = check_answers(s, net, work, root)
                buffers[name] = udp_buffers(s, net)
                sizes[name] = s.sizes
            finally:
                s.stop()
            print(f"check {name:16} {checks[name]}  {buffers[name]}  {sizes[name]}", flush=True)
            if checks[name] != "identical":
                raise SystemExit(f"{name}: answers differ ({checks[name]}); see {work}/{name}.log")
        for rnd in range(args.rounds):
            order = args.servers[rnd % len(args.servers):] + args.servers[:rnd % len(args.servers)]
            for load in args.loads:
                for name in order:
                    for attempt in range(args.retries + 1):
                        wait_quiet(args.max_other, args.max_wait)
                        s = Server(name, args, net, work, root)
                        s.start()
                        try:
                            if load == "stream":
                                r = measure_stream(s, args, net)
                            else:
                                warm_up(s, args, net)
                                r = measure(s, load, args, net, args.seconds)
                            if s.kind == "nikaia" and s.proto == "h3":
                                r["h3"] = s.h3_counters()
                        finally:
                            s.stop()
                        if r["others_pct"] <= args.max_other or attempt == args.retries:
                            break
                        redone.append(r["others_pct"])
                    results.setdefault((load, name), []).append(r)
                    print(progress(rnd, load, name, r), flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    finally:
        net.teardown()
    lines = report(args, net, results, checks, buffers, sizes, redone, stamp, load_before)
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{k[0]} {k[1]}": v for k, v in results.items()}, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


def progress(rnd, load, name, r):
    if load == "stream":
        dn = r.get("relay_down") or {}
        return (f"round {rnd + 1} stream {name:16} settled {r['settled_mb_s'] or 0:6.1f} MB/s  whole "
                f"{r['whole_mb_s']:6.1f} MB/s  busy srv {r['server_busy_pct']:.0f}% cli {r['client_busy_pct']:.0f}% "
                f"relay {r['relay_pct']:.0f}% others {r['others_pct']:.0f}%  relay drops {dn.get('dropped')} "
                f"late>1ms {dn.get('late_over_1ms')} mean late {dn.get('mean_late_us', 0):.0f} µs"
                + (f"  tcp retrans {r['tcp_retrans']}" if r["tcp_retrans"] is not None else "")
                + ("" if r["bytes_ok"] else "  FAILED"))
    if load == "bulk":
        head = (f"{r['mib_s']:7.1f} MiB/s  server {r['server_s_per_gib'] or 0:5.2f} s/GiB  "
                f"client {r['client_s_per_gib'] or 0:5.2f}  machine {r['machine_s_per_gib'] or 0:5.2f}")
    else:
        head = (f"{r['req_s']:7.0f} req/s  server {r['server_us_per_req'] or 0:6.1f} µs/req  "
                f"client {r['client_us_per_req'] or 0:6.1f}  machine {r['machine_us_per_req'] or 0:6.1f}")
    tail = ""
    if "datagrams" in r:
        tail = (f"  dgrams {r['datagrams']} sends {r['sends']} avg {r['avg_payload'] or 0:.0f} B "
                f"drops {r['dropped']}")
    return (f"round {rnd + 1} {load:5} {name:16} {head}  busy srv {r['server_busy_pct']:.0f}% "
            f"cli {r['client_busy_pct']:.0f}% others {r['others_pct']:.0f}%  failed {r['failed']}{tail}"
            + ("" if r["bytes_ok"] else "  BYTES SHORT"))


# ------------------------------------------------------------------ report

def paired(results, load, a, b, key):
    ra, rb = results.get((load, a)), results.get((load, b))
    if not ra or not rb:
        return None
    return [x[key] / y[key] for x, y in zip(ra, rb) if x[key] and y[key]]


def report(args, net, results, checks, buffers, sizes, redone, stamp, load_before):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    ncpu = os.cpu_count()
    L = [f"# benches/http3 — {stamp}", ""]
    L.append(f"- Machine: {ncpu} CPUs ({cpu}), Linux {os.uname().release}; load average before: {load_before}, "
             f"after: {loadavg()}.")
    L += [f"- {v}" for v in versions(args)]
    if net.loopback:
        L.append(f"- Network: loopback 127.0.0.1 (MTU 65536). {net.note} Datagram sizes are held only by each "
                 f"server's cap (quinn-proto and quic-go stop MTU discovery at 1452; gtlsserver "
                 f"--max-udp-payload-size {MAX_UDP_PAYLOAD}); counters are the whole machine's.")
    elif net.tun:
        q = net.relay_conf["queue_bytes"] if hasattr(net, "relay_conf") else args.queue_bytes
        L.append(f"- Network: namespaces `{NS_SRV}` ({SRV_ADDR}, TUN {TUN_SRV}) and `{NS_CLI}` ({CLI_ADDR}, TUN "
                 f"{TUN_CLI}), MTU {MTU}, joined by benches/http3/relay (`tun-relay`): each way a link of "
                 f"{args.link_mbit:g} Mbit/s with a drop-tail queue of {q} bytes, then {args.delay_ms:g} ms of "
                 f"delay, so a round trip of {2 * args.delay_ms:g} ms; every IP packet alike (TCP segments and UDP "
                 f"datagrams of at most 1500 bytes: a TUN device without offloads gets them cut). The relay is "
                 f"not pinned; its CPU and counters are in the stream table. The server's namespace keeps the "
                 f"kernel's socket-buffer limits (net.core: {net.srv_sysctls}).")
    else:
        L.append(f"- Network: namespaces `{NS_SRV}` ({SRV_ADDR}, {VETH_SRV}) and `{NS_CLI}` ({CLI_ADDR}, "
                 f"{VETH_CLI}) joined by a veth pair, MTU {MTU} (UDP payload ≤ 1472); RPS steers each side's "
                 f"receive work to its own CPU; no qdisc, no delay, no loss added. The server's namespace keeps "
                 f"the kernel's socket-buffer limits (net.core: {net.srv_sysctls}).")
    L.append(f"- Workers: {args.workers} (nikaia's `workers`, Caddy's GOMAXPROCS, nginx's worker_processes; "
             f"gtlsserver has one thread).")
    L.append(f"- Server under `taskset -c {args.server_cpu}`, clients under `taskset -c {args.client_cpus}`; "
             f"{args.rounds} rounds, each load batched until {args.seconds} s have passed after a warm-up "
             f"(one connection, 200 small requests), a fresh server per run, servers rotated round by round; median (min–max) over rounds.")
    L.append(f"- gtlsclient's UDP socket gets a receive buffer of {args.client_rcvbuf >> 10} KiB "
             f"(SO_RCVBUFFORCE from an LD_PRELOAD shim; gtlsclient asks for none, browsers and quic-go's client "
             f"ask for megabytes; 0 leaves the kernel's default)." if args.client_rcvbuf else
             "- gtlsclient's UDP sockets keep the kernel's default receive buffer.")
    if "stream" in args.loads:
        L.append(f"- stream: one download of a {args.stream_mib} MiB file per run, one connection and one stream "
                 f"(gtlsclient -n 1 with its defaults: stream window 6 MiB growing to 16, connection 15 growing "
                 f"to 24, cubic; curl --http2), no warm-up.")
    L.append(f"- bulk: {args.bulk_clients} connections × {args.bulk_streams} streams of the 100 MiB file per "
             f"batch; small: {args.small_clients} connections × {args.small_requests} requests of 64 files of "
             f"4 KiB per batch (gtlsclient opens as many streams as the server allows; h2load -m {STREAMS}).")
    L.append("")
    L.append("Checks (once per server, before measuring: the 100 MiB file and a 4 KiB file fetched and compared "
             "byte for byte; gtlsclient for h3, curl --http2 for h2), the server's UDP socket buffers "
             "(`ss -uam`), and the UDP payload size of each datagram the server sent during the 100 MiB check "
             "download (a packet socket on the clients' veth end; a GSO batch counted as the datagrams its "
             "segment size makes):")
    L.append("")
    L.append("| server | answers | UDP socket buffers | datagram sizes (100 MiB download) |")
    L.append("|---|---|---|---|")
    for name in args.servers:
        L.append(f"| {name} | {checks.get(name, '–')} | {buffers.get(name) or '–'} | {sizes.get(name) or '–'} |")
    L.append("")
    if "bulk" in args.loads:
        L.append("### Bulk: the 100 MiB file, CPU seconds per GiB of body")
        L.append("")
        L.append("| server | MiB/s | server s/GiB | server+irq s/GiB | client s/GiB | machine s/GiB | "
                 "server busy % | datagrams (k/GiB) | datagrams per sendmsg | avg UDP payload B | "
                 "client drops/GiB |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for name in args.servers:
            rs = results.get(("bulk", name))
            if not rs:
                continue
            gibs = [r["body_bytes"] / (1 << 30) for r in rs]
            if "datagrams" in rs[0]:
                dg = spread([r["datagrams"] / 1e3 / g for r, g in zip(rs, gibs)], "{:.0f}")
                ps = spread([r["per_send"] for r in rs], "{:.1f}")
                av = spread([r["avg_payload"] for r in rs], "{:.0f}")
                dr = spread([r["dropped"] / g for r, g in zip(rs, gibs)], "{:.0f}")
            else:
                dg = "TCP segments: " + spread([r["segments"] / 1e3 / g for r, g in zip(rs, gibs)], "{:.0f}")
                ps = av = dr = "–"
            L.append(f"| {name} | {spread([r['mib_s'] for r in rs], '{:.0f}')} | "
                     f"{spread([r['server_s_per_gib'] for r in rs])} | {spread([r['core_s_per_gib'] for r in rs])} | "
                     f"{spread([r['client_s_per_gib'] for r in rs])} | {spread([r['machine_s_per_gib'] for r in rs])} | "
                     f"{spread([r['server_busy_pct'] for r in rs], '{:.0f}')} | {dg} | {ps} | {av} | {dr} |")
        L.append("")
    if "stream" in args.loads:
        link = args.link_mbit / 8
        L.append(f"### Stream: one {args.stream_mib} MiB download at {2 * args.delay_ms:g} ms RTT, "
                 f"{args.link_mbit:g} Mbit/s ({link:.1f} MB/s of IP packets)")
        L.append("")
        L.append("Settled: the body from 25 % to 98 % of the download over the time it took; whole: the body over "
                 "the client's wall time (connection, handshake and slow start included). MB = 10⁶ bytes. "
                 "Relay: its CPU, the server→client packets its queue dropped, those it wrote more than 1 ms "
                 "late, and the mean lateness of all.")
        L.append("")
        L.append("| server | settled MB/s | whole MB/s | settled / link | server s/GiB | client s/GiB | "
                 "relay CPU % | relay drops | TCP retransmits | relay late > 1 ms | relay mean late µs |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for name in args.servers:
            rs = results.get(("stream", name))
            if not rs:
                continue
            dn = [r.get("relay_down") or {} for r in rs]
            L.append(f"| {name} | {spread([r['settled_mb_s'] for r in rs])} | {spread([r['whole_mb_s'] for r in rs])} | "
                     f"{spread([r['settled_mb_s'] / link if r['settled_mb_s'] else None for r in rs])} | "
                     f"{spread([r['server_s_per_gib'] for r in rs])} | {spread([r['client_s_per_gib'] for r in rs])} | "
                     f"{spread([r['relay_pct'] for r in rs], '{:.0f}')} | "
                     f"{spread([d.get('dropped') for d in dn], '{:.0f}')} | "
                     f"{spread([r['tcp_retrans'] for r in rs], '{:.0f}') if rs[0]['tcp_retrans'] is not None else '–'} | "
                     f"{spread([d.get('late_over_1ms') for d in dn], '{:.0f}')} | "
                     f"{spread([d.get('mean_late_us') for d in dn], '{:.0f}')} |")
        L.append("")
    if "small" in args.loads:
        L.append("### Small: 4 KiB files, CPU µs per request")
        L.append("")
        L.append("| server | requests/s | server µs/req | server+irq µs/req | client µs/req | machine µs/req | "
                 "server busy % | client busy % | datagrams per request | datagrams per sendmsg | "
                 "avg UDP payload B |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for name in args.servers:
            rs = results.get(("small", name))
            if not rs:
                continue
            if "datagrams" in rs[0]:
                dq = spread([r["datagrams"] / r["requests"] for r in rs if r["requests"]])
                ps = spread([r["per_send"] for r in rs], "{:.1f}")
                av = spread([r["avg_payload"] for r in rs], "{:.0f}")
            else:
                dq = "TCP segments: " + spread([r["segments"] / r["requests"] for r in rs if r["requests"]])
                ps = av = "–"
            L.append(f"| {name} | {spread([r['req_s'] for r in rs], '{:.0f}')} | "
                     f"{spread([r['server_us_per_req'] for r in rs], '{:.1f}')} | "
                     f"{spread([r['core_us_per_req'] for r in rs], '{:.1f}')} | "
                     f"{spread([r['client_us_per_req'] for r in rs], '{:.1f}')} | "
                     f"{spread([r['machine_us_per_req'] for r in rs], '{:.1f}')} | "
                     f"{spread([r['server_busy_pct'] for r in rs], '{:.0f}')} | "
                     f"{spread([r['client_busy_pct'] for r in rs], '{:.0f}')} | {dq} | {ps} | {av} |")
        L.append("")
    L.append("### Ratios, per round then median (min–max); CPU below 1 favours the first; rate is MiB/s (bulk), "
             "requests/s (small), the settled rate (stream)")
    L.append("")
    L.append("| load | pair | server CPU | server+irq CPU | machine CPU | rate |")
    L.append("|---|---|---|---|---|---|")
    pairs = [("nikaia-h3", "nikaia-h2"), ("nikaia-h3", "caddy-h3"), ("nikaia-h3", "gtls-h3"),
             ("nikaia-h3-nogso", "nikaia-h3"), ("gtls-h3-nogso", "gtls-h3"), ("caddy-h3", "caddy-h2"),
             ("nikaia-h2", "caddy-h2"), ("nikaia-h2", "nginx-h2"), ("caddy-h3", "nikaia-h2")]
    for load in args.loads:
        unit = "us_per_req" if load == "small" else "s_per_gib"
        rate = {"bulk": "mib_s", "small": "req_s", "stream": "settled_mb_s"}[load]
        for a, b in pairs:
            xs = paired(results, load, a, b, f"server_{unit}")
            if xs is None:
                continue
            L.append(f"| {load} | {a} / {b} | {spread(xs)} | {spread(paired(results, load, a, b, f'core_{unit}'))} | "
                     f"{spread(paired(results, load, a, b, f'machine_{unit}'))} | "
                     f"{spread(paired(results, load, a, b, rate))} |")
    L.append("")
    handed = [(k, r["h3"]) for k, rs in results.items() for r in rs if r.get("h3")]
    if handed and args.workers > 1:
        L.append(f"nikaia-h3's datagrams handed from the worker that read them to the worker owning their "
                 f"connection (`nikaia explain`: h3.handed / h3.datagrams, per run, a bulk or small run's warm-up included), "
                 f"{args.workers} workers:")
        L.append("")
        for load in args.loads:
            xs = [h["handed"] / h["datagrams"] * 100 for k, h in handed if k[0] == load and h.get("datagrams")]
            lost = sum(h.get("handed_lost", 0) for k, h in handed if k[0] == load)
            if xs:
                L.append(f"- {load}: {spread(xs, '{:.1f}')} % handed, {lost} lost.")
        L.append("")
    L += targets(results)
    others = [r["others_pct"] for rs in results.values() for r in rs]
    fails = sum(r["failed"] for rs in results.values() for r in rs)
    short = [f"{k[0]} {k[1]}" for k, rs in results.items() for r in rs if not r["bytes_ok"]]
    irqs = [r["irq_pct"] for rs in results.values() for r in rs]
    L.append(f"Interrupt work (irq + softirq on both CPUs, inside machine CPU), % of a core: "
             f"{spread(irqs, '{:.0f}')}. Others (machine CPU beyond the server, the clients and interrupt work: "
             f"other processes on this shared machine), % of a core: {spread(others, '{:.0f}')}. A run is redone (up to {args.retries} times, after waiting for a "
             f"second under {args.max_other}% busy) when others exceed {args.max_other}%: "
             f"{len(redone)} redone. Failed requests: {fails}."
             + (f" Runs whose received UDP payload fell short of the bodies: {', '.join(short)}." if short else ""))
    return L


def targets(results):
    L = []
    one = paired(results, "stream", "nikaia-h3", "nikaia-h2", "settled_mb_s")
    if one:
        whole = paired(results, "stream", "nikaia-h3", "nikaia-h2", "whole_mb_s")
        a = med([r["settled_mb_s"] for r in results[("stream", "nikaia-h3")]])
        b = med([r["settled_mb_s"] for r in results[("stream", "nikaia-h2")]])
        L += ["### Target (#48)", "",
              f"- One stream over h3 ≥ 90 % of one HTTP/2 stream's rate: **{'met' if med(one) >= 0.9 else 'not met'}**"
              f" — settled {a:.1f} MB/s over h3 against {b:.1f} MB/s over h2, ratio {spread(one)} (per-round "
              f"pairs); whole downloads {spread(whole)}.", ""]
    if not any(k[0] == "bulk" for k in results):
        return L
    L += ["### Targets (#47)", ""]
    h3h2 = paired(results, "bulk", "nikaia-h3", "nikaia-h2", "server_s_per_gib")
    h3c = paired(results, "bulk", "nikaia-h3", "caddy-h3", "server_s_per_gib")
    if h3h2:
        m = med(h3h2)
        a, b = med([r["server_s_per_gib"] for r in results[("bulk", "nikaia-h3")]]), \
            med([r["server_s_per_gib"] for r in results[("bulk", "nikaia-h2")]])
        L.append(f"- CPU per GiB over h3 ≤ 1.5× our HTTP/2+TLS: **{'met' if m <= 1.5 else 'not met'}** — "
                 f"server CPU {a:.2f} s/GiB over h3 against {b:.2f} s/GiB over h2, ratio {spread(h3h2)} "
                 f"(per-round pairs).")
    if h3c:
        m = med(h3c)
        a, c = med([r["server_s_per_gib"] for r in results[("bulk", "nikaia-h3")]]), \
            med([r["server_s_per_gib"] for r in results[("bulk", "caddy-h3")]])
        L.append(f"- CPU per GiB over h3 below Caddy's: **{'met' if m < 1 else 'not met'}** — "
                 f"{a:.2f} s/GiB against Caddy's {c:.2f}, ratio {spread(h3c)}.")
    gso = paired(results, "bulk", "nikaia-h3-nogso", "nikaia-h3", "server_s_per_gib")
    if gso:
        L.append(f"- GSO on by default, measured off too: server CPU per GiB with GSO off / on = {spread(gso)}.")
    L.append("")
    return L


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--capture":
        return capture(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nikaia", default="target/release/nikaia")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--servers", default=",".join(ALL_SERVERS))
    ap.add_argument("--loads", default="bulk,small", help="bulk, small, stream")
    ap.add_argument("--bulk-clients", type=int, default=2)
    ap.add_argument("--bulk-streams", type=int, default=1)
    ap.add_argument("--small-clients", type=int, default=8)
    ap.add_argument("--small-requests", type=int, default=1000)
    ap.add_argument("--server-cpu", help="CPUs for the server: 1, or all of them with --workers > 1")
    ap.add_argument("--client-cpus", help="CPUs for the clients: 0, or all of them with --workers > 1")
    ap.add_argument("--workers", type=int, default=1,
                    help="nikaia's workers, Caddy's GOMAXPROCS, nginx's worker_processes")
    ap.add_argument("--wire", choices=("veth", "tun"), default="veth",
                    help="veth: no delay; tun: TUN devices and the relay (--delay-ms, --link-mbit)")
    ap.add_argument("--relay", default="target/release/tun-relay", help="the relay's binary (run.sh builds it)")
    ap.add_argument("--delay-ms", type=float, default=10, help="one way, so the round trip is twice")
    ap.add_argument("--link-mbit", type=float, default=200, help="the relay's link rate each way")
    ap.add_argument("--queue-bytes", type=int, default=0,
                    help="the relay's drop-tail queue (0: rate × round trip)")
    ap.add_argument("--stream-mib", type=int, default=64, help="the stream load's file")
    ap.add_argument("--loopback", action="store_true")
    ap.add_argument("--client-rcvbuf", type=int, default=4 << 20,
                    help="gtlsclient's UDP receive buffer, bytes (0: the kernel's default)")
    ap.add_argument("--max-other", type=float, default=40, help="%% of a core; above it a run is redone")
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--max-wait", type=float, default=60, help="seconds to wait for a quiet machine")
    ap.add_argument("--quick", action="store_true", help="1 round of 2 s")
    ap.add_argument("--out")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.seconds = 1, 2
    args.nikaia = os.path.abspath(args.nikaia)
    args.relay = os.path.abspath(args.relay)
    every = f"0-{os.cpu_count() - 1}"
    args.server_cpu = args.server_cpu or (every if args.workers > 1 else "1")
    args.client_cpus = args.client_cpus or (every if args.workers > 1 else "0")
    args.servers = [s for s in args.servers.split(",") if s]
    args.loads = [s for s in args.loads.split(",") if s]
    for s in args.loads:
        if s not in ("bulk", "small", "stream"):
            raise SystemExit(f"--loads: {s} is not one of bulk, small, stream")
    if args.wire == "tun" and not os.access(args.relay, os.X_OK):
        raise SystemExit(f"--wire tun: no relay at {args.relay} (benches/http3/run.sh builds it)")
    for s in args.servers:
        if s not in ALL_SERVERS:
            raise SystemExit(f"--servers: {s} is not one of {', '.join(ALL_SERVERS)}")
    if os.geteuid() != 0 and not args.loopback:
        raise SystemExit("needs root for the namespaces (or --loopback)")
    for tool in ("gtlsclient", "h2load", "curl", "gcc", "openssl", "taskset"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} not found (benches/http3/run.sh installs what is missing)")
    run(args)


if __name__ == "__main__":
    main()
