//! The one field of a certificate std reads itself: the end of its validity
//! (`notAfter`), for `nikaia check`'s warning. A DER walk of five elements;
//! an X.509 crate would bring a parser framework for one timestamp, and
//! rustls (which validates nothing about the server's own certificate) has
//! no accessor for it.

use crate::text::date::days_from_civil;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One DER element: (tag, contents, rest after it).
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// `tbsCertificate.validity.notAfter` of a DER certificate.
pub(super) fn not_after(cert: &[u8]) -> Option<SystemTime> {
    let (SEQUENCE, cert, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(cert)? else {
        return None;
    };
    let mut rest = tbs;
    let (tag, _, after) = element(rest)?;
    if tag == VERSION {
        rest = after;
    }
    // serialNumber, signature, issuer
    for _ in 0..3 {
        rest = element(rest)?.2;
    }
    let (SEQUENCE, validity, _) = element(rest)? else {
        return None;
    };
    let (_, _, after_not_before) = element(validity)?;
    let (tag, time, _) = element(after_not_before)?;
    let text = std::str::from_utf8(time).ok()?;
    let text = text.strip_suffix('Z')?;
    let (year, rest) = match tag {
        // RFC 5280: two-digit years 50–99 are 19xx, 00–49 are 20xx.
        UTC_TIME => {
            let yy: i64 = text.get(..2)?.parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &text[2..])
        }
        GENERALIZED_TIME => (text.get(..4)?.parse().ok()?, &text[4..]),
        _ => return None,
    };
    if rest.len() != 10 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |i: usize| rest[i..i + 2].parse::<u32>().ok();
    let (month, day) = (field(0)?, field(2)?);
    let (hour, minute, second) = (field(4)? as u64, field(6)? as u64, field(8)? as u64);
    let days = days_from_civil(year, month, day);
    let secs = u64::try_from(days).ok()? * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert_valid_until(year: i32, month: u8, day: u8) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        params.not_after = rcgen::date_time_ymd(year, month, day);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn reads_not_after_in_both_time_forms() {
        // rcgen writes UTCTime before 2050 and GeneralizedTime from 2050 on.
        for (y, m, d, unix) in [
            (2030, 6, 15, 1_907_712_000),
            (2049, 12, 31, 2_524_521_600),
            (2051, 1, 1, 2_556_144_000),
        ] {
            let der = cert_valid_until(y, m, d);
            assert_eq!(
                not_after(&der),
                Some(UNIX_EPOCH + Duration::from_secs(unix)),
                "{y}-{m}-{d}"
            );
        }
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        for bad in [
            &b""[..],
            b"\x30",
            b"\x30\x84\xff\xff\xff\xff",
            b"\x30\x03\x30\x01\x00",
        ] {
            assert_eq!(not_after(bad), None);
        }
        let der = cert_valid_until(2030, 1, 1);
        for cut in 0..der.len() {
            let _ = not_after(&der[..cut]);
        }
    }
}
