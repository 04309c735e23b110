//! A Canal-JSON message as the row reader needs it, parsed without copying what has no escapes.
//!
//! Anything of another shape than TiCDC's row messages fails to parse (a field of another JSON type, a
//! field given twice, more in `_tidb` than the commit ts), and the Python decoder reads the message.
//! Fields the reader does not use are skipped.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

/// Whether `json` may hold a `\uD800`-`\uDFFF` escape. serde checks surrogates only in the strings it
/// reads, not in those it skips, and the Python readers refuse a lone one anywhere: such text is left
/// to them (a pair too, and the text `\\ud800`, which is no escape: rare, and Python reads them alike).
pub fn has_surrogate_escape(json: &[u8]) -> bool {
    json.windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && (w[2] | 0x20) == b'd'
            && matches!(w[3] | 0x20, b'8' | b'9' | b'a'..=b'f')
    })
}

/// The JSON message `value` read as a `T`, or None where the Python decoder must read it. The whole
/// message is checked first: serde skips the fields it does not read without checking their UTF-8 or
/// surrogates, and the decoders refuse a message with either wrong anywhere.
pub fn parse<'a, T: Deserialize<'a>>(value: &'a [u8]) -> Option<T> {
    if has_surrogate_escape(value) {
        return None;
    }
    serde_json::from_str(std::str::from_utf8(value).ok()?).ok()
}

/// A JSON string, borrowed from the message where it has no escapes.
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A column's value in a row: NULL, a string (TiCDC writes every value as one), or anything else.
pub enum Raw<'a> {
    Null,
    Text(Cow<'a, str>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RawVisitor;
        impl<'de> Visitor<'de> for RawVisitor {
            type Value = Raw<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a column value")
            }
            fn visit_unit<E>(self) -> Result<Raw<'de>, E> {
                Ok(Raw::Null)
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Raw<'de>, E> {
                Ok(Raw::Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Raw<'de>, E> {
                Ok(Raw::Text(Cow::Owned(text.to_owned())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Raw<'de>, E> {
                Ok(Raw::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Raw<'de>, E> {
                Ok(Raw::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Raw<'de>, E> {
                Ok(Raw::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Raw<'de>, E> {
                Ok(Raw::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Raw<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Raw::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Raw::Other)
            }
        }
        deserializer.deserialize_any(RawVisitor)
    }
}

/// A JSON object's members in order, duplicates kept (the reader refuses those).
pub struct Members<'a, V>(pub Vec<(Cow<'a, str>, V)>);

impl<'de: 'a, 'a, V: Deserialize<'de>> Deserialize<'de> for Members<'a, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for MembersVisitor<V> {
            type Value = Members<'de, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de, V>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
                    members.push((name, map.next_value::<V>()?));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor(std::marker::PhantomData))
    }
}

pub type Row<'a> = Members<'a, Raw<'a>>;

/// The TiDB extension of a row message that is not a large message's reference: the commit ts alone.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tidb {
    #[serde(rename = "commitTs")]
    pub commit_ts: u64,
}

/// The fields of a message the row reader reads.
#[derive(Deserialize)]
pub struct Message<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Text<'a>>,
    #[serde(rename = "isDdl")]
    pub is_ddl: Option<bool>,
    #[serde(borrow)]
    pub database: Option<Text<'a>>,
    #[serde(borrow)]
    pub table: Option<Text<'a>>,
    #[serde(rename = "pkNames", borrow)]
    pub pk_names: Option<Vec<Text<'a>>>,
    #[serde(rename = "mysqlType", borrow)]
    pub mysql_type: Option<Members<'a, Text<'a>>>,
    #[serde(borrow)]
    pub data: Option<Vec<Row<'a>>>,
    #[serde(borrow)]
    pub old: Option<Vec<Option<Row<'a>>>>,
    #[serde(rename = "_tidb")]
    pub tidb: Option<Tidb>,
}
