//! An htpasswd file of bcrypt entries: the users HTTP Basic authentication
//! checks a request's credentials against. This module only reads the file;
//! checking a password is the backend's (`linux/verify.rs`), never a worker's.

use std::collections::HashMap;
use std::fmt;

/// The cost `cost()` gives when there are no entries: bcrypt's least.
const MIN_COST: u32 = 4;

/// bcrypt's highest cost.
const MAX_COST: u32 = 31;

/// The bcrypt versions accepted: what `htpasswd -B` (`$2y$`), OpenBSD
/// (`$2b$`) and older tools (`$2a$`) write.
const BCRYPT_PREFIXES: [&str; 3] = ["$2a$", "$2b$", "$2y$"];

/// bcrypt's base64 alphabet, in the order of the values it encodes.
const BCRYPT_ALPHABET: &[u8; 64] =
    b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Characters of salt and digest after `$2y$NN$`: 22 encode the 16-byte salt,
/// 31 the 23-byte digest.
const SALT_CHARS: usize = 22;
const BCRYPT_CHARS: usize = 53;

/// What to do about an entry that is not bcrypt.
const WRITE_WITH_B: &str = "write the entry with `htpasswd -B`";

/// The users of an htpasswd file: each name with its bcrypt hash.
#[derive(Clone, PartialEq, Eq)]
pub struct Users {
    /// `(name, hash)` in file order.
    entries: Vec<(String, String)>,
    /// Each name's place in `entries`.
    index: HashMap<String, usize>,
}

/// The names only: a hash never reaches a log.
impl fmt::Debug for Users {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Users")
            .field(
                "names",
                &self
                    .entries
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Users {
    /// Parses an htpasswd file's text: one `name:hash` per line (`\n` or
    /// `\r\n`), empty lines and lines starting with `#` skipped, a leading
    /// byte-order mark ignored. Only bcrypt hashes are accepted.
    ///
    /// A file without entries is not an error here: the result has no users
    /// (every check fails) and the caller decides whether to refuse it.
    ///
    /// Err: every problem as `(line, column, message)`, both 1-based, the
    /// column counted in characters: where the hash starts, or the name for
    /// a problem with the name. A message never quotes the hash, which may be
    /// a plain-text password.
    pub fn parse(text: &str) -> Result<Users, Vec<(usize, usize, String)>> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut users = Users {
            entries: Vec::new(),
            index: HashMap::new(),
        };
        let mut lines_of: HashMap<&str, usize> = HashMap::new();
        let mut errors = Vec::new();
        for (number, line) in text.split('\n').enumerate().map(|(i, l)| (i + 1, l)) {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, hash)) = line.split_once(':') else {
                errors.push((
                    number,
                    1,
                    "no `:` on this line; each line is `name:hash`".to_string(),
                ));
                continue;
            };
            let mut good = true;
            if let Some(why) = bad_name(name) {
                errors.push((number, 1, why));
                good = false;
            } else if let Some(&first) = lines_of.get(name) {
                errors.push((
                    number,
                    1,
                    format!("`{name}` is listed already on line {first}; list each name once"),
                ));
                good = false;
            }
            if let Err(why) = bcrypt_cost(hash) {
                errors.push((number, name.chars().count() + 2, why));
                good = false;
            }
            lines_of.entry(name).or_insert(number);
            if good {
                users.index.insert(name.to_string(), users.entries.len());
                users.entries.push((name.to_string(), hash.to_string()));
            }
        }
        if errors.is_empty() {
            Ok(users)
        } else {
            Err(errors)
        }
    }

    /// The bcrypt hash of `user`, if listed.
    pub fn hash(&self, user: &str) -> Option<&str> {
        self.index.get(user).map(|&i| self.entries[i].1.as_str())
    }

    /// How many users are listed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no user is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The highest bcrypt cost among the entries, 4 (bcrypt's least) when
    /// there are none: the cost of the stand-in hash an unknown user is
    /// checked against, so the time does not tell the two apart.
    pub fn cost(&self) -> u32 {
        self.entries
            .iter()
            .filter_map(|(_, hash)| bcrypt_cost(hash).ok())
            .max()
            .unwrap_or(MIN_COST)
    }
}

