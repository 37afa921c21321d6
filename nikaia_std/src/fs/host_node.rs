//! wasm32: the [`Host`] over Node's `node:fs`, synchronously, through
//! `wasm-bindgen`. Handles are Node file descriptors.

use super::host::{Host, HostError, HostKind, HostStat};
use js_sys::{Array, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen(module = "node:fs")]
extern "C" {
    #[wasm_bindgen(catch, js_name = lstatSync)]
    fn lstat_sync(path: &str, options: &JsValue) -> Result<NodeStats, JsValue>;
    #[wasm_bindgen(catch, js_name = readlinkSync)]
    fn readlink_sync(path: &str, options: &JsValue) -> Result<Uint8Array, JsValue>;
    #[wasm_bindgen(catch, js_name = openSync)]
    fn open_sync(path: &str, flags: f64) -> Result<f64, JsValue>;
    #[wasm_bindgen(catch, js_name = fstatSync)]
    fn fstat_sync(fd: f64, options: &JsValue) -> Result<NodeStats, JsValue>;
    #[wasm_bindgen(catch, js_name = readSync)]
    fn read_sync(
        fd: f64,
        buffer: &Uint8Array,
        offset: f64,
        length: f64,
        position: &JsValue,
    ) -> Result<f64, JsValue>;
    #[wasm_bindgen(catch, js_name = closeSync)]
    fn close_sync(fd: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, js_name = readdirSync)]
    fn readdir_sync(path: &str, options: &JsValue) -> Result<Array, JsValue>;

    #[wasm_bindgen(thread_local_v2, js_name = constants)]
    static CONSTANTS: Object;
}

#[wasm_bindgen]
extern "C" {
    /// `fs.BigIntStats`, and `fs.Dirent` (which has the same `is*` methods).
    type NodeStats;
    #[wasm_bindgen(method, js_name = isFile)]
    fn is_file(this: &NodeStats) -> bool;
    #[wasm_bindgen(method, js_name = isDirectory)]
    fn is_directory(this: &NodeStats) -> bool;
    #[wasm_bindgen(method, js_name = isSymbolicLink)]
    fn is_symbolic_link(this: &NodeStats) -> bool;
    #[wasm_bindgen(method, getter)]
    fn dev(this: &NodeStats) -> JsValue;
    #[wasm_bindgen(method, getter)]
    fn ino(this: &NodeStats) -> JsValue;
    #[wasm_bindgen(method, getter)]
    fn size(this: &NodeStats) -> JsValue;
    #[wasm_bindgen(method, getter, js_name = mtimeNs)]
    fn mtime_ns(this: &NodeStats) -> JsValue;
    #[wasm_bindgen(method, getter, js_name = ctimeNs)]
    fn ctime_ns(this: &NodeStats) -> JsValue;
    #[wasm_bindgen(method, getter)]
    fn name(this: &NodeStats) -> JsValue;
}

/// Node's `fs`, as the process's host (registered by default on wasm32).
pub(crate) struct NodeHost;

/// `{ key: value }`.
fn options(key: &str, value: JsValue) -> JsValue {
    let o = Object::new();
    // Setting a property on a fresh plain object cannot fail.
    let _ = Reflect::set(&o, &JsValue::from_str(key), &value);
    o.into()
}

fn bigint() -> JsValue {
    options("bigint", JsValue::TRUE)
}

/// A Node path: the bytes as UTF-8 (Node's strings); other bytes cannot
/// name a file here.
fn path_str(path: &[u8]) -> Result<&str, HostError> {
    std::str::from_utf8(path).map_err(|_| HostError::NotFound)
}

/// A Node error (`err.code`) as a host error.
fn error(err: JsValue) -> HostError {
    let code = Reflect::get(&err, &JsValue::from_str("code"))
        .ok()
        .and_then(|c| c.as_string())
        .unwrap_or_default();
    match code.as_str() {
        "ENOENT" | "ENAMETOOLONG" => HostError::NotFound,
        "ENOTDIR" => HostError::NotDir,
        "ELOOP" | "EMLINK" => HostError::Loop,
        "EINVAL" => HostError::NotSymlink,
        _ => {
            let message = Reflect::get(&err, &JsValue::from_str("message"))
                .ok()
                .and_then(|m| m.as_string())
                .unwrap_or_else(|| format!("{err:?}"));
            HostError::Other(message)
        }
    }
}

