//! The consumer protocol: the bytes a classic consumer group keeps inside the group protocol,
//! opaque to the coordinator. Each member's JoinGroup protocol metadata is a
//! [`ConsumerSubscription`]; the leader's SyncGroup carries each member's
//! [`ConsumerAssignment`] (and DescribeGroups shows both). Every member of a group whose
//! protocol type is [`PROTOCOL_TYPE`] speaks it, whichever client it runs.
//!
//! Each message is an INT16 version, then the fields of that version in the classic
//! (non-flexible) encoding: no version of either message is flexible, so there are no compact
//! lengths and no tagged fields. Kafka's own rule for versions above the ones a reader knows
//! (`ConsumerProtocol` in kafka-clients) is to read the fields it knows and ignore the rest:
//! new versions only ever append fields. [`ConsumerSubscription::decode`] and
//! [`ConsumerAssignment::decode`] do the same — a higher version is read as
//! [`VERSIONS`]`.max`, and bytes after the last field read are not an error (Kafka ignores
//! them at every version; [`Decoded::ignored_bytes`] counts them). A negative version, and any
//! field cut short or with a length beyond the input, is a [`DecodeError`] naming the field.
//!
//! ```
//! use bytes::Bytes;
//! use kafka_wire::protocol::consumer_protocol::{ConsumerSubscription, PROTOCOL_TYPE};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let subscription = ConsumerSubscription { topics: vec!["orders".into()], ..Default::default() };
//! let metadata = subscription.encode(3)?; // what JoinGroup sends for protocol type "consumer"
//! assert_eq!(PROTOCOL_TYPE, "consumer");
//!
//! let read = ConsumerSubscription::decode(Bytes::from(metadata))?;
//! assert_eq!(read.version, 3);
//! assert_eq!(read.value.topics, ["orders"]);
//! assert_eq!(read.value.generation_id, Some(-1)); // added in v2, −1 when not set
//! # Ok(())
//! # }
//! ```

use bytes::Bytes;

use super::api::VersionRange;
use super::decoder::{DecodeResult, Decoder};
use super::encoder::{EncodeResult, Encoder};
use super::error::{DecodeError, DecodeErrorKind, EncodeError};

/// The JoinGroup `protocol_type` of consumer groups.
pub const PROTOCOL_TYPE: &str = "consumer";

/// The versions kwire knows of both messages (Kafka 4.1 and 3.9 both have 0–3). Either
/// message at a higher version is read as the highest of these.
pub const VERSIONS: VersionRange = VersionRange::new(0, 3);

/// The generation id a subscription carries when the member has none (and the value of a v2+
/// field left `None`).
pub const NO_GENERATION: i32 = -1;

/// A decoded consumer-protocol message and the version its header named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<T> {
    /// The version in the message's header; may be above [`VERSIONS`]`.max`.
    pub version: i16,
    /// The fields, read at `version` or, above [`VERSIONS`]`.max`, at that highest known
    /// version ([`Decoded::read_as`]).
    pub value: T,
    /// Bytes after the last field read: a newer version's fields, or anything else Kafka's
    /// reader would skip too.
    pub ignored_bytes: usize,
}

impl<T> Decoded<T> {
    /// The version whose fields were read: the header's, capped at [`VERSIONS`]`.max`.
    pub fn read_as(&self) -> i16 {
        self.version.min(VERSIONS.max)
    }
}

/// A consumer's subscription: the JoinGroup protocol metadata of protocol type
/// [`PROTOCOL_TYPE`] (`ConsumerProtocolSubscription` v0–v3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerSubscription {
    /// The topics the member wants to consume.
    pub topics: Vec<String>,
    /// Nullable: the assignor's own data (the sticky assignor's previous assignment and
    /// generation, for one).
    pub user_data: Option<Bytes>,
    /// Added in v1 (KIP-429): the partitions the member owns now, per topic.
    pub owned_partitions: Option<Vec<ConsumerTopicPartitions>>,
    /// Added in v2 (KIP-792): the generation the member last joined, [`NO_GENERATION`] if none.
    pub generation_id: Option<i32>,
    /// Added in v3 (nullable, KIP-881): the member's rack, for rack-aware assignment.
    pub rack_id: Option<String>,
}

/// A consumer's assignment: what the leader's SyncGroup gives each member of a group of
/// protocol type [`PROTOCOL_TYPE`] (`ConsumerProtocolAssignment` v0–v3, all four the same
/// fields).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerAssignment {
    /// The partitions assigned to the member, per topic.
    pub assigned_partitions: Vec<ConsumerTopicPartitions>,
    /// Nullable: the assignor's own data.
    pub user_data: Option<Bytes>,
}

