//! The fields of a certificate std reads itself: its validity (`notAfter`
//! for `nikaia check`, `nikaia explain` and which of two pairs serves a
//! name; `notBefore` too for when ACME renews), the names it covers
//! (`subjectAltName`: which handshakes it serves), and its ACME renewal
//! identifier (authority key identifier and serial). A DER walk of a few
//! elements; an X.509 crate would bring a parser framework for these, and
//! rustls (which validates nothing about the server's own certificate)
//! has no accessor for them.

use crate::text::date::days_from_civil;
use std::net::IpAddr;
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
const EXTENSIONS: u8 = 0xa3;
const OID: u8 = 0x06;
const BOOLEAN: u8 = 0x01;
const OCTET_STRING: u8 = 0x04;
/// 2.5.29.17, `id-ce-subjectAltName`.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// 2.5.29.35, `id-ce-authorityKeyIdentifier`, and its `keyIdentifier [0]`.
const AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];
const KEY_IDENTIFIER: u8 = 0x80;
const INTEGER: u8 = 0x02;
/// `dNSName [2] IA5String` and `iPAddress [7] OCTET STRING` of GeneralName.
const DNS_NAME: u8 = 0x82;
const IP_ADDRESS: u8 = 0x87;

/// The fields of `tbsCertificate` from `validity` on.
fn from_validity(cert: &[u8]) -> Option<&[u8]> {
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
    Some(rest)
}

/// The names a certificate covers, from its `subjectAltName` extension:
/// DNS names as written (a wildcard keeps its `*.`) and IP addresses.
/// Empty when it has none (the subject's common name is not a name here:
/// clients stopped reading it).
pub(super) fn subject_alt_names(cert: &[u8]) -> (Vec<String>, Vec<IpAddr>) {
    let (mut dns, mut ips) = (Vec::new(), Vec::new());
    let Some(value) = san_extension(cert) else {
        return (dns, ips);
    };
    let Some((SEQUENCE, mut names, _)) = element(value) else {
        return (dns, ips);
    };
    while let Some((tag, name, rest)) = element(names) {
        match tag {
            DNS_NAME => dns.extend(std::str::from_utf8(name).ok().map(str::to_owned)),
            IP_ADDRESS => {
                let v4 = <[u8; 4]>::try_from(name).map(IpAddr::from);
                let v6 = <[u8; 16]>::try_from(name).map(IpAddr::from);
                ips.extend(v4.or(v6).ok());
            }
            _ => {}
        }
        names = rest;
    }
    (dns, ips)
}

/// The `extnValue` of the `subjectAltName` extension.
fn san_extension(cert: &[u8]) -> Option<&[u8]> {
    extension(cert, SUBJECT_ALT_NAME)
}

/// The `extnValue` of the extension `id`.
fn extension<'c>(cert: &'c [u8], id: &[u8]) -> Option<&'c [u8]> {
    // validity, subject, subjectPublicKeyInfo, then the optional fields.
    let mut rest = from_validity(cert)?;
    for _ in 0..3 {
        rest = element(rest)?.2;
    }
    while let Some((tag, contents, after)) = element(rest) {
        rest = after;
        if tag != EXTENSIONS {
            continue;
        }
        let (SEQUENCE, mut list, _) = element(contents)? else {
            return None;
        };
        while let Some((SEQUENCE, extension, after)) = element(list) {
            list = after;
            let (OID, oid, mut fields) = element(extension)? else {
                continue;
            };
            if oid != id {
                continue;
            }
            if let Some((BOOLEAN, _, after)) = element(fields) {
                fields = after;
            }
            let (OCTET_STRING, value, _) = element(fields)? else {
                return None;
            };
            return Some(value);
        }
    }
    None
}

