'use strict';
// The wasm32 host: serves ROOT at ADDR with Node's node:http through the
// wasm build of `nikaia serve` (nikaia_wasm). Each request goes to the
// module's `handle`, which decides the whole answer; this file only moves
// bytes. Usage: node host.cjs ROOT ADDR [--hidden] [--list]
const http = require('node:http');
const path = require('node:path');

const pkg = process.env.NIKAIA_WASM_PKG ||
  path.join(__dirname, '..', '..', 'target', 'wasm-pkg', 'nikaia_wasm.js');
const wasm = require(pkg);

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith('--')));
const [root = '.', addr = '127.0.0.1:8080'] = args.filter((a) => !a.startsWith('--'));
const at = addr.lastIndexOf(':');
const host = addr.slice(0, at).replace(/^\[(.*)\]$/, '$1');
const port = Number(addr.slice(at + 1));

wasm.serve(root, flags.has('--hidden'), flags.has('--list'));

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
    // The body comes in parts of at most 64 KiB, read when the socket
    // takes them: a large file is never held whole.
    const pump = () => {
      try {
        for (;;) {
          const part = answer.nextChunk();
          if (part.length === 0) {
            answer.free();
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
        answer.free();
        res.destroy();
      }
    };
    pump();
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
