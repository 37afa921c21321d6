// Bun beside nikaia serve and nginx in benches/http/bench.py --bun: one
// process, Bun's one JavaScript thread (its default), plaintext HTTP/1.1.
//
//   - /page.html, the bench's "page 4 KiB (constant)" case: a static route,
//     `routes: { "/page.html": new Response(bytes) }`, where `bytes` are the
//     fixture's page.html (the 4 KiB the other servers answer for that URL),
//     read once at start and held: Bun answers it from memory without calling
//     into JavaScript. Content-Type as nikaia gives it for .html.
//   - any other path, e.g. the "4 KiB × 64 (named)" case's /4k/N.bin: a file
//     under ROOT (the directory nginx and nikaia serve), answered with
//     `new Response(Bun.file(path))` from the fetch handler (Bun finds the
//     type from the name; a file it cannot open, e.g. a missing one, reaches
//     `error` below as ENOENT and is a 404).
//
// usage: bun benches/http/bun_server.js ROOT HOST:PORT

const [root, listen] = process.argv.slice(2);
if (!root || !listen) {
  console.error("usage: bun bun_server.js ROOT HOST:PORT");
  process.exit(2);
}
const at = listen.lastIndexOf(":");
const hostname = listen.slice(0, at);
const port = Number(listen.slice(at + 1));

const page = await Bun.file(`${root}/page.html`).bytes();

const server = Bun.serve({
  hostname,
  port,
  development: false,
  routes: {
    "/page.html": new Response(page, {
      headers: { "Content-Type": "text/html; charset=utf-8" },
    }),
  },
  fetch(req) {
    // The path of the request target, without its query; no dot segments.
    const url = req.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    let end = url.indexOf("?", start);
    if (end < 0) end = url.length;
    let path;
    try {
      path = decodeURIComponent(url.slice(start, end));
    } catch {
      return new Response("Bad Request\n", { status: 400 });
    }
    if (path.includes("/..") || path.includes("\0")) {
      return new Response("Not Found\n", { status: 404 });
    }
    return new Response(Bun.file(root + path));
  },
  // A file that cannot be opened (ENOENT, EISDIR): 404, like the others.
  error() {
    return new Response("Not Found\n", { status: 404 });
  },
});

process.on("SIGTERM", () => {
  server.stop(true);
  process.exit(0);
});
