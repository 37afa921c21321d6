'use strict';
// The wasm32 host: serves ROOT at ADDR with Node's node:http through the
// wasm build of `nikaia serve` (nikaia_wasm). Each request goes to the
// module's `handle`, which decides the whole answer; this file only moves
// bytes. Usage: node host.cjs ROOT ADDR [--hidden] [--list]
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const pkg = process.env.NIKAIA_WASM_PKG ||
  path.join(process.env.CARGO_TARGET_DIR || path.join(__dirname, '..', '..', 'target'),
    'wasm-pkg', 'nikaia_wasm.js');
const wasm = require(pkg);

// Bytes of a file body read (and written) at once when the host streams it:
// what one connection holds while its socket drains. Measured at 1 MiB × 64
// (docs/performance.md): 64 KiB 626 requests/s, 256 KiB 747, 1 MiB 952; 256
// KiB bounds what a slow reader holds at a quarter of 1 MiB's.
const CHUNK = 256 << 10;

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith('--')));
const [root = '.', addr = '127.0.0.1:8080'] = args.filter((a) => !a.startsWith('--'));
const at = addr.lastIndexOf(':');
const host = addr.slice(0, at).replace(/^\[(.*)\]$/, '$1');
const port = Number(addr.slice(at + 1));

wasm.serve(root, flags.has('--hidden'), flags.has('--list'));

// Frees `answer` (closing the file std opened, if any) once.
function releaser(answer) {
  let freed = false;
  const release = () => {
    if (!freed) {
      freed = true;
      answer.free();
    }
  };
  release.done = () => freed;
  return release;
}

// Every body but a file the host moves: pulled from the module in parts of
// at most 64 KiB, each when the socket has taken the last, so a large body
// is never held whole.
function pull(req, res, answer) {
  const release = releaser(answer);
  res.once('close', release);
  const pump = () => {
    if (release.done()) return;
    try {
      for (;;) {
        const part = answer.nextChunk();
        if (part.length === 0) {
          release();
          res.end();
          return;
        }
        if (!res.write(part)) {
          res.once('drain', pump);
          return;
        }
      }
    } catch (e) {
      // The file ended early or failed: close short, as the Linux server does.
      console.error(`${req.method} ${req.url}: ${e}`);
      release();
      res.destroy();
    }
  };
  if (res.destroyed) release();
  else pump();
}

// A file body std chose the host to move: `answer.fd` is the descriptor std
// opened and checked under the root (no name is resolved here), and exactly
// bodyLength bytes from bodyStart are sent — never more, however the file
// grew; fewer only by ending the response short, closing the connection, if
// the file ends first (as the Linux server does). Reads are synchronous
// (fs.readSync: measured cheaper than fs.read through libuv's pool, and the
// module's own reads were synchronous too). The descriptor stays std's:
// freeing the answer closes it, exactly once, when the last read is done or
// the connection goes.
function stream(req, res, answer) {
  const fd = answer.fd;
  let position = answer.bodyStart;
  let left = answer.bodyLength;
  let gone = res.destroyed;
  const release = releaser(answer);
  const fail = (why) => {
    console.error(`${req.method} ${req.url}: ${why}`);
    release();
    res.destroy();
  };
  // The client went (or the response ended): reads are synchronous, so
  // none is under way here.
  res.once('close', () => {
    gone = true;
    release();
  });
  // `got` bytes of `buf` came from `position`: send them, and go on.
  const sent = (buf, got) => {
    if (got < buf.length) {
      fail(`the file ended ${left - got} bytes early (truncated?)`);
      return false;
    }
    position += got;
    left -= got;
    if (left === 0) {
      release();
      res.end(buf);
      return false;
    }
    return res.write(buf);
  };
  const pump = () => {
    while (!gone && left > 0) {
      const buf = Buffer.allocUnsafe(Math.min(left, CHUNK));
      let got = 0;
      try {
        while (got < buf.length) {
          const n = fs.readSync(fd, buf, got, buf.length - got, position + got);
          if (n === 0) break;
          got += n;
        }
      } catch (e) {
        fail(`reading a file body: ${e.message}`);
        return;
      }
      if (!sent(buf, got)) {
        if (left > 0 && !release.done()) res.once('drain', pump);
        return;
      }
    }
  };
  if (gone || left === 0) {
    release();
    res.end();
  } else {
    pump();
  }
}

const server = http.createServer((req, res) => {
  const parts = [];
  req.on('data', (part) => parts.push(part));
  req.on('end', () => {
    let answer;
    try {
      answer = wasm.handle(req.method, req.url, req.rawHeaders, Buffer.concat(parts), Date.now());
    } catch (e) {
      console.error(`${req.method} ${req.url}: ${e}`);
      res.destroy();
      return;
    }
    res.sendDate = false; // the answer carries Date, from this host's clock
    res.writeHead(answer.status, answer.reason, answer.headers);
    if (answer.fd !== undefined) stream(req, res, answer);
    else pull(req, res, answer);
  });
});

server.listen(port, host, () => {
  const a = server.address();
  const shown = a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  console.log(`Serving ${root} at http://${shown}/ (Ctrl-C to stop)`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