/// Partitions of one topic, by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerTopicPartitions {
    /// The topic name.
    pub topic: String,
    /// The partition ids.
    pub partitions: Vec<i32>,
}

/// A topic name (an INT16 length) and a partition count (INT32).
const TOPIC_PARTITIONS_MIN: usize = 6;

fn check_encode(message: &'static str, version: i16) -> EncodeResult {
    if VERSIONS.contains(version) {
        Ok(())
    } else {
        Err(EncodeError::UnsupportedVersion { api: message, version })
    }
}

/// Reads the header: the version, refused when negative.
fn read_version(d: &mut Decoder, message: &'static str) -> DecodeResult<i16> {
    let version = d.i16("version")?;
    if version < VERSIONS.min {
        return Err(DecodeError::new(
            DecodeErrorKind::UnsupportedVersion { api: message, version },
            "version",
            0,
        ));
    }
    Ok(version)
}

fn write_topic_partitions(
    e: &mut Encoder,
    topics: &[ConsumerTopicPartitions],
    field: &'static str,
    topic: &'static str,
    partitions: &'static str,
) -> EncodeResult {
    e.array(topics, field, |e, t| {
        e.string(&t.topic, topic)?;
        e.i32_array(&t.partitions, partitions)
    })
}

fn read_topic_partitions(
    d: &mut Decoder,
    field: &'static str,
    topic: &'static str,
    partitions: &'static str,
) -> DecodeResult<Vec<ConsumerTopicPartitions>> {
    d.array(field, TOPIC_PARTITIONS_MIN, |d| {
        Ok(ConsumerTopicPartitions { topic: d.string(topic)?, partitions: d.i32_array(partitions)? })
    })
}

impl ConsumerSubscription {
    /// Kafka's name for the message, used in errors.
    pub const NAME: &'static str = "ConsumerProtocolSubscription";

    /// The version header and the fields of `version` (one of [`VERSIONS`]). Fields the
    /// version lacks are not written; a field it has left `None` is written as Kafka's default
    /// (no owned partitions, [`NO_GENERATION`], a null rack).
    pub fn encode(&self, version: i16) -> Result<Vec<u8>, EncodeError> {
        check_encode(Self::NAME, version)?;
        let mut e = Encoder::new(false);
        e.i16(version);
        e.array(&self.topics, "topics", |e, t| e.string(t, "topics"))?;
        e.nullable_bytes(self.user_data.as_deref(), "user_data")?;
        if version >= 1 {
            write_topic_partitions(
                &mut e,
                self.owned_partitions.as_deref().unwrap_or_default(),
                "owned_partitions",
                "owned_partitions.topic",
                "owned_partitions.partitions",
            )?;
        }
        if version >= 2 {
            e.i32(self.generation_id.unwrap_or(NO_GENERATION));
        }
        if version >= 3 {
            e.nullable_string(self.rack_id.as_deref(), "rack_id")?;
        }
        Ok(e.into_inner())
    }

    /// Reads a subscription of any version: see the [module](self) documentation for higher
    /// versions and the bytes after the last field.
    pub fn decode(bytes: Bytes) -> DecodeResult<Decoded<Self>> {
        let mut d = Decoder::new(bytes);
        let version = read_version(&mut d, Self::NAME)?;
        let read_as = version.min(VERSIONS.max);
        let topics = d.array("topics", 2, |d| d.string("topics"))?;
        let user_data = d.nullable_bytes("user_data")?;
        let owned_partitions = if read_as >= 1 {
            Some(read_topic_partitions(
                &mut d,
                "owned_partitions",
                "owned_partitions.topic",
                "owned_partitions.partitions",
            )?)
        } else {
            None
        };
        let generation_id = if read_as >= 2 { Some(d.i32("generation_id")?) } else { None };
        let rack_id = if read_as >= 3 { d.nullable_string("rack_id")? } else { None };
        let value = Self { topics, user_data, owned_partitions, generation_id, rack_id };
        Ok(Decoded { version, value, ignored_bytes: d.remaining() })
    }
}

impl ConsumerAssignment {
    /// Kafka's name for the message, used in errors.
    pub const NAME: &'static str = "ConsumerProtocolAssignment";

