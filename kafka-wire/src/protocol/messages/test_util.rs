//! Shared pieces of the message tests: small proptest strategies for Kafka's field types and a
//! runner that checks `decode(encode(x)) == x` at every version of an API.

use std::fmt::Debug;

use bytes::Bytes;
use proptest::collection::{btree_map, vec, VecStrategy};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::protocol::api::Body;
use crate::protocol::error_code::ErrorCode;
use crate::protocol::tagged::TaggedFields;
use kafka_vocab::Uuid;

/// Cases per (message, version): enough to hit every gate and null, small enough that the whole
/// crate's suite stays fast.
const CASES_PER_VERSION: u32 = 64;

/// Runs `decode_body(encode_body(x, v), v) == x` for `CASES_PER_VERSION` values of `strategy(v)`
/// at every version `v` in `T::SPEC`. `source_file` (pass `file!()`) is where proptest keeps
/// failing seeds (`proptest-regressions/`), which are replayed on the next run.
pub fn round_trip_every_version<T, S>(source_file: &'static str, strategy: impl Fn(i16) -> S)
where
    T: Body + PartialEq + Debug,
    S: Strategy<Value = T>,
{
    let range = T::SPEC.versions;
    for version in range.min..=range.max {
        let config = Config { cases: CASES_PER_VERSION, source_file: Some(source_file), ..Config::default() };
        let mut runner = TestRunner::new(config);
        let result = runner.run(&strategy(version), |value| assert_round_trip(&value, version));
        if let Err(e) = result {
            panic!("{} v{version}: {e}", T::SPEC.name);
        }
    }
}

/// One round trip; fails the case with the error or the differing value.
pub fn assert_round_trip<T: Body + PartialEq + Debug>(value: &T, version: i16) -> Result<(), TestCaseError> {
    let encoded =
        Bytes::from(value.encode_body(version).map_err(|e| TestCaseError::fail(format!("encode: {e}")))?);
    let decoded =
        T::decode_body(encoded.clone(), version).map_err(|e| TestCaseError::fail(format!("decode: {e}")))?;
    prop_assert_eq!(&decoded, value);
    // A body cut short anywhere is an error (never a panic, never a shorter value).
    for cut in [encoded.len() / 2, encoded.len().saturating_sub(1)] {
        if cut < encoded.len() {
            prop_assert!(
                T::decode_body(encoded.slice(..cut), version).is_err(),
                "a {cut}-byte prefix decoded"
            );
        }
    }
    Ok(())
}

/// Decodes arbitrary bytes at every version of `T::SPEC`: any result is fine, a panic is not.
pub fn garbage_never_panics<T: Body + Debug>(source_file: &'static str) {
    let range = T::SPEC.versions;
    for version in range.min..=range.max {
        let config = Config { cases: CASES_PER_VERSION, source_file: Some(source_file), ..Config::default() };
        let result = TestRunner::new(config).run(&vec(any::<u8>(), 0..96), |input| {
            let _ = T::decode_body(Bytes::from(input), version);
            Ok(())
        });
        if let Err(e) = result {
            panic!("{} v{version}: {e}", T::SPEC.name);
        }
    }
}

/// Short strings, empty and multi-byte UTF-8 included (so byte and char lengths differ).
pub fn string() -> BoxedStrategy<String> {
    "[a-zA-Z0-9._é-]{0,10}".boxed()
}

pub fn nullable_string() -> BoxedStrategy<Option<String>> {
    proptest::option::of(string()).boxed()
}

/// A version-gated nullable string: [`nullable_string`] where the version has the field,
/// always `None` where it does not.
pub fn gated_nullable_string(present: bool) -> BoxedStrategy<Option<String>> {
    if present {
        nullable_string()
    } else {
        Just(None).boxed()
    }
}

pub fn bytes() -> BoxedStrategy<Bytes> {
    vec(any::<u8>(), 0..12).prop_map(Bytes::from).boxed()
}

pub fn uuid() -> BoxedStrategy<Uuid> {
    any::<[u8; 16]>().prop_map(Uuid).boxed()
}

pub fn error_code() -> BoxedStrategy<ErrorCode> {
    any::<i16>().prop_map(ErrorCode).boxed()
}

/// Arrays of 0–3 elements.
pub fn array<S: Strategy>(element: S) -> VecStrategy<S> {
    vec(element, 0..4)
}

/// A version-gated field: `Some` where the version has it, `None` where it does not.
pub fn gated<S>(present: bool, strategy: S) -> BoxedStrategy<Option<S::Value>>
where
    S: Strategy + 'static,
    S::Value: Clone,
{
    if present {
        strategy.prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    }
}

/// Unknown tagged fields (tags 10 and up, so they never collide with a modelled tag), only in
/// a flexible version.
pub fn tagged(flexible: bool) -> BoxedStrategy<TaggedFields> {
    if !flexible {
        return Just(TaggedFields::default()).boxed();
    }
    btree_map(10u32..300, vec(any::<u8>(), 0..6), 0..3)
        .prop_map(|m| TaggedFields::new(m.into_iter().map(|(tag, data)| (tag, Bytes::from(data))).collect()))
        .boxed()
}

#[cfg(test)]
mod tests {
    /// One module per API (`tests::ListOffsets::decoders_survive_garbage`), so each API is its
    /// own test.
    macro_rules! garbage_tests {
        ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {$(
            #[allow(non_snake_case)]
            mod $name {
                use crate::protocol::messages::test_util::garbage_never_panics;
                use crate::protocol::messages::{$req, $resp};

                #[test]
                fn decoders_survive_garbage() {
                    garbage_never_panics::<$req>(file!());
                    garbage_never_panics::<$resp>(file!());
                }
            }
        )*};
    }

    crate::for_each_api!(garbage_tests);
}