/// `tbsCertificate.validity.notAfter` of a DER certificate.
pub(super) fn not_after(cert: &[u8]) -> Option<SystemTime> {
    let rest = from_validity(cert)?;
    let (SEQUENCE, validity, _) = element(rest)? else {
        return None;
    };
    let (_, _, after_not_before) = element(validity)?;
    time(after_not_before)
}

/// `tbsCertificate.validity.notBefore` of a DER certificate.
pub(super) fn not_before(cert: &[u8]) -> Option<SystemTime> {
    let rest = from_validity(cert)?;
    let (SEQUENCE, validity, _) = element(rest)? else {
        return None;
    };
    time(validity)
}

/// The certificate's identifier in ACME renewal information (RFC 9773
/// §4.1): base64url of the authority key identifier's `keyIdentifier`,
/// a dot, base64url of the serial number's content octets.
pub(super) fn ari_id(cert: &[u8]) -> Option<String> {
    let (SEQUENCE, c, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(c)? else {
        return None;
    };
    let mut rest = tbs;
    let (tag, _, after) = element(rest)?;
    if tag == VERSION {
        rest = after;
    }
    let (INTEGER, serial, _) = element(rest)? else {
        return None;
    };
    let aki = extension(cert, AUTHORITY_KEY_ID)?;
    let (SEQUENCE, aki, _) = element(aki)? else {
        return None;
    };
    let (KEY_IDENTIFIER, key_id, _) = element(aki)? else {
        return None;
    };
    Some(format!(
        "{}.{}",
        crate::text::base64::url(key_id),
        crate::text::base64::url(serial)
    ))
}

/// A UTCTime or GeneralizedTime element at the start of `der`.
fn time(der: &[u8]) -> Option<SystemTime> {
    let (tag, time, _) = element(der)?;
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
    fn reads_the_dns_names_and_addresses_a_certificate_covers() {
        let names = [
            "example.org",
            "*.example.org",
            "127.0.0.1",
            "::1",
            "Files.Example.ORG",
        ];
        let params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let der = params.self_signed(&key).unwrap().der().to_vec();
        let (dns, ips) = subject_alt_names(&der);
        assert_eq!(dns, ["example.org", "*.example.org", "Files.Example.ORG"]);
        assert_eq!(
            ips,
            [
                "127.0.0.1".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        // Without the extension: no names.
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "example.org");
        let der = params.self_signed(&key).unwrap().der().to_vec();
        assert_eq!(subject_alt_names(&der), (vec![], vec![]));
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
            let _ = not_before(&der[..cut]);
            let _ = subject_alt_names(&der[..cut]);
            let _ = ari_id(&der[..cut]);
        }
    }
}

#[cfg(test)]
mod ari_tests {
    use super::*;

    #[test]
    fn the_renewal_identifier_of_rfc_9773s_example() {
        // RFC 9773 §4.1: a certificate with keyIdentifier
        // 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4 and
        // serial 00:87:65:43:21 has the identifier below; made here with
        // rcgen, signed by a CA whose key identifier is that.
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.key_identifier_method = rcgen::KeyIdMethod::PreSpecified(vec![
            0x69, 0x88, 0x5B, 0x6B, 0x87, 0x46, 0x40, 0x41, 0xE1, 0xB3, 0x7B, 0x84, 0x7B, 0xA0,
            0xAE, 0x2C, 0xDE, 0x01, 0xC8, 0xD4,
        ]);
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let mut leaf = rcgen::CertificateParams::new(vec!["example.org".to_owned()]).unwrap();
        leaf.serial_number = Some(rcgen::SerialNumber::from_slice(&[
            0x00, 0x87, 0x65, 0x43, 0x21,
        ]));
        leaf.use_authority_key_identifier_extension = true;
        let key = rcgen::KeyPair::generate().unwrap();
        let der = leaf.signed_by(&key, &issuer).unwrap().der().to_vec();
        assert_eq!(
            ari_id(&der).as_deref(),
            Some("aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE")
        );
        assert!(not_before(&der).is_some());
    }
}
