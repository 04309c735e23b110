//! Lake texts made from wire texts without Python: each kind takes only text whose lake text it can
//! tell exactly, and leaves the rest (`None`) to the column's Python function, which decides.
//!
//! Every kind here stands for what `cdclake.schema.lake.value_text_function` makes of what the format's
//! converter (Canal-JSON's `cdclake.formats.canal_json.values`, Simple's `cdclake.formats.simple.fast_path`,
//! the Open Protocol's `cdclake.formats.open_protocol.values`) makes of the text;
//! tests/formats/test_canal_native.py, test_simple_native.py and test_open_native.py hold the two to the
//! same output.

use std::borrow::Cow;

use base64::Engine;

/// How a column's wire texts become lake texts.
pub enum Kind {
    /// The text itself (char ... longtext, json, vector).
    Text,
    /// Canonical digits (no sign but a minus, no leading zero, not `-0`) in `low..=high`: the same text.
    Integer { low: i128, high: i128 },
    /// Canonical plain decimal digits (`-?(0|[1-9][0-9]*)(\.[0-9]+)?`): the same text.
    Decimal,
    /// A decimal number (`-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`) whose float64, or float32 where
    /// `single`, is finite: the shortest text that reads back as the same float64, the closest of
    /// those (ties to even), in plain notation: `cdclake.values.format_float`'s, from Python's `repr`.
    Real { single: bool },
    /// `YYYY-MM-DD`, a real day of years 1 to 9999: the same text.
    Date,
    /// `YYYY-MM-DD HH:MM:SS[.f{1,6}]` (TIMESTAMP in UTC too): with six fraction digits.
    DateTime,
    /// `HH:MM:SS[.f{1,6}]` (hours up to 99): with six fraction digits.
    Time,
    /// A TIMESTAMP's UTC wall clock, `YYYY-MM-DD HH:MM:SS[.f{1,6}]`: with six fraction digits. (A
    /// kind of its own: the Simple protocol writes it in an object, and only there.)
    Timestamp,
    /// ISO-8859-1 characters, one per byte (Canal-JSON's binary text): the bytes in standard base64.
    Latin1Binary,
    /// The bytes in standard base64 as Go writes them (Simple's binary text, Open Protocol's BLOB): the
    /// same text.
    Base64Binary,
    /// UTF-8 text in standard base64 (Open Protocol's TEXT): the text.
    Base64Text,
    /// Go's `strconv.Quote` of the bytes without its quotes (Open Protocol's binary CHAR and VARCHAR):
    /// the bytes in standard base64.
    GoQuotedBinary,
    /// An ENUM's 1-based index in canonical digits (0 for MySQL's `''`): the member's name.
    EnumIndex { members: Vec<String> },
    /// A SET's bitmask in canonical digits, no bit beyond the members: the names of its members, joined by `,`.
    SetBits { members: Vec<String> },
    /// Every value through the column's Python function.
    Python,
}

impl Kind {
    /// The kind a code of `cdclake.spark.native_rows` names; `low` and `high` bound an integer, `members`
    /// are an ENUM's or a SET's.
    pub fn from_code(code: &str, low: i128, high: i128, members: Vec<String>) -> Option<Kind> {
        Some(match code {
            "text" => Kind::Text,
            "integer" => Kind::Integer { low, high },
            "decimal" => Kind::Decimal,
            "float" => Kind::Real { single: true },
            "double" => Kind::Real { single: false },
            "date" => Kind::Date,
            "datetime" => Kind::DateTime,
            "time" => Kind::Time,
            "timestamp" => Kind::Timestamp,
            "latin1-binary" => Kind::Latin1Binary,
            "base64-binary" => Kind::Base64Binary,
            "base64-text" => Kind::Base64Text,
            "go-quoted-binary" => Kind::GoQuotedBinary,
            "enum-index" => Kind::EnumIndex { members },
            "set-bits" if members.len() <= 64 => Kind::SetBits { members },
            "python" => Kind::Python,
            _ => return None,
        })
    }

    /// The lake text of `raw`, or None where Python must decide.
    pub fn text<'a>(&self, raw: &'a str) -> Option<Cow<'a, str>> {
        match self {
            Kind::Text => Some(Cow::Borrowed(raw)),
            Kind::Integer { low, high } => integer(raw, *low, *high).then_some(Cow::Borrowed(raw)),
            Kind::Decimal => decimal(raw).then_some(Cow::Borrowed(raw)),
            Kind::Real { single } => real(raw, *single).map(Cow::Owned),
            Kind::EnumIndex { members } => enum_member(raw, members).map(Cow::Owned),
            Kind::SetBits { members } => set_members(raw, members).map(Cow::Owned),
            Kind::Date => date(raw.as_bytes()).then_some(Cow::Borrowed(raw)),
            Kind::DateTime | Kind::Timestamp => datetime(raw).map(Cow::Owned),
            Kind::Time => duration(raw).map(Cow::Owned),
            Kind::Latin1Binary => latin1_base64(raw).map(Cow::Owned),
            Kind::Base64Binary => canonical_base64(raw).then_some(Cow::Borrowed(raw)),
            Kind::Base64Text => base64_text(raw).map(Cow::Owned),
            Kind::GoQuotedBinary => go_unquote(raw)
                .map(|bytes| Cow::Owned(base64::engine::general_purpose::STANDARD.encode(bytes))),
            Kind::Python => None,
        }
    }
}

