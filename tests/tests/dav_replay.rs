//! WebDAV class 2 (#50: locks) and class 1 (#49) against the two clients
//! that cannot run here — Windows' mini-redirector
//! (`Microsoft-WebDAV-MiniRedir`) and macOS Finder (`WebDAVFS/3.0.0`) —
//! by replaying the requests they are published to send, byte for byte
//! where a source shows the bytes, over TLS with Basic auth against
//! `nikaia serve`'s routes (the runtime file of `tests/dav_clients.rs`,
//! with `[webdav-locks]` for class 2). Each step asserts what the server
//! must answer for the client to go on: the write sequences (lock, write,
//! unlock, rename) end with the right bytes under the right name and no
//! lock left; a drive without `[webdav-locks]` is still class 1 (`DAV: 1`,
//! LOCK and UNLOCK 405).
//!
//! Sources (read 2026-12-07; "exact" = the source shows the request's
//! headers and body as sent):
//!
//! Windows (mini-redirector):
//! - W1, exact: a Windows 10 (`Microsoft-WebDAV-MiniRedir/10.0.17134`)
//!   session written down request by request in a public repository's
//!   README ("Introduction to warden … WebDAV annotations": OPTIONS /,
//!   PROPFIND Depth 0 with `Content-Length: 0`, PROPFIND of a missing
//!   name, PUT, LOCK, PROPPATCH of the four Win32 properties, UNLOCK,
//!   MOVE with an absolute Destination and `Overwrite: F`, MKCOL, DELETE,
//!   every one with `translate: f` and `Connection: Keep-Alive`). The
//!   search tool's code index showed its text but not its repository, so
//!   no URL can be given for it: the headers and bodies below marked W1
//!   are copied from that text.
//! - W2, exact OPTIONS of Windows 10 19045:
//!   https://github.com/MaulingMonkey/notes/blob/HEAD/programming/formats/http1.md
//! - W3, exact PROPPATCH of Windows Explorer (no indentation in the
//!   original request; shown pretty-printed):
//!   https://github.com/9001/copyparty/issues/910 ; the same four
//!   properties from Windows 7 and Vista (with `If:` and `translate: f`):
//!   milton's PropPatchHandler comment, and [MS-WDV] §4.6
//!   https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-wdv/
//! - W4, order only (no headers, no bodies, no sizes): Explorer copying a
//!   file in — PUT (201), LOCK, HEAD, PUT (200), PROPPATCH, UNLOCK:
//!   https://github.com/OpenMarshal/npm-WebDAV-Server/issues/37 ; PROPFIND,
//!   PUT, LOCK, PROPPATCH (Windows 10.0.19041):
//!   https://github.com/drakkan/sftpgo/issues/207 ; MKCOL then PROPPATCH
//!   of the new folder: https://github.com/danmunn/redmine_dmsf/issues/334
//! - W5, an empty PROPFIND body from the mini-redirector (allprop, RFC
//!   4918 §9.1): https://github.com/chrisroberts/dav4rack/pull/63
//! - W1 also shows the lock's use: `If: (<urn:uuid:…>)` (one untagged
//!   list) on the PROPPATCH after the LOCK, and UNLOCK with `Lock-Token:
//!   <urn:uuid:…>`. Its LOCK has no `Depth` (infinity) and
//!   `Timeout: Second-3600`.
//! - W7, how the redirector submits its token (no exact PUT head found):
//!   Windows' client needs the lock in `If`, a server checking only
//!   `Lock-Token` broke it: https://github.com/cs3org/reva/pull/4928 ,
//!   https://github.com/cs3org/reva/pull/4972 ; a wsgidav debug log of
//!   Windows 10.0.19045 (PUT 0 bytes 201, LOCK 200, then a request whose
//!   `If` parses as one untagged list of the token):
//!   https://github.com/mar10/wsgidav/issues/332 . [MS-WDV] §2.2.4.2 says
//!   `Lock-Token` SHOULD be on a PUT of a locked resource:
//!   https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-wdv/cacea365-41fe-4bfd-84fc-35f2417349b9 ;
//!   Word 2016 sent its PUT so, without `If`:
//!   https://github.com/sabre-io/dav/issues/980 .
//! - W6, Explorer does not write to a server without LOCK (and needs
//!   PROPPATCH for uploads): https://github.com/arut/nginx-dav-ext-module/issues/16 ;
//!   "without LOCK and UNLOCK … Windows may decide to mount a folder in
//!   read only mode": https://github.com/ltworf/weborf/issues/78
//!
//! Not found in any source: a mini-redirector PROPFIND body naming the
//! `urn:schemas-microsoft-com:` properties (W1 and W5 show an empty body,
//! and W1's server answers the Win32 properties inside allprop), and the
//! length of the first PUT of W4 (the log shows 201 then 200, no sizes):
//! the 0-byte first PUT below is the brief's, and WebDAVFS's own
//! `network_create` (F1) does the same. Said again where each is sent.
//!
//! Finder (WebDAVFS):
//! - F1, exact bodies and headers, from Apple's source of the client:
//!   https://github.com/apple-oss-distributions/webdavfs (tag
//!   webdavfs-403.0.0.0.1), mount.tproj/webdav_network.c —
//!   `network_getDAVLevel` (OPTIONS, `Accept: */*`), `ParseDAVLevel` and
//!   `network_mount` (a `DAV:` header with class 1 and not 2 sets
//!   `MNT_RDONLY`: **a class-1 server is mounted read-only**),
//!   `network_stat` (PROPFIND Depth 0: getlastmodified, getcontentlength,
//!   creationdate, resourcetype), `network_statfs` (PROPFIND Depth 0:
//!   quota-available-bytes, quota-used-bytes, quota, quotaused),
//!   `network_readdir` (PROPFIND Depth 1, with
//!   `<A:appledoubleheader/>` in `http://www.apple.com/webdav_fs/props/`
//!   when caching), `network_create` (PUT with no body, `Accept: */*`),
//!   `create_http_request_message` (the content's PUT:
//!   `X-Expected-Entity-Length`, streamed, so chunked when no length is
//!   given), `network_rename` (MOVE: `Accept`, `Destination`),
//!   `network_lock` (LOCK: `Accept: */*`, `Depth: 0`, `Timeout:
//!   Second-600`, `Content-Type: text/xml; charset="utf-8"`, the lockinfo
//!   with `<D:href>http://www.apple.com/webdav_fs/</D:href>` as owner),
//!   its refresh from the pulse thread every 300 s for an open file (LOCK
//!   with no body, `If: (<token>)`, `Timeout: Second-600`, `Content-Type:
//!   text/xml`; webdav_requestqueue.c) and `network_unlock` on close
//!   (`Lock-Token: <token>`); a LOCK answered 423 is EBUSY and the open
//!   fails (read for /work/notes/50-research.md §4).
//! - F2, exact PROPFIND on the wire (`User-Agent: WebDAVFS/3.0.0
//!   (03008000) Darwin/23.0.0 (arm64)`, `Content-Type: text/xml`, Depth 0,
//!   the body of F1's `network_stat`): https://github.com/rclone/rclone/issues/6433
//! - F3, exact PUT head from macOS 14.4.1 (`Transfer-Encoding: chunked`,
//!   `Accept: */*`, `If: (<opaquelocktoken:…>)`, `X-Expected-Entity-Length`):
//!   https://github.com/nextcloud/all-in-one/issues/4582 ; older Finders
//!   spell it `Transfer-Encoding: Chunked`: https://github.com/Pylons/waitress/pull/43 ,
//!   https://github.com/erlyaws/yaws/pull/125 ; chunked PUT bodies:
//!   https://sabre.io/dav/clients/finder/
//! - F4, order only (access logs): PROPFIND x (404), PUT x (201), PROPFIND
//!   `._x` (404), LOCK x, … PUT `._x`:
//!   https://github.com/pydio/pydio-core/issues/581 ,
//!   https://github.com/nextcloud/server/issues/3628 ,
//!   https://github.com/owncloud/core/issues/24753 (also PROPFIND `/._.`);
//!   PROPFIND of `.DS_Store`, `._.`, `.Spotlight-V100` after mounting:
//!   https://github.com/ykumar6/jsDAV/wiki/finder
//!
//! Not found either: the bytes of the mini-redirector's PUT of
//! the content after its LOCK. It is sent with W1's `If: (<token>)` (W1's
//! PROPPATCH, W7); a PUT carrying only `Lock-Token` (MS-WDV, Word 2016) is
//! its own test, ignored: this server answers it 423. Also not sourced:
//! the redirector refreshing its lock (W1's 1 h is the timeout it asks),
//! and whether Finder locks its `._NAME` file (wsgidav#15 says it does;
//! no bytes) — not replayed.
//!
//! What a class-1 server means for these clients (F1, W6): Finder mounts
//! it read-only, and Explorer's writes need LOCK. The class-1 tests pin
//! that a drive without `[webdav-locks]` still says so.
//!
//! Open, no source found either way: the mini-redirector reading a 207
//! sent chunked (this server streams PROPFIND Depth 1 as a produced body;
//! Depth 0 and PROPPATCH answers carry a Content-Length), and whether
//! Finder goes on after its `._NAME` PUT is refused (404 by default here).

#[path = "dav_replay/finder.rs"]
mod finder;
#[path = "dav_replay/windows.rs"]
mod windows;
#[path = "dav_replay/wire.rs"]
mod wire;
#[path = "dav_replay/xml.rs"]
mod xml;
