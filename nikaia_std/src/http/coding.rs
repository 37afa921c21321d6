//! Content-coding negotiation: which of the server's precompressed codings
//! a request accepts (`Accept-Encoding`, RFC 9110 §12.5.3), best first.

use super::request::Request;
use crate::rt::Coding;

/// The codings of `precompressed` a request accepts, best first: by the
/// client's q-value, ties in the server's order. A coding the client gives
/// q=0, or does not name (and no `*` covers), is not used; without
/// `Accept-Encoding`, none is.
#[derive(Default, Clone, Copy)]
pub(super) struct Wanted {
    codings: [Option<Coding>; 3],
    at: usize,
}

impl Wanted {
    pub(super) fn of(req: &Request, offered: &[Coding]) -> Wanted {
        let mut q: [(u16, usize, Option<Coding>); 3] = [(0, 0, None); 3];
        let mut n = 0;
        for (rank, &coding) in offered.iter().enumerate().take(3) {
            let mut named = None;
            let mut star = None;
            for (header, value) in req.headers() {
                if !header.eq_ignore_ascii_case("accept-encoding") {
                    continue;
                }
                let value = std::str::from_utf8(value).unwrap_or("");
                for (token, weight) in value.split(',').filter_map(element) {
                    let is = token.eq_ignore_ascii_case(coding.token())
                        || (coding == Coding::Gzip && token.eq_ignore_ascii_case("x-gzip"));
                    if is {
                        named = named.or(Some(weight));
                    } else if token == "*" {
                        star = star.or(Some(weight));
                    }
                }
            }
            match named.or(star) {
                Some(weight) if weight > 0 => {
                    q[n] = (weight, rank, Some(coding));
                    n += 1;
                }
                _ => {}
            }
        }
        q[..n].sort_by_key(|&(weight, rank, _)| (std::cmp::Reverse(weight), rank));
        Wanted {
            codings: [q[0].2, q[1].2, q[2].2],
            at: 0,
        }
    }

    pub(super) fn next(&mut self) -> Option<Coding> {
        let coding = *self.codings.get(self.at)?;
        self.at += 1;
        coding
    }
}

/// One element of `Accept-Encoding` (or of `Accept`): its token and its weight in
/// thousandths (1000 when no `q` is given; 0 when `q` does not parse, so a
/// coding is never sent on a weight the server could not read).
pub(super) fn element(item: &str) -> Option<(&str, u16)> {
    let mut parts = item.split(';');
    let token = parts.next()?.trim();
    if token.is_empty() {
        return None;
    }
    let mut weight = 1000;
    for param in parts {
        let Some((k, v)) = param.split_once('=') else {
            continue;
        };
        if k.trim().eq_ignore_ascii_case("q") {
            weight = qvalue(v.trim()).unwrap_or(0);
        }
    }
    Some((token, weight))
}

/// RFC 9110 §12.4.2: `0[.ddd]` or `1[.000]`, in thousandths.
fn qvalue(v: &str) -> Option<u16> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut thousandths: u16 = 0;
    for (i, b) in frac.bytes().enumerate() {
        thousandths += u16::from(b - b'0') * [100, 10, 1][i];
    }
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coding::{Br, Gzip, Zstd};

    fn wanted(accept: &[&str], offered: &[Coding]) -> Vec<Coding> {
        let mut head = String::from("GET /f HTTP/1.1\r\nHost: t\r\n");
        for v in accept {
            head.push_str(&format!("Accept-Encoding: {v}\r\n"));
        }
        head.push_str("\r\n");
        let req = crate::http::h1::parse::test_request(&head);
        let mut w = Wanted::of(&req, offered);
        std::iter::from_fn(|| w.next()).collect()
    }

    #[test]
    fn codings_by_q_then_server_order() {
        let all = &Coding::ALL;
        assert_eq!(wanted(&[], all), []);
        assert_eq!(wanted(&[""], all), []);
        assert_eq!(wanted(&["identity"], all), []);
        assert_eq!(wanted(&["gzip, deflate, br, zstd"], all), [Br, Zstd, Gzip]);
        assert_eq!(wanted(&["gzip, br"], &[Gzip, Br]), [Gzip, Br]);
        assert_eq!(wanted(&["br;q=0.5, gzip"], all), [Gzip, Br]);
        assert_eq!(wanted(&["gzip;q=0, br"], all), [Br]);
        assert_eq!(wanted(&["GZIP;Q=0.001"], all), [Gzip]);
        assert_eq!(wanted(&["x-gzip"], all), [Gzip]);
        assert_eq!(wanted(&["*"], all), [Br, Zstd, Gzip]);
        assert_eq!(wanted(&["*;q=0.1, zstd;q=0.2, br;q=0"], all), [Zstd, Gzip]);
        assert_eq!(wanted(&["identity;q=0"], all), []);
        assert_eq!(wanted(&["br", "gzip;q=0.9"], all), [Br, Gzip]);
        assert_eq!(wanted(&["br;q=2, gzip;q=0.5x, zstd;q=1.000"], all), [Zstd]);
        assert_eq!(wanted(&["br, gzip"], &[]), []);
    }

    #[test]
    fn qvalues() {
        assert_eq!(qvalue("1"), Some(1000));
        assert_eq!(qvalue("1.000"), Some(1000));
        assert_eq!(qvalue("0.5"), Some(500));
        assert_eq!(qvalue("0.05"), Some(50));
        assert_eq!(qvalue("0"), Some(0));
        assert_eq!(qvalue("0."), Some(0));
        assert_eq!(qvalue("1.5"), None);
        assert_eq!(qvalue("0.1234"), None);
        assert_eq!(qvalue("-0"), None);
        assert_eq!(qvalue(""), None);
    }
}