fn u64_of(v: JsValue) -> Result<u64, HostError> {
    u64::try_from(v).map_err(|v| HostError::Other(format!("not a bigint: {v:?}")))
}

fn i64_of(v: JsValue) -> Result<i64, HostError> {
    i64::try_from(v).map_err(|v| HostError::Other(format!("not a bigint: {v:?}")))
}

fn kind(st: &NodeStats) -> HostKind {
    if st.is_symbolic_link() {
        HostKind::Symlink
    } else if st.is_directory() {
        HostKind::Dir
    } else if st.is_file() {
        HostKind::File
    } else {
        HostKind::Other
    }
}

fn stat(st: NodeStats) -> Result<HostStat, HostError> {
    Ok(HostStat {
        kind: kind(&st),
        dev: u64_of(st.dev())?,
        ino: u64_of(st.ino())?,
        size: u64_of(st.size())?,
        mtime_ns: i64_of(st.mtime_ns())?,
        ctime_ns: i64_of(st.ctime_ns())?,
    })
}

/// `fs.constants[name]`.
fn constant(name: &str) -> Result<f64, HostError> {
    CONSTANTS
        .with(|c| Reflect::get(c, &JsValue::from_str(name)))
        .ok()
        .and_then(|v| v.as_f64())
        .ok_or_else(|| HostError::Other(format!("fs.constants.{name} is missing")))
}

impl Host for NodeHost {
    fn lstat(&self, path: &[u8]) -> Result<HostStat, HostError> {
        stat(lstat_sync(path_str(path)?, &bigint()).map_err(error)?)
    }

    fn readlink(&self, path: &[u8]) -> Result<Vec<u8>, HostError> {
        let options = options("encoding", JsValue::from_str("buffer"));
        Ok(readlink_sync(path_str(path)?, &options)
            .map_err(error)?
            .to_vec())
    }

    fn open(&self, path: &[u8]) -> Result<u64, HostError> {
        // Both constants are small integers: the bitwise or of their values.
        let flags = (constant("O_RDONLY")? as u32) | (constant("O_NOFOLLOW")? as u32);
        let fd = open_sync(path_str(path)?, f64::from(flags)).map_err(error)?;
        Ok(fd as u64)
    }

    fn fstat(&self, handle: u64) -> Result<HostStat, HostError> {
        stat(fstat_sync(handle as f64, &bigint()).map_err(error)?)
    }

    fn pread(&self, handle: u64, buf: &mut [u8], offset: u64) -> Result<usize, HostError> {
        let len = buf.len().min(1 << 30);
        let array = Uint8Array::new_with_length(len as u32);
        let position = JsValue::from(offset);
        let n = read_sync(handle as f64, &array, 0.0, len as f64, &position).map_err(error)?;
        let n = (n as usize).min(len);
        array.subarray(0, n as u32).copy_to(&mut buf[..n]);
        Ok(n)
    }

    fn close(&self, handle: u64) {
        let _ = close_sync(handle as f64);
    }

    /// Handles are Node's descriptors, which `fs.read` takes as they are.
    fn descriptor(&self, handle: u64) -> Option<u32> {
        u32::try_from(handle).ok()
    }

    fn readdir(&self, path: &[u8]) -> Result<Vec<(Vec<u8>, HostKind)>, HostError> {
        let options = options("withFileTypes", JsValue::TRUE);
        let entries = readdir_sync(path_str(path)?, &options).map_err(error)?;
        let mut out = Vec::with_capacity(entries.length() as usize);
        for entry in entries.iter() {
            let entry: NodeStats = entry.unchecked_into();
            let name = entry.name().as_string().unwrap_or_default();
            out.push((name.into_bytes(), kind(&entry)));
        }
        Ok(out)
    }
}
