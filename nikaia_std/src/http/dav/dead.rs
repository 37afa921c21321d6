//! Dead properties as stored in one extended attribute per file or
//! collection (`user.nikaia.dav`, `spec/site.md` "Properties"): the whole
//! set in one record, so a `PROPPATCH` writes all of it or none.
//!
//! The record: one byte, the format's version (2); then for each property,
//! sorted by name with no name twice, its namespace, its local name, its
//! value and its `xml:lang` (empty: none), each a 4-byte little-endian
//! length and that many bytes of UTF-8. A record of version 1 (no
//! `xml:lang`) is read as well.

use super::xml::{well_formed_value, Bad, Change, QName, Value};
use std::collections::BTreeMap;

const VERSION: u8 = 2;

/// The whole set (sorted by name, no name twice) as one record.
pub(crate) fn encode(props: &[(QName, Value)]) -> Vec<u8> {
    debug_assert!(props.windows(2).all(|w| w[0].0 < w[1].0));
    let len = props
        .iter()
        .map(|(n, v)| {
            16 + n.ns.len() + n.local.len() + v.0.len() + v.1.as_ref().map_or(0, String::len)
        })
        .sum::<usize>();
    let mut out = Vec::with_capacity(1 + len);
    out.push(VERSION);
    for (name, value) in props {
        let lang = value.1.as_deref().unwrap_or("");
        for field in [name.ns.as_str(), &name.local, &value.0, lang] {
            out.extend_from_slice(&(field.len() as u32).to_le_bytes());
            out.extend_from_slice(field.as_bytes());
        }
    }
    out
}

/// A record read back. One that does not decode (another version, cut
/// short, not UTF-8, out of order, a name that is not an XML name, a
/// value that is not well-formed content) is `Err`: the caller treats it
/// as no properties and logs it.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<(QName, Value)>, Bad> {
    let (&version, mut rest) = bytes.split_first().ok_or(Bad("an empty record"))?;
    if version != VERSION && version != 1 {
        return Err(Bad("a record of another version"));
    }
    let mut field = || -> Result<String, Bad> {
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or(Bad("a record cut short"))?;
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return Err(Bad("a record cut short"));
        }
        let (text, tail) = tail.split_at(len);
        rest = tail;
        String::from_utf8(text.to_vec()).map_err(|_| Bad("a record that is not UTF-8"))
    };
    let mut props: Vec<(QName, Value)> = Vec::new();
    loop {
        let ns = match field() {
            Ok(ns) => ns,
            Err(_) if rest.is_empty() => break,
            Err(e) => return Err(e),
        };
        let local = field()?;
        let xml = field()?;
        let lang = match version {
            1 => String::new(),
            _ => field()?,
        };
        let value = Value(xml, (!lang.is_empty()).then_some(lang));
        let name = QName { ns, local };
        if !super::xml::name_ok(&name) {
            return Err(Bad("a record with a name that is not an XML name"));
        }
        if !well_formed_value(&value) {
            return Err(Bad("a record with a value that is not well-formed"));
        }
        if props.last().is_some_and(|(last, _)| *last >= name) {
            return Err(Bad("a record out of order"));
        }
        props.push((name, value));
    }
    Ok(props)
}

/// Applies a `PROPPATCH`'s changes in order to a set: a set replaces, a
/// remove removes (remove then set gives the set value; set then remove
/// leaves it absent). The set stays sorted.
pub(crate) fn apply(props: &mut Vec<(QName, Value)>, changes: &[Change]) {
    // A map, so that many changes cost n log n, not n² moves in a Vec.
    let mut map: BTreeMap<QName, Value> = std::mem::take(props).into_iter().collect();
    for change in changes {
        match change {
            Change::Set(name, value) => {
                map.insert(name.clone(), value.clone());
            }
            Change::Remove(name) => {
                map.remove(name);
            }
        }
    }
    *props = map.into_iter().collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(ns: &str, local: &str) -> QName {
        QName {
            ns: ns.into(),
            local: local.into(),
        }
    }

    fn v(s: &str) -> Value {
        Value(s.into(), None)
    }

    #[test]
    fn round_trip() {
        let props = vec![
            (q("", "nonamespace"), v("randomvalue")),
            (q("DAV:", "x"), v("")),
            (
                q("http://bar", "foo"),
                v("<a:b xmlns=\"\" xmlns:a=\"u\">\u{10000} &amp;</a:b>"),
            ),
        ];
        let bytes = encode(&props);
        assert_eq!(bytes[0], 2);
        assert_eq!(decode(&bytes), Ok(props));
        assert_eq!(decode(&encode(&[])), Ok(vec![]));
    }

    #[test]
    fn bad_records() {
        let props = vec![(q("n", "a"), v("x")), (q("n", "b"), v("y"))];
        let good = encode(&props);
        assert!(decode(&[]).is_err());
        let mut other = good.clone();
        other[0] = 3;
        assert!(decode(&other).is_err());
        // Cut anywhere but between properties (the first 1 + 19 bytes are
        // the empty set's record and the first property, its empty
        // `xml:lang` included).
        for cut in (2..good.len()).filter(|&c| c != 20) {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(decode(&good[..20]), Ok(props[..1].to_vec()));
        // Out of order, and a name twice: written by hand (encode asserts).
        let by_hand = |props: &[&(QName, Value)]| {
            let mut out = vec![1u8];
            for (n, v) in props {
                for f in [&n.ns, &n.local, &v.0] {
                    out.extend_from_slice(&(f.len() as u32).to_le_bytes());
                    out.extend_from_slice(f.as_bytes());
                }
            }
            out
        };
        assert!(decode(&by_hand(&[&props[1], &props[0]])).is_err());
        let dup = by_hand(&[&props[0], &props[0]]);
        assert!(decode(&dup).is_err());
        let mut not_utf8 = good.clone();
        not_utf8[5] = 0xff;
        assert!(decode(&not_utf8).is_err());
        assert!(decode(&encode(&[(q("n", "a b"), v(""))])).is_err());
        assert!(decode(&encode(&[(q("n", "a"), v("<x>"))])).is_err());
        assert!(decode(&encode(&[(q("n", "a"), v("<p:x/>"))])).is_err());
        assert!(decode(&encode(&[(q("", "a"), v("</x>"))])).is_err());
    }

    #[test]
    fn apply_in_order() {
        let (a, b) = (q("n", "a"), q("n", "b"));
        let mut props = vec![];
        apply(
            &mut props,
            &[
                Change::Set(b.clone(), v("1")),
                Change::Set(a.clone(), v("2")),
            ],
        );
        assert_eq!(props, vec![(a.clone(), v("2")), (b.clone(), v("1"))]);
        // litmus propremoveset: remove, set x, set y → y.
        apply(
            &mut props,
            &[
                Change::Remove(a.clone()),
                Change::Set(a.clone(), v("x")),
                Change::Set(a.clone(), v("y")),
            ],
        );
        assert_eq!(props[0], (a.clone(), v("y")));
        // litmus propsetremove: set x, remove → absent.
        apply(
            &mut props,
            &[Change::Set(a.clone(), v("x")), Change::Remove(a.clone())],
        );
        assert_eq!(props, vec![(b.clone(), v("1"))]);
        // Removing what is not there is not an error.
        apply(&mut props, &[Change::Remove(a)]);
        assert_eq!(props, vec![(b, v("1"))]);
    }
}
