//! The subject and issuer of an X.509 certificate as text (`CN=broker1,O=Example,C=DE`, most
//! specific first, as Java and RFC 4514 print them), so a refused certificate can be named in
//! the error. A minimal DER walk over the fields before the subject: every length is checked
//! against the bytes left, and anything unexpected gives `None` (the error then goes without
//! names) — never a panic, whatever the broker sent.

use std::fmt::Write as _;

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const OBJECT_IDENTIFIER: u8 = 0x06;
const EXPLICIT_VERSION: u8 = 0xa0;
const UTF8_STRING: u8 = 0x0c;
const PRINTABLE_STRING: u8 = 0x13;
const TELETEX_STRING: u8 = 0x14;
const IA5_STRING: u8 = 0x16;
const BMP_STRING: u8 = 0x1e;

/// Names longer than this many characters are cut (with `…`): an error line stays one line.
const MAX_NAME_CHARS: usize = 200;

/// Who a certificate is for and who signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertificateNames {
    pub(crate) subject: String,
    pub(crate) issuer: String,
}

/// The names of the DER certificate `der`, or `None` when it is not one this walk understands.
pub(crate) fn certificate_names(der: &[u8]) -> Option<CertificateNames> {
    let (certificate, _) = read(der, SEQUENCE)?;
    let (mut tbs, _) = read(certificate, SEQUENCE)?;
    if tbs.first() == Some(&EXPLICIT_VERSION) {
        tbs = read(tbs, EXPLICIT_VERSION)?.1;
    }
    let (_serial, rest) = read(tbs, INTEGER)?;
    let (_signature_algorithm, rest) = read(rest, SEQUENCE)?;
    let (issuer, rest) = read(rest, SEQUENCE)?;
    let (_validity, rest) = read(rest, SEQUENCE)?;
    let (subject, _) = read(rest, SEQUENCE)?;
    Some(CertificateNames { subject: name_text(subject)?, issuer: name_text(issuer)? })
}

/// The one DER element with `tag` at the start of `input`: (its contents, what follows it).
fn read(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, rest) = input.split_first()?;
    if found != tag {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (digits, rest) = rest.split_at(count);
        (digits.iter().fold(0usize, |len, digit| (len << 8) | usize::from(*digit)), rest)
    };
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// A `Name` (a sequence of sets of attribute = value) as `CN=…,O=…`, last attribute first.
fn name_text(mut rdns: &[u8]) -> Option<String> {
    let mut parts = Vec::new();
    while !rdns.is_empty() {
        let (mut set, rest) = read(rdns, SET)?;
        rdns = rest;
        while !set.is_empty() {
            let (attribute, rest) = read(set, SEQUENCE)?;
            set = rest;
            let (oid, value) = read(attribute, OBJECT_IDENTIFIER)?;
            parts.push(format!("{}={}", attribute_label(oid), value_text(value)?));
        }
    }
    parts.reverse();
    let text: String = parts.join(",").chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    Some(match text.char_indices().nth(MAX_NAME_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    })
}

/// The short label of the attributes certificates use (RFC 4514's and the e-mail address),
/// else the dotted OID.
fn attribute_label(oid: &[u8]) -> String {
    match oid {
        [0x55, 0x04, 0x03] => "CN".to_owned(),
        [0x55, 0x04, 0x05] => "SERIALNUMBER".to_owned(),
        [0x55, 0x04, 0x06] => "C".to_owned(),
        [0x55, 0x04, 0x07] => "L".to_owned(),
        [0x55, 0x04, 0x08] => "ST".to_owned(),
        [0x55, 0x04, 0x09] => "STREET".to_owned(),
        [0x55, 0x04, 0x0a] => "O".to_owned(),
        [0x55, 0x04, 0x0b] => "OU".to_owned(),
        [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01] => "EMAILADDRESS".to_owned(),
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19] => "DC".to_owned(),
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01] => "UID".to_owned(),
        other => dotted(other),
    }
}

/// An OID's contents as `1.2.840…` (base-128 arcs; the first byte holds the first two).
fn dotted(oid: &[u8]) -> String {
    let mut arcs: Vec<u64> = Vec::new();
    let mut arc = 0u64;
    for &byte in oid {
        arc = arc.saturating_mul(128).saturating_add(u64::from(byte & 0x7f));
        if byte & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (arc / 40).min(2);
                arcs.extend([first, arc - first * 40]);
            } else {
                arcs.push(arc);
            }
            arc = 0;
        }
    }
    let text: Vec<String> = arcs.iter().map(u64::to_string).collect();
    text.join(".")
}

