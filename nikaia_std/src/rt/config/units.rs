//! Sizes and durations as the runtime file writes them: `"64KiB"`, `"10s"`.

use std::time::Duration;

/// Size units, largest first; all binary and case-sensitive.
const SIZE_UNITS: [(&str, u64); 6] = [
    ("PiB", 1 << 50),
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("B", 1),
];

/// Duration units in milliseconds, largest first.
const DURATION_UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

/// What a size looks like, for error messages.
pub(super) const SIZE_FORMS: &str =
    "an integer in bytes, or a string of digits with an optional unit B, KiB, MiB, GiB, TiB or PiB";

/// What a duration looks like, for error messages.
pub(super) const DURATION_FORMS: &str = "a string of digits and a unit ms, s, m or h";

/// Parses a size string: digits, then an optional unit (`B`, `KiB`, `MiB`,
/// `GiB`). The error is a sentence for the operator.
pub(super) fn parse_size(text: &str) -> Result<u64, String> {
    if text.starts_with('-') {
        return Err(format!("a size cannot be negative, found \"{text}\""));
    }
    if let Some(why) = not_whole(text) {
        return Err(why);
    }
    let (digits, unit) = split_number(text);
    if digits.is_empty() {
        return Err(format!("\"{text}\" is not a size; expected {SIZE_FORMS}"));
    }
    let scale = if unit.is_empty() {
        1
    } else {
        match SIZE_UNITS.iter().find(|(name, _)| *name == unit) {
            Some(&(_, scale)) => scale,
            None => {
                return Err(format!(
                    "unknown size unit \"{unit}\" in \"{text}\"; the units are B, KiB, MiB, GiB, TiB and PiB \
                     (binary, case-sensitive)"
                ))
            }
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("the size \"{text}\" is too large"))
}

/// Parses a duration string: digits, then a unit (`ms`, `s`, `m`, `h`).
pub(super) fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.starts_with('-') {
        return Err(format!("a duration cannot be negative, found \"{text}\""));
    }
    if let Some(why) = not_whole(text) {
        return Err(why);
    }
    let (digits, unit) = split_number(text);
    if digits.is_empty() {
        return Err(format!(
            "\"{text}\" is not a duration; expected {DURATION_FORMS}, such as \"10s\""
        ));
    }
    if unit.is_empty() {
        return Err(format!(
            "the duration \"{text}\" has no unit; write \"{text}s\" or \"{text}ms\" (units: ms, s, m, h)"
        ));
    }
    let Some(&(_, millis)) = DURATION_UNITS.iter().find(|(name, _)| *name == unit) else {
        return Err(format!(
            "unknown duration unit \"{unit}\" in \"{text}\"; the units are ms, s, m and h"
        ));
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(millis))
        .map(Duration::from_millis)
        .ok_or_else(|| format!("the duration \"{text}\" is too large"))
}

/// The two near misses worth naming: a space before the unit, and a fraction.
fn not_whole(text: &str) -> Option<String> {
    if text.starts_with(|c: char| c.is_ascii_digit()) && text.contains(char::is_whitespace) {
        let joined: String = text.split_whitespace().collect();
        return Some(format!("write \"{joined}\" without spaces, not \"{text}\""));
    }
    let (_, rest) = split_number(text);
    if rest.starts_with(['.', ',']) {
        return Some(format!(
            "\"{text}\" is not a whole number; write it in a smaller unit"
        ));
    }
    None
}

/// Splits `"64KiB"` into `("64", "KiB")`.
fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    text.split_at(end)
}

/// Writes a byte count in the largest unit that divides it exactly:
/// `2097152` → `"2MiB"`, `1000` → `"1000B"`, `0` → `"0B"`.
pub fn format_size(bytes: u64) -> String {
    let (unit, scale) = SIZE_UNITS
        .iter()
        .find(|(_, scale)| bytes != 0 && bytes.is_multiple_of(*scale))
        .copied()
        .unwrap_or(("B", 1));
    format!("{}{unit}", bytes / scale)
}

/// Writes a duration in the largest unit that divides it exactly:
/// 30 s → `"30s"`, 90 s → `"90s"`, 2 min → `"2m"`, 0 → `"0s"`. The runtime
/// file counts in whole milliseconds, so a sub-millisecond remainder is
/// rounded up to the next millisecond.
pub fn format_duration(duration: Duration) -> String {
    let millis = u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
    if millis == 0 {
        return "0s".to_string();
    }
    let (unit, scale) = DURATION_UNITS
        .iter()
        .find(|(_, scale)| millis % scale == 0)
        .copied()
        .unwrap_or(("ms", 1));
    format!("{}{unit}", millis / scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("2TiB"), Ok(2 << 40));
        assert_eq!(parse_size("1PiB"), Ok(1 << 50));
        assert!(parse_size("1KB").is_err());
        assert!(parse_size("1kib").is_err());
        assert!(parse_size("1 KiB").is_err());
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999GiB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("10sec").is_err());
        assert!(parse_duration("1.5s").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn formatting_round_trips() {
        for bytes in [
            0,
            1,
            1000,
            1024,
            4096,
            1536,
            2 << 20,
            1 << 30,
            3 << 30,
            u64::MAX,
        ] {
            assert_eq!(parse_size(&format_size(bytes)), Ok(bytes), "{bytes}");
        }
        assert_eq!(format_size(2 << 20), "2MiB");
        assert_eq!(format_size(1536), "1536B");
        for millis in [0, 1, 250, 1000, 1500, 60_000, 90_000, 3_600_000] {
            let d = Duration::from_millis(millis);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{millis}");
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_micros(1500)), "2ms");
    }
}