    /// The version header and the fields (the same at every one of [`VERSIONS`]).
    pub fn encode(&self, version: i16) -> Result<Vec<u8>, EncodeError> {
        check_encode(Self::NAME, version)?;
        let mut e = Encoder::new(false);
        e.i16(version);
        write_topic_partitions(
            &mut e,
            &self.assigned_partitions,
            "assigned_partitions",
            "assigned_partitions.topic",
            "assigned_partitions.partitions",
        )?;
        e.nullable_bytes(self.user_data.as_deref(), "user_data")?;
        Ok(e.into_inner())
    }

    /// Reads an assignment of any version: see the [module](self) documentation for higher
    /// versions and the bytes after the last field.
    pub fn decode(bytes: Bytes) -> DecodeResult<Decoded<Self>> {
        let mut d = Decoder::new(bytes);
        let version = read_version(&mut d, Self::NAME)?;
        let assigned_partitions = read_topic_partitions(
            &mut d,
            "assigned_partitions",
            "assigned_partitions.topic",
            "assigned_partitions.partitions",
        )?;
        let user_data = d.nullable_bytes("user_data")?;
        let value = Self { assigned_partitions, user_data };
        Ok(Decoded { version, value, ignored_bytes: d.remaining() })
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;

    /// Random bodies kafka-clients 4.1.1 wrote with its generated `ConsumerProtocolSubscription`
    /// and `ConsumerProtocolAssignment` classes, 4 per version: `<Name> <version> <hex>`, the hex
    /// version-prefixed as `ConsumerProtocol` writes it (`KafkaOracle consumer-protocol 4
    /// 20251129`; kafka-clients 3.9.1 writes the same bytes).
    const KAFKA_4_1: &str = include_str!("messages/testdata/kafka-4.1.1-consumer-protocol.txt");

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
    }

    fn string() -> BoxedStrategy<String> {
        "[a-zA-Z0-9._é-]{0,10}".boxed()
    }

    fn user_data() -> BoxedStrategy<Option<Bytes>> {
        proptest::option::of(vec(any::<u8>(), 0..12).prop_map(Bytes::from)).boxed()
    }

    fn topic_partitions() -> BoxedStrategy<Vec<ConsumerTopicPartitions>> {
        vec((string(), vec(any::<i32>(), 0..4)), 0..4)
            .prop_map(|ts| {
                ts.into_iter()
                    .map(|(topic, partitions)| ConsumerTopicPartitions { topic, partitions })
                    .collect()
            })
            .boxed()
    }

    fn subscription(v: i16) -> BoxedStrategy<ConsumerSubscription> {
        let owned = if v >= 1 { topic_partitions().prop_map(Some).boxed() } else { Just(None).boxed() };
        let generation = if v >= 2 { any::<i32>().prop_map(Some).boxed() } else { Just(None).boxed() };
        let rack = if v >= 3 { proptest::option::of(string()).boxed() } else { Just(None).boxed() };
        (vec(string(), 0..4), user_data(), owned, generation, rack)
            .prop_map(|(topics, user_data, owned_partitions, generation_id, rack_id)| ConsumerSubscription {
                topics,
                user_data,
                owned_partitions,
                generation_id,
                rack_id,
            })
            .boxed()
    }

    fn assignment() -> BoxedStrategy<ConsumerAssignment> {
        (topic_partitions(), user_data())
            .prop_map(|(assigned_partitions, user_data)| ConsumerAssignment {
                assigned_partitions,
                user_data,
            })
            .boxed()
    }

    fn run<T: std::fmt::Debug>(strategy: &BoxedStrategy<T>, test: impl Fn(T) -> Result<(), TestCaseError>) {
        let config = Config { cases: 128, source_file: Some(file!()), ..Config::default() };
        if let Err(e) = TestRunner::new(config).run(strategy, test) {
            panic!("{e}");
        }
    }

    /// Every prefix of `bytes` shorter than the fields of its version is an error.
    fn every_prefix_fails<T: std::fmt::Debug>(bytes: &[u8], decode: impl Fn(Bytes) -> DecodeResult<T>) {
        for cut in 0..bytes.len() {
            let out = decode(Bytes::copy_from_slice(&bytes[..cut]));
            assert!(out.is_err(), "a {cut}-byte prefix of {bytes:02x?} decoded: {out:?}");
        }
    }

    #[test]
    fn subscriptions_round_trip_at_every_version_and_any_cut_is_an_error() {
        for v in VERSIONS.min..=VERSIONS.max {
            run(&subscription(v), |s| {
                let bytes = s.encode(v).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let read = ConsumerSubscription::decode(Bytes::from(bytes.clone()))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(read, Decoded { version: v, value: s, ignored_bytes: 0 });
                every_prefix_fails(&bytes, ConsumerSubscription::decode);
                Ok(())
            });
        }
    }