/// What is wrong with a user name, if anything (it has no `:`: the line was
/// split at the first).
fn bad_name(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("the name before the `:` is empty".to_string())
    } else if name.chars().any(char::is_control) {
        Some("the name holds a control character; a name is printable text".to_string())
    } else {
        None
    }
}

/// The cost of a bcrypt hash as htpasswd writes it, or what the hash is
/// instead and what to do, one line.
fn bcrypt_cost(hash: &str) -> Result<u32, String> {
    let Some(rest) = BCRYPT_PREFIXES
        .iter()
        .find_map(|prefix| hash.strip_prefix(prefix))
    else {
        return Err(not_bcrypt(hash));
    };
    let refuse = |what: String| Err(format!("a malformed bcrypt hash: {what}; {WRITE_WITH_B}"));
    let cost = match rest.as_bytes() {
        [tens @ b'0'..=b'9', ones @ b'0'..=b'9', b'$', ..] => {
            u32::from(tens - b'0') * 10 + u32::from(ones - b'0')
        }
        _ => return refuse("the cost is not two digits and a `$`".to_string()),
    };
    if !(MIN_COST..=MAX_COST).contains(&cost) {
        return refuse(format!(
            "the cost is {cost}, outside bcrypt's {MIN_COST:02} to {MAX_COST}"
        ));
    }
    let body = &rest.as_bytes()[3..];
    if let Some(at) = body.iter().position(|b| !BCRYPT_ALPHABET.contains(b)) {
        if body[at..].iter().all(u8::is_ascii_whitespace) {
            return refuse("whitespace after the hash".to_string());
        }
        return refuse(format!(
            "character {} after the cost is not in bcrypt's alphabet `./A-Za-z0-9`",
            at + 1
        ));
    }
    if body.len() != BCRYPT_CHARS {
        return refuse(format!(
            "{} characters after the cost, where bcrypt has {BCRYPT_CHARS} (salt and digest)",
            body.len()
        ));
    }
    // The last character of the salt carries 2 bits, of the digest 4: the
    // rest are zero in every hash bcrypt writes, and a verifier refuses others.
    if value(body[SALT_CHARS - 1]) & 0b1111 != 0 || value(body[BCRYPT_CHARS - 1]) & 0b11 != 0 {
        return refuse("its salt or digest ends in a character bcrypt never writes".to_string());
    }
    Ok(cost)
}

/// The value of a character of bcrypt's alphabet.
fn value(c: u8) -> u8 {
    BCRYPT_ALPHABET.iter().position(|&a| a == c).unwrap_or(0) as u8
}

