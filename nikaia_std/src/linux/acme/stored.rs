//! The pairs in the storage: read at start, and whenever another process
//! (or a job of this one) replaced one; a file that does not load is
//! logged and the pair before it kept.

use super::store::Store;
use super::{next_time, Context, Name};
use crate::linux::tls::Pair;
use std::sync::Arc;
use std::time::SystemTime;

/// Reads `<domain>.pem` (or, when it does not load, `<domain>.prev.pem`)
/// into `name` and the TLS set. Whether the served pair changed.
pub(super) fn load_stored(
    ctx: &Context,
    store: &Store,
    domain: &str,
    name: &mut Name,
    now: SystemTime,
    ari: Option<bool>,
) -> bool {
    let file = format!("{domain}.pem");
    let version = store.version(&file);
    name.stored = version;
    let Some(pair) = read_pair(ctx, store, domain, &file)
        .or_else(|| read_pair(ctx, store, domain, &format!("{domain}.prev.pem")))
    else {
        return false;
    };
    let same = name
        .pair
        .as_ref()
        .is_some_and(|p| p.not_after == pair.not_after && p.ari_id == pair.ari_id);
    if same {
        return false;
    }
    name.pair = Some(pair.clone());
    name.window = None;
    name.next = next_time(name, now, ari);
    if let Some(tls) = &ctx.tls {
        tls.set_acme(domain, Some(pair));
    }
    true
}

/// A stored pair that loads and names `domain`; one that does not is
/// logged and left alone.
pub(super) fn read_pair(
    ctx: &Context,
    store: &Store,
    domain: &str,
    file: &str,
) -> Option<Arc<Pair>> {
    let bytes = match store.read(file) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return None,
        Err(e) => {
            ctx.logs.error(format_args!("ACME {domain}: {e}"));
            return None;
        }
    };
    match Pair::from_pem(&bytes, &bytes) {
        Ok(pair) if pair.dns.iter().any(|n| n == domain) => Some(Arc::new(pair)),
        Ok(_) => {
            ctx.logs.error(format_args!(
                "ACME {domain}: {}/{file} does not name {domain}; ignored",
                store.path.display()
            ));
            None
        }
        Err((_, why)) => {
            ctx.logs.error(format_args!(
                "ACME {domain}: {}/{file} does not load ({why}); ignored",
                store.path.display()
            ));
            None
        }
    }
}