/// Digits without a leading zero, after an optional minus; not `-0`.
fn canonical_digits(digits: &[u8], negative: bool) -> bool {
    match digits {
        [] => false,
        [b'0'] => !negative,
        [b'0', ..] => false,
        _ => digits.iter().all(u8::is_ascii_digit),
    }
}

fn integer(raw: &str, low: i128, high: i128) -> bool {
    let (negative, digits) = match raw.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    // 38 digits always fit an i128; longer ones Python reads.
    if digits.len() > 38 || !canonical_digits(digits.as_bytes(), negative) {
        return false;
    }
    matches!(raw.parse::<i128>(), Ok(value) if low <= value && value <= high)
}

fn enum_member(raw: &str, members: &[String]) -> Option<String> {
    let count = i128::try_from(members.len()).ok()?;
    if !integer(raw, 0, count) {
        return None;
    }
    let index: usize = raw.parse().ok()?;
    Some(
        index
            .checked_sub(1)
            .map_or_else(String::new, |at| members[at].clone()),
    )
}

fn set_members(raw: &str, members: &[String]) -> Option<String> {
    let high = (1i128 << members.len()) - 1;
    if !integer(raw, 0, high) {
        return None;
    }
    let bits: u64 = raw.parse().ok()?;
    let named: Vec<&str> = (0..members.len())
        .filter(|at| bits >> at & 1 == 1)
        .map(|at| members[at].as_str())
        .collect();
    Some(named.join(","))
}

fn decimal(raw: &str) -> bool {
    let unsigned = raw.strip_prefix('-').unwrap_or(raw);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (unsigned, None),
    };
    // Python's Decimal keeps the sign of a zero ("-0.0" stays "-0.0"): a minus before 0 is canonical here.
    let whole_ok = canonical_digits(whole.as_bytes(), false);
    whole_ok && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

fn real(raw: &str, single: bool) -> Option<String> {
    let unsigned = raw.strip_prefix('-').unwrap_or(raw);
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, Some(exponent)),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, "0"));
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    if !(digits(whole) && digits(fraction) && exponent_ok) {
        return None;
    }
    let value: f64 = raw.parse().ok()?;
    // Rounded as C's (float) cast and Python's struct.pack("<f") round: to nearest, overflowing to inf.
    #[allow(clippy::cast_possible_truncation)]
    let value = if single {
        f64::from(value as f32)
    } else {
        value
    };
    value
        .is_finite()
        .then(|| plain(ryu::Buffer::new().format_finite(value)))
}

/// A float's text (`-1.25e-7`, `1e20`, `0.5`) in plain notation without a needless zero (`-0.000000125`,
/// `100000000000000000000`, `0.5`; `1.0` as `1`).
fn plain(text: &str) -> String {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match text.split_once('e') {
        Some((mantissa, exponent)) => (
            mantissa,
            exponent.parse::<i64>().expect("ryu writes an exponent"),
        ),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The digits, and where the point falls among them.
    let digits = format!("{whole}{fraction}");
    let mut point = i64::try_from(whole.len()).expect("short") + exponent;
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let digits = digits.trim_start_matches('0').trim_end_matches('0');
    point -= i64::try_from(leading).expect("short");
    let mut plain = String::from(if negative { "-" } else { "" });
    if digits.is_empty() {
        plain.push('0');
        return plain;
    }
    let count = i64::try_from(digits.len()).expect("short");
    if point <= 0 {
        plain.push_str("0.");
        plain.extend(std::iter::repeat_n(
            '0',
            usize::try_from(-point).expect("small"),
        ));
        plain.push_str(digits);
    } else if point >= count {
        plain.push_str(digits);
        plain.extend(std::iter::repeat_n(
            '0',
            usize::try_from(point - count).expect("small"),
        ));
    } else {
        let at = usize::try_from(point).expect("small");
        plain.push_str(&digits[..at]);
        plain.push('.');
        plain.push_str(&digits[at..]);
    }
    plain
}

fn number(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |total, &b| {
        b.is_ascii_digit().then(|| total * 10 + u32::from(b - b'0'))
    })
}