/// What a hash that is not bcrypt is, and what to do, one line.
fn not_bcrypt(hash: &str) -> String {
    let scheme = if hash.is_empty() {
        return format!("no hash after the `:`; {WRITE_WITH_B}");
    } else if hash.starts_with("$2x$") {
        "a `$2x$` hash (crypt_blowfish's mark for hashes made with its 8-bit bug)"
    } else if hash.starts_with("$2$") {
        "a `$2$` hash (the first bcrypt, without a minor version)"
    } else if hash.starts_with("$apr1$") {
        "Apache MD5 (`htpasswd -m`)"
    } else if hash.starts_with("{SHA}") {
        "SHA-1 (`htpasswd -s`)"
    } else if hash.starts_with("$1$") {
        "MD5-crypt"
    } else if hash.starts_with("$5$") {
        "SHA-256-crypt"
    } else if hash.starts_with("$6$") {
        "SHA-512-crypt"
    } else if hash.starts_with("$argon2") {
        "argon2"
    } else if hash.starts_with("$y$") {
        "yescrypt"
    } else if hash.len() == 13 && hash.bytes().all(|b| BCRYPT_ALPHABET.contains(&b)) {
        "DES crypt (`htpasswd -d`)"
    } else {
        return format!(
            "not a bcrypt hash (a plain-text password is not accepted either); {WRITE_WITH_B}"
        );
    };
    format!("{scheme}, which is not accepted: only bcrypt; {WRITE_WITH_B}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `htpasswd -nbB -C 5 alice 'correct horse'`.
    const ALICE: &str = "$2y$05$2oQluJ7R/wJx4mo0.J4rs.sIOcoVKLLLWYdHaspUzdg7Vi2.cKbLy";
    /// `htpasswd -nbB bob 'battery staple'` (htpasswd's default cost, 5).
    const BOB: &str = "$2y$05$PhCdIlvA1wS3MvNwTMeLAeMNraKo8IHK57hQICN6jCvvvDjxljwVq";
    /// `htpasswd -nbB -C 4 gina 'p:w'`.
    const GINA: &str = "$2y$04$xLc5mThb714V4kssFBTYGuFaBe9UdApT92F/RvGAeLxgANLxT5v26";

    /// The one error of a file of one line.
    fn error(line: &str) -> (usize, usize, String) {
        let mut errors = Users::parse(line).expect_err(line);
        assert_eq!(errors.len(), 1, "{errors:?}");
        errors.remove(0)
    }

    #[test]
    fn entries_in_file_order() {
        let text = format!("# users\nalice:{ALICE}\n\r\nbob:{BOB}\r\n\n#gina:x\ngina:{GINA}");
        let users = Users::parse(&text).unwrap();
        assert_eq!(users.len(), 3);
        assert!(!users.is_empty());
        assert_eq!(users.hash("alice"), Some(ALICE));
        assert_eq!(users.hash("bob"), Some(BOB));
        assert_eq!(users.hash("gina"), Some(GINA));
        assert_eq!(users.hash("#gina"), None);
        assert_eq!(users.hash("Alice"), None);
        assert_eq!(users.cost(), 5);
        let names: Vec<_> = users.entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["alice", "bob", "gina"]);
    }

    #[test]
    fn versions_and_costs() {
        for prefix in ["$2a$", "$2b$", "$2y$"] {
            let hash = ALICE.replacen("$2y$", prefix, 1);
            let users = Users::parse(&format!("alice:{hash}\n")).unwrap();
            assert_eq!(users.hash("alice"), Some(hash.as_str()));
        }
        let costly = ALICE.replacen("$05$", "$31$", 1);
        let users = Users::parse(&format!("a:{costly}\nb:{GINA}\n")).unwrap();
        assert_eq!(users.cost(), 31);
    }

    #[test]
    fn no_users_is_not_an_error() {
        for text in ["", "\n", "# nobody yet\n", "\u{feff}", "\r\n\r\n"] {
            let users = Users::parse(text).unwrap();
            assert!(users.is_empty());
            assert_eq!(users.len(), 0);
            assert_eq!(users.cost(), 4);
        }
    }

    #[test]
    fn byte_order_mark() {
        let users = Users::parse(&format!("\u{feff}alice:{ALICE}")).unwrap();
        assert_eq!(users.hash("alice"), Some(ALICE));
    }

    #[test]
    fn names() {
        // Split at the first `:`; anything but a control character is a name.
        let users = Users::parse(&format!("Élodie Ω:{ALICE}\n")).unwrap();
        assert_eq!(users.hash("Élodie Ω"), Some(ALICE));
        let (line, column, message) = error(&format!(":{ALICE}"));
        assert_eq!((line, column), (1, 1));
        assert!(
            message.contains("name before the `:` is empty"),
            "{message}"
        );
        let (_, column, message) = error(&format!("al\tice:{ALICE}"));
        assert_eq!(column, 1);
        assert!(message.contains("control character"), "{message}");
        let (_, column, message) = error("alice");
        assert_eq!(column, 1);
        assert!(message.contains("no `:`"), "{message}");
    }

    #[test]
    fn a_name_twice_is_an_error_at_its_second_line() {
        let text = format!("alice:{ALICE}\nbob:{BOB}\n\nalice:{GINA}\n");
        assert_eq!(
            Users::parse(&text).unwrap_err(),
            [(
                4,
                1,
                "`alice` is listed already on line 1; list each name once".to_string()
            )]
        );
    }

    #[test]
    fn every_problem_is_reported() {
        let text = format!("alice:{ALICE}\nbob:secret\n:x\ncarol:$apr1$a$b\nalice:{ALICE}\n");
        let places: Vec<_> = Users::parse(&text)
            .unwrap_err()
            .into_iter()
            .map(|(line, column, _)| (line, column))
            .collect();
        assert_eq!(places, [(2, 5), (3, 1), (3, 2), (4, 7), (5, 1)]);
    }

    #[test]
    fn the_column_counts_characters() {
        let (line, column, _) = error("\n# x\nÉlodie:secret");
        assert_eq!((line, column), (3, 8));
    }

    #[test]
    fn other_schemes_are_named() {
        let cases = [
            ("carol:$apr1$iwZWYIqa$y6in4upd1y9NNeo.5Uk5k/", "Apache MD5 (`htpasswd -m`), which is not accepted: only bcrypt; write the entry with `htpasswd -B`"),
            ("dave:{SHA}EfatjsUqKYSrqv18O1FlA3hcIHI=", "SHA-1"),
            ("eve:$1$saltsalt$qjXMvbEw8oaL.CzflDugX/", "MD5-crypt"),
            ("eve:$5$saltsalt$Gcm6FsVtF/Qa77ZKD.iwsJlCVPY0XSMgLJL0Hnww/c1", "SHA-256-crypt"),
            ("eve:$6$saltsalt$qFmFH.bQmmtXzyBY0s9v7Oicd2z4XSIecDzlB5KiA2/jctKu9YterLp8wwnSq.qc.eoxqOmSuNp2xS0ktL3nh/", "SHA-512-crypt"),
            ("eve:$argon2id$v=19$m=65536,t=2,p=1$c2FsdHNhbHQ$ZXhhbXBsZQ", "argon2"),
            ("eve:$y$j9T$salt$hash", "yescrypt"),
            ("eve:a1iGXyH5hmQvU", "DES crypt (`htpasswd -d`)"),
            (&format!("eve:{}", ALICE.replacen("$2y$", "$2x$", 1)), "`$2x$`"),
            ("eve:$2$05$abc", "`$2$`"),
            ("frank:x", "not a bcrypt hash"),
            ("frank:correct horse battery staple", "not a bcrypt hash"),
            ("frank:", "no hash after the `:`"),
        ];
        for (line, what) in cases {
            let (_, column, message) = error(line);
            assert_eq!(column, line.find(':').unwrap() + 2, "{line}");
            assert!(message.contains(what), "{line}: {message}");
            assert!(
                message.ends_with("write the entry with `htpasswd -B`"),
                "{message}"
            );
            let hash = &line[line.find(':').unwrap() + 1..];
            assert!(hash.len() < 4 || !message.contains(hash), "{message}");
        }
    }

    #[test]
    fn malformed_bcrypt() {
        let cases = [
            (ALICE.replacen("$05$", "$5$", 1), "cost is not two digits"),
            (ALICE.replacen("$05$", "$03$", 1), "the cost is 3, outside"),
            (ALICE.replacen("$05$", "$32$", 1), "the cost is 32, outside"),
            (ALICE.replacen("$05$", "$05", 1), "cost is not two digits"),
            (format!("{ALICE} "), "whitespace after the hash"),
            (format!("{ALICE}\r\r"), "whitespace after the hash"),
            (
                ALICE[..ALICE.len() - 1].to_string(),
                "52 characters after the cost",
            ),
            (format!("{ALICE}a"), "54 characters after the cost"),
            (
                ALICE.replacen("Vi2", "Vi+", 1),
                "character 47 after the cost is not in",
            ),
            (ALICE.replacen("4rs.", "4rsA", 1), "bcrypt never writes"),
            (ALICE.replacen("KbLy", "KbLz", 1), "bcrypt never writes"),
        ];
        for (hash, what) in cases {
            let (line, column, message) = error(&format!("alice:{hash}"));
            assert_eq!((line, column), (1, 7), "{hash}");
            assert!(
                message.starts_with("a malformed bcrypt hash: "),
                "{message}"
            );
            assert!(message.contains(what), "{hash}: {message}");
        }
    }

    #[test]
    fn debug_shows_names_only() {
        let users = Users::parse(&format!("alice:{ALICE}\nbob:{BOB}")).unwrap();
        let shown = format!("{users:?}");
        assert_eq!(shown, r#"Users { names: ["alice", "bob"] }"#);
        assert!(!format!("{users:#?}").contains("$2y$"));
    }
}