/// An attribute value: the string types as text, anything else as `#` and its DER in hex
/// (RFC 4514's form for values it cannot show).
fn value_text(value: &[u8]) -> Option<String> {
    let &tag = value.first()?;
    Some(match tag {
        UTF8_STRING | PRINTABLE_STRING | IA5_STRING | TELETEX_STRING => {
            String::from_utf8_lossy(read(value, tag)?.0).into_owned()
        }
        BMP_STRING => {
            let units =
                read(value, tag)?.0.chunks_exact(2).map(|pair| u16::from_be_bytes([pair[0], pair[1]]));
            char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
        }
        _ => value.iter().fold(String::from("#"), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 certificate for `/C=DE/O=Kwire Ünïcode/CN=broker1.example` (UTF-8), signed by
    /// `/O=kwire/CN=kwire fixture CA` (made with `openssl req -utf8` / `openssl x509 -req`).
    const LEAF: &[u8] = include_bytes!("testdata/leaf-signed-by-fixture-ca.der");

    #[test]
    fn a_certificate_is_named_by_its_subject_and_issuer_most_specific_first() {
        let names = certificate_names(LEAF).expect("the fixture is a certificate");
        assert_eq!(names.subject, "CN=broker1.example,O=Kwire Ünïcode,C=DE");
        assert_eq!(names.issuer, "CN=kwire fixture CA,O=kwire");
    }

    #[test]
    fn every_cut_short_or_altered_certificate_is_none_or_names_never_a_panic() {
        for len in 0..LEAF.len() {
            let _ = certificate_names(&LEAF[..len]);
        }
        assert_eq!(certificate_names(&LEAF[..LEAF.len() - 1]), None, "outer length beyond the bytes");
        for at in 0..LEAF.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut altered = LEAF.to_vec();
                altered[at] ^= flip;
                let _ = certificate_names(&altered);
            }
        }
    }

    #[test]
    fn long_lengths_and_unknown_attributes_are_read_and_values_shown_safely() {
        // A length in two bytes (0x81 form) and a BMP string with a control character.
        let mut bmp = vec![BMP_STRING, 4];
        bmp.extend([0x00, b'A', 0x00, 0x07]);
        let attribute = [&[OBJECT_IDENTIFIER, 3, 0x55, 0x04, 0x03][..], &bmp].concat();
        let unknown = [&[OBJECT_IDENTIFIER, 3, 0x2a, 0x03, 0x04][..], &[0x04, 1, 0xab][..]].concat();
        let set = |inner: &[u8]| {
            let seq = [&[SEQUENCE, u8::try_from(inner.len()).unwrap()][..], inner].concat();
            [&[SET, u8::try_from(seq.len()).unwrap()][..], &seq].concat()
        };
        let rdns = [set(&unknown), set(&attribute)].concat();
        assert_eq!(name_text(&rdns).as_deref(), Some("CN=A?,1.2.3.4=#0401ab"));
        let long = [&[SEQUENCE, 0x81, 3][..], &[1, 2, 3]].concat();
        assert_eq!(read(&long, SEQUENCE), Some((&[1u8, 2, 3][..], &[][..])));
        assert_eq!(read(&[SEQUENCE, 0x85, 0, 0, 0, 0, 1], SEQUENCE), None, "more than 4 length bytes");
    }

    #[test]
    fn a_very_long_name_is_cut_to_one_line() {
        let value = vec![b'x'; 500];
        let mut attribute = vec![OBJECT_IDENTIFIER, 3, 0x55, 0x04, 0x03, UTF8_STRING, 0x82, 0x01, 0xf4];
        attribute.extend(&value);
        let mut seq = vec![SEQUENCE, 0x82, 0x01, 0xfd];
        seq.extend(&attribute);
        let mut set = vec![SET, 0x82, 0x02, 0x01];
        set.extend(&seq);
        let text = name_text(&set).expect("a name");
        assert_eq!(text.chars().count(), MAX_NAME_CHARS + 1);
        assert!(text.ends_with('…'));
    }
}