    #[test]
    fn assignments_round_trip_at_every_version_and_any_cut_is_an_error() {
        for v in VERSIONS.min..=VERSIONS.max {
            run(&assignment(), |a| {
                let bytes = a.encode(v).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let read = ConsumerAssignment::decode(Bytes::from(bytes.clone()))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(read, Decoded { version: v, value: a, ignored_bytes: 0 });
                every_prefix_fails(&bytes, ConsumerAssignment::decode);
                Ok(())
            });
        }
    }

    #[test]
    fn messages_kafka_wrote_decode_and_re_encode_byte_for_byte() {
        let mut checked = [0; 2];
        for line in KAFKA_4_1.lines().filter(|l| !l.trim().is_empty()) {
            let [name, version, hex] = line.split(' ').collect::<Vec<_>>()[..] else {
                panic!("malformed: {line}")
            };
            let version: i16 = version.parse().expect("version");
            let bytes = unhex(hex);
            let again = match name {
                ConsumerSubscription::NAME => {
                    checked[0] += 1;
                    let read = ConsumerSubscription::decode(Bytes::from(bytes.clone()))
                        .unwrap_or_else(|e| panic!("{line}: {e}"));
                    assert_eq!((read.version, read.ignored_bytes), (version, 0), "{line}");
                    read.value.encode(version)
                }
                ConsumerAssignment::NAME => {
                    checked[1] += 1;
                    let read = ConsumerAssignment::decode(Bytes::from(bytes.clone()))
                        .unwrap_or_else(|e| panic!("{line}: {e}"));
                    assert_eq!((read.version, read.ignored_bytes), (version, 0), "{line}");
                    read.value.encode(version)
                }
                _ => panic!("unknown message {name}"),
            };
            assert_eq!(again.unwrap_or_else(|e| panic!("{line}: {e}")), bytes, "{line}");
        }
        // 4 of each per version 0-3.
        assert_eq!(checked, [16, 16]);
    }

    #[test]
    fn a_v0_subscription_is_topics_and_user_data() {
        let s = ConsumerSubscription {
            topics: vec!["a".into(), "bc".into()],
            user_data: Some(Bytes::from_static(&[9])),
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            0, 0, // version 0
            0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c', // topics
            0, 0, 0, 1, 9, // user_data [09]
        ];
        assert_eq!(s.encode(0).unwrap(), expected);
        let read = ConsumerSubscription::decode(Bytes::copy_from_slice(&expected)).unwrap();
        assert_eq!(read, Decoded { version: 0, value: s, ignored_bytes: 0 });
    }

    #[test]
    fn a_v3_subscription_defaults_what_was_left_unset() {
        let s = ConsumerSubscription { topics: vec!["t".into()], ..Default::default() };
        #[rustfmt::skip]
        let expected = [
            0, 3, // version 3
            0, 0, 0, 1, 0, 1, b't', // topics
            0xff, 0xff, 0xff, 0xff, // user_data null
            0, 0, 0, 0, // owned_partitions: none
            0xff, 0xff, 0xff, 0xff, // generation_id −1
            0xff, 0xff, // rack_id null
        ];
        assert_eq!(s.encode(3).unwrap(), expected);
        let read = ConsumerSubscription::decode(Bytes::copy_from_slice(&expected)).unwrap().value;
        assert_eq!(read.owned_partitions, Some(vec![]));
        assert_eq!((read.generation_id, read.rack_id), (Some(NO_GENERATION), None));
    }

    #[test]
    fn a_higher_version_is_read_as_v3_and_its_new_fields_are_ignored() {
        let s = ConsumerSubscription {
            topics: vec!["t".into()],
            user_data: None,
            owned_partitions: Some(vec![ConsumerTopicPartitions {
                topic: "t".into(),
                partitions: vec![0, 1],
            }]),
            generation_id: Some(7),
            rack_id: Some("r1".into()),
        };
        let mut bytes = s.encode(3).unwrap();
        bytes[..2].copy_from_slice(&9i16.to_be_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 42, 0xde, 0xad]); // a v9 member's later fields
        let read = ConsumerSubscription::decode(Bytes::from(bytes)).unwrap();
        assert_eq!((read.version, read.read_as(), read.ignored_bytes), (9, 3, 6));
        assert_eq!(read.value, s);

