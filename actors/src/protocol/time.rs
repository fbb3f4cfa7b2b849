//! An event's time on the wire: RFC 3339 in UTC, as chrono writes it
//! (`2026-12-05T23:19:23.123456Z`: the fraction in 0, 3, 6 or 9 digits,
//! as few as hold it), written without the formatting machinery. Every
//! event a client receives carries one, so this runs once per delivered
//! event; chrono's own writer goes through `fmt` a character at a time.

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::Serializer;

/// Serialize `at` exactly as chrono's `Serialize` does.
pub fn serialize<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    let mut text = [0u8; 30];
    match write(at, &mut text) {
        // The buffer holds only ASCII digits and separators.
        Some(len) => match std::str::from_utf8(&text[..len]) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => serde::Serialize::serialize(at, serializer),
        },
        None => serde::Serialize::serialize(at, serializer),
    }
}

/// `at` into `out`, returning its length; `None` for what chrono writes
/// another way (a year outside 0–9999, a leap second).
fn write(at: &DateTime<Utc>, out: &mut [u8; 30]) -> Option<usize> {
    let year = u32::try_from(at.year()).ok().filter(|y| *y <= 9999)?;
    let nanos = at.nanosecond();
    if nanos >= 1_000_000_000 {
        return None;
    }
    let mut len = 0;
    digits_of(year, 4, out, &mut len);
    let fields: [(u8, u32); 5] = [
        (b'-', at.month()),
        (b'-', at.day()),
        (b'T', at.hour()),
        (b':', at.minute()),
        (b':', at.second()),
    ];
    for (separator, value) in fields {
        out[len] = separator;
        len += 1;
        digits_of(value, 2, out, &mut len);
    }
    let (fraction, digits) = if nanos == 0 {
        (0, 0)
    } else if nanos.is_multiple_of(1_000_000) {
        (nanos / 1_000_000, 3)
    } else if nanos.is_multiple_of(1_000) {
        (nanos / 1_000, 6)
    } else {
        (nanos, 9)
    };
    if digits > 0 {
        out[len] = b'.';
        len += 1;
        digits_of(fraction, digits, out, &mut len);
    }
    out[len] = b'Z';
    Some(len + 1)
}

/// The last `digits` decimal digits of `value`, at `out[*len..]`.
fn digits_of(value: u32, digits: u32, out: &mut [u8; 30], len: &mut usize) {
    for place in (0..digits).rev() {
        out[*len] = b'0' + (value / 10u32.pow(place) % 10) as u8;
        *len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn ours(at: &DateTime<Utc>) -> String {
        let mut out = Vec::new();
        let mut writer = serde_json::Serializer::new(&mut out);
        serialize(at, &mut writer).expect("serializes");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn it_writes_what_chrono_writes() {
        let base = Utc
            .with_ymd_and_hms(2026, 12, 5, 23, 19, 3)
            .single()
            .expect("a time");
        let mut times = vec![base, Utc::now(), DateTime::<Utc>::UNIX_EPOCH];
        for nanos in [1, 7_000, 120_000_000, 123_456_000, 999_999_999, 5_000_100] {
            times.push(base + chrono::Duration::nanoseconds(nanos));
        }
        times.push(
            Utc.with_ymd_and_hms(9999, 1, 9, 0, 0, 0)
                .single()
                .expect("a time"),
        );
        times.push(
            Utc.with_ymd_and_hms(12000, 1, 9, 0, 0, 0)
                .single()
                .expect("a time"),
        );
        for at in &times {
            let chrono = serde_json::to_string(at).expect("serializes");
            assert_eq!(ours(at), chrono, "{at:?}");
        }
        assert!(
            ours(&times[3]).ends_with(".000000001Z\""),
            "{}",
            ours(&times[3])
        );
    }
}