fn date(text: &[u8]) -> bool {
    if text.len() != 10 || text[4] != b'-' || text[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (number(&text[..4]), number(&text[5..7]), number(&text[8..]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    year >= 1 && (1..=days).contains(&day)
}

fn datetime(raw: &str) -> Option<String> {
    let text = raw.as_bytes();
    if text.len() < 19 || !date(&text[..10]) || text[10] != b' ' {
        return None;
    }
    let fraction = time(&text[11..])?;
    if number(&text[11..13])? > 23 {
        return None;
    }
    Some(six_digit_fraction(&raw[..19], fraction))
}

/// The fraction's digits of `HH:MM:SS[.f{1,6}]` (minutes and seconds below 60), or None.
fn time(text: &[u8]) -> Option<&[u8]> {
    if text.len() < 8 || text[2] != b':' || text[5] != b':' {
        return None;
    }
    let (_, minute, second) = (
        number(&text[..2])?,
        number(&text[3..5])?,
        number(&text[6..8])?,
    );
    if minute > 59 || second > 59 {
        return None;
    }
    match &text[8..] {
        [] => Some(&[][..]),
        [b'.', digits @ ..]
            if (1..=6).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit) =>
        {
            Some(digits)
        }
        _ => None,
    }
}

/// A TIME's lake text (`format_time(value, 6)` of the decoders' value): `[-]H{1,3}:MM:SS[.f{1,6}]`,
/// minutes and seconds below 60, as `[-]HH:MM:SS.ffffff` with hours of two digits or more and no sign
/// on a zero; anything else the decoders read.
fn duration(raw: &str) -> Option<String> {
    let (negative, text) = match raw.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        text => (false, text),
    };
    let colon = text.iter().position(|&b| b == b':')?;
    if !(1..=3).contains(&colon) || text.len() - colon < 6 || text[colon + 3] != b':' {
        return None;
    }
    let (hours, minute, second) = (
        number(&text[..colon])?,
        number(&text[colon + 1..colon + 3])?,
        number(&text[colon + 4..colon + 6])?,
    );
    if minute > 59 || second > 59 {
        return None;
    }
    let fraction = match &text[colon + 6..] {
        [] => &[][..],
        [b'.', digits @ ..]
            if (1..=6).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit) =>
        {
            digits
        }
        _ => return None,
    };
    let zero = hours == 0 && minute == 0 && second == 0 && fraction.iter().all(|&b| b == b'0');
    let sign = if negative && !zero { "-" } else { "" };
    let whole = format!("{sign}{hours:02}:{minute:02}:{second:02}");
    Some(six_digit_fraction(&whole, fraction))
}

/// `whole` and the fraction's digits, padded to six.
fn six_digit_fraction(whole: &str, fraction: &[u8]) -> String {
    let mut lake = String::with_capacity(whole.len() + 7);
    lake.push_str(whole);
    lake.push('.');
    lake.extend(fraction.iter().map(|&b| char::from(b)));
    lake.extend(std::iter::repeat_n('0', 6 - fraction.len()));
    lake
}

fn latin1_base64(raw: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = raw
        .chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect();
    Some(base64::engine::general_purpose::STANDARD.encode(bytes?))
}

/// Padded standard base64 whose bytes encode to the same text (no stray bits in the last character).
fn canonical_base64(raw: &str) -> bool {
    let engine = &base64::engine::general_purpose::STANDARD;
    matches!(engine.decode(raw), Ok(bytes) if engine.encode(&bytes) == raw)
}

fn base64_text(raw: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(raw).ok()?;
    String::from_utf8(bytes).ok()
}

/// The bytes of Go's `strconv.Unquote` of `raw` in double quotes, or None where it fails: a bare `"`
/// or newline, an unknown escape, a `\u` of a surrogate or past U+10FFFF, an octal escape past `\377`.
fn go_unquote(raw: &str) -> Option<Vec<u8>> {
    let text = raw.as_bytes();
    let mut bytes = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let (byte, next) = match (text[at], text.get(at + 1)) {
            (b'"' | b'\n', _) => return None,
            (b'\\', Some(b'x')) => (u8::try_from(hex(text.get(at + 2..at + 4)?)?).ok()?, at + 4),
            (b'\\', Some(&escape @ (b'u' | b'U'))) => {
                let end = at + if escape == b'u' { 6 } else { 10 };
                let scalar = char::from_u32(hex(text.get(at + 2..end)?)?)?;
                let mut utf8 = [0; 4];
                bytes.extend_from_slice(scalar.encode_utf8(&mut utf8).as_bytes());
                at = end;
                continue;
            }
            (b'\\', Some(b'0'..=b'7')) => {
                let digits = text.get(at + 1..at + 4)?;
                let value = digits.iter().try_fold(0u32, |total, &digit| {
                    (b'0'..=b'7')
                        .contains(&digit)
                        .then(|| total * 8 + u32::from(digit - b'0'))
                })?;
                (u8::try_from(value).ok()?, at + 4)
            }
            (b'\\', Some(escape)) => (go_escape(*escape)?, at + 2),
            (b'\\', None) => return None,
            (byte, _) => (byte, at + 1),
        };
        bytes.push(byte);
        at = next;
    }
    Some(bytes)
}

/// The byte of Go's one-character escapes.
fn go_escape(escape: u8) -> Option<u8> {
    Some(match escape {
        b'a' => 0x07,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 0x0b,
        b'\\' | b'"' => escape,
        _ => return None,
    })
}

fn hex(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |total, &digit| {
        char::from(digit)
            .to_digit(16)
            .map(|value| total * 16 + value)
    })
}