        let a = ConsumerAssignment {
            assigned_partitions: vec![ConsumerTopicPartitions { topic: "t".into(), partitions: vec![3] }],
            user_data: Some(Bytes::from_static(b"u")),
        };
        let mut bytes = a.encode(0).unwrap();
        bytes[..2].copy_from_slice(&i16::MAX.to_be_bytes());
        bytes.push(1);
        let read = ConsumerAssignment::decode(Bytes::from(bytes)).unwrap();
        assert_eq!((read.version, read.value, read.ignored_bytes), (i16::MAX, a, 1));
    }

    #[test]
    fn a_known_version_with_bytes_after_its_fields_decodes_as_kafka_reads_it() {
        // Kafka's reader stops after the version's last field, whatever follows.
        let mut bytes = ConsumerAssignment::default().encode(1).unwrap();
        bytes.extend_from_slice(&[0, 0]);
        let read = ConsumerAssignment::decode(Bytes::from(bytes)).unwrap();
        assert_eq!((read.version, read.ignored_bytes), (1, 2));
    }

    #[test]
    fn a_v0_subscription_without_user_data_is_refused_as_kafka_refuses_it() {
        // Java's ConsumerProtocol reads user_data at every version (a buffer underflow there).
        let bytes = [0, 0, 0, 0, 0, 1, 0, 1, b't'];
        let err = ConsumerSubscription::decode(Bytes::copy_from_slice(&bytes)).unwrap_err();
        assert_eq!(err.field, "user_data");
        assert!(err.is_incomplete());
    }

    #[test]
    fn truncated_and_garbage_input_is_an_error_naming_the_field() {
        let err = |b: &[u8]| ConsumerSubscription::decode(Bytes::copy_from_slice(b)).unwrap_err();
        assert_eq!(err(&[]).field, "version");
        assert_eq!(err(&[0]).field, "version");
        let negative = err(&[0xff, 0xff, 0, 0, 0, 0]);
        assert_eq!(
            (negative.field, negative.kind),
            ("version", DecodeErrorKind::UnsupportedVersion { api: ConsumerSubscription::NAME, version: -1 })
        );
        // 2^31−1 topics in a 4-byte body: refused before any allocation.
        let huge = err(&[0, 0, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(huge.field, "topics");
        assert!(matches!(huge.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, .. }));
        // A null topic list, and a topic name that is not UTF-8.
        assert_eq!(err(&[0, 0, 0xff, 0xff, 0xff, 0xff]).kind, DecodeErrorKind::UnexpectedNull);
        assert_eq!(err(&[0, 0, 0, 0, 0, 1, 0, 1, 0xff]).kind, DecodeErrorKind::InvalidUtf8);
        // v1's owned partitions cut short in a partition id.
        let owned =
            err(&[0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0]);
        assert_eq!(owned.field, "owned_partitions.partitions");
        let assignment =
            ConsumerAssignment::decode(Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 5, b'a', 0, 0, 0]))
                .unwrap_err();
        assert_eq!(assignment.field, "assigned_partitions.topic");
    }

    #[test]
    fn garbage_never_panics() {
        let config = Config { cases: 512, source_file: Some(file!()), ..Config::default() };
        let result = TestRunner::new(config).run(&vec(any::<u8>(), 0..64), |input| {
            let input = Bytes::from(input);
            if let Ok(read) = ConsumerSubscription::decode(input.clone()) {
                // What decodes re-encodes, at the version it was read as, to a prefix of the input.
                let again = read.value.encode(read.read_as()).expect("a decoded subscription encodes");
                prop_assert_eq!(&again[2..], &input[2..input.len() - read.ignored_bytes]);
            }
            if let Ok(read) = ConsumerAssignment::decode(input.clone()) {
                let again = read.value.encode(read.read_as()).expect("a decoded assignment encodes");
                prop_assert_eq!(&again[2..], &input[2..input.len() - read.ignored_bytes]);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
    }

    #[test]
    fn only_known_versions_encode() {
        for v in [-1, 4, i16::MAX] {
            assert_eq!(
                ConsumerSubscription::default().encode(v).unwrap_err(),
                EncodeError::UnsupportedVersion { api: ConsumerSubscription::NAME, version: v }
            );
            assert_eq!(
                ConsumerAssignment::default().encode(v).unwrap_err(),
                EncodeError::UnsupportedVersion { api: ConsumerAssignment::NAME, version: v }
            );
        }
    }
}
