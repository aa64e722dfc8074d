//! ApiVersions (key 18): which versions of each API a broker speaks. Sent first on every
//! connection. Responses always use response header v0 (KIP-511), and a broker that does not
//! know the requested version answers UNSUPPORTED_VERSION in the v0 body layout, listing its
//! own ApiVersions range so the client can retry at a version both know.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use crate::protocol::tagged::TaggedFields;

/// ApiVersions's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::API_VERSIONS,
    name: "ApiVersions",
    versions: VersionRange::new(0, 4),
    flexible_from: Some(3),
};

kafka_message! {
    /// An ApiVersions request (v0–v4).
    pub struct ApiVersionsRequest {
        /// Added in v3.
        [since 3] client_software_name: Option<String>,
        /// Added in v3.
        [since 3] client_software_version: Option<String>,
    }
}

impl Body for ApiVersionsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 3 {
            e.string(self.client_software_name.as_deref().unwrap_or_default(), "client_software_name")?;
            e.string(self.client_software_version.as_deref().unwrap_or_default(), "client_software_version")?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let (client_software_name, client_software_version) = if version >= 3 {
            (Some(d.string("client_software_name")?), Some(d.string("client_software_version")?))
        } else {
            (None, None)
        };
        Ok(Self {
            client_software_name,
            client_software_version,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for ApiVersionsRequest {
    type Response = ApiVersionsResponse;
}

kafka_message! {
    /// An ApiVersions response (v0–v4).
    pub struct ApiVersionsResponse [no_tagged_fields] {
        /// The top-level error code.
        error_code: ErrorCode,
        /// The APIs supported by the broker.
        api_keys: Vec<ApiVersionRange>,
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// Supported and finalized features (tags 0–3, v3+) are kept here raw.
        [tagged_fields] tagged_fields: TaggedFields,
    }
}

kafka_message! {
    /// One API a broker supports, with its inclusive version range.
    pub struct ApiVersionRange [no_default] {
        /// The API's key.
        api_key: ApiKey,
        /// The lowest version the broker supports, inclusive.
        min_version: i16,
        /// The highest version the broker supports, inclusive.
        max_version: i16,
    }
}

impl ApiVersionRange {
    /// The supported versions as a [`VersionRange`].
    pub fn range(&self) -> VersionRange {
        VersionRange::new(self.min_version, self.max_version)
    }
}

impl ApiVersionsResponse {
    /// The broker's range for `key`, if it supports that API at all.
    pub fn range_of(&self, key: ApiKey) -> Option<VersionRange> {
        self.api_keys.iter().find(|a| a.api_key == key).map(ApiVersionRange::range)
    }

    /// The cluster-wide feature levels the broker reports as finalized (tagged field 2, v3+;
    /// empty before v3 or when the broker finalizes none), read from the raw tagged fields,
    /// which stay as they are. A malformed field is an error naming it.
    pub fn finalized_features(&self) -> DecodeResult<Vec<FinalizedFeature>> {
        let Some((_, payload)) = self.tagged_fields.iter().find(|(tag, _)| *tag == FINALIZED_FEATURES_TAG)
        else {
            return Ok(Vec::new());
        };
        let mut d = Decoder::with_flexible(payload.clone(), true);
        // Each element: a name (at least its length byte), two INT16 and a tag count.
        let features = d.array("finalized_features", 6, |d| {
            let name = d.string("finalized_features.name")?;
            let max_version_level = d.i16("finalized_features.max_version_level")?;
            let min_version_level = d.i16("finalized_features.min_version_level")?;
            d.tagged_fields("finalized_features.tagged_fields")?;
            Ok(FinalizedFeature { name, max_version_level, min_version_level })
        })?;
        d.finish("finalized_features")?;
        Ok(features)
    }
}

/// The tag of ApiVersions v3+'s `finalized_features` field.
pub const FINALIZED_FEATURES_TAG: u32 = 2;

kafka_message! {
    /// A feature (`metadata.version`, `transaction.version`, ...) finalized for the cluster at a
    /// level: the brokers use it, and clients may rely on what the level brings.
    pub struct FinalizedFeature [no_default, no_tagged_fields] {
        /// The feature's name.
        name: String,
        /// The level in force.
        max_version_level: i16,
        /// The lowest level the cluster may still be downgraded to.
        min_version_level: i16,
    }
}

impl Body for ApiVersionsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i16(self.error_code.0);
        e.array(&self.api_keys, "api_keys", |e, a| {
            e.i16(a.api_key.0);
            e.i16(a.min_version);
            e.i16(a.max_version);
            e.tagged_fields(&a.tagged_fields, "api_keys.tagged_fields", version)
        })?;
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let error_code = ErrorCode(d.i16("error_code")?);
        let api_keys = d.array("api_keys", 6, |d| {
            Ok(ApiVersionRange {
                api_key: ApiKey(d.i16("api_keys.api_key")?),
                min_version: d.i16("api_keys.min_version")?,
                max_version: d.i16("api_keys.max_version")?,
                tagged_fields: d.tagged_fields("api_keys.tagged_fields")?,
            })
        })?;
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        Ok(Self { error_code, api_keys, throttle_time_ms, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = ApiVersionsRequest> {
        (gated(v >= 3, string()), gated(v >= 3, string()), tagged(SPEC.is_flexible(v))).prop_map(
            |(client_software_name, client_software_version, tagged_fields)| ApiVersionsRequest {
                client_software_name,
                client_software_version,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = ApiVersionsResponse> {
        let flexible = SPEC.is_flexible(v);
        let api = (any::<i16>(), any::<i16>(), any::<i16>(), tagged(flexible)).prop_map(
            |(key, min_version, max_version, tagged_fields)| ApiVersionRange {
                api_key: ApiKey(key),
                min_version,
                max_version,
                tagged_fields,
            },
        );
        (error_code(), array(api), gated(v >= 1, any::<i32>()), tagged(flexible)).prop_map(
            |(error_code, api_keys, throttle_time_ms, tagged_fields)| ApiVersionsResponse {
                error_code,
                api_keys,
                throttle_time_ms,
                tagged_fields,
            },
        )
    }

    /// The payload of tagged field 2 as a broker writes it.
    fn finalized_payload(features: &[(&str, i16, i16)]) -> bytes::Bytes {
        let mut e = Encoder::new(true);
        e.array(features, "finalized_features", |e, (name, max, min)| {
            e.string(name, "name")?;
            e.i16(*max);
            e.i16(*min);
            e.tagged_fields(&TaggedFields::default(), "tagged_fields", 3)
        })
        .unwrap();
        bytes::Bytes::from(e.into_inner())
    }

    #[test]
    fn a_kafka_4_broker_finalizing_transaction_version_2_is_read_from_tag_2() {
        let payload = finalized_payload(&[("metadata.version", 27, 1), ("transaction.version", 2, 0)]);
        let response = ApiVersionsResponse {
            tagged_fields: TaggedFields::new(vec![(1, bytes::Bytes::from_static(&[0; 8])), (2, payload)]),
            ..Default::default()
        };
        let features = response.finalized_features().unwrap();
        assert_eq!(
            features,
            vec![
                FinalizedFeature {
                    name: "metadata.version".into(),
                    max_version_level: 27,
                    min_version_level: 1
                },
                FinalizedFeature {
                    name: "transaction.version".into(),
                    max_version_level: 2,
                    min_version_level: 0
                },
            ]
        );
        // The raw field stays for a round trip.
        assert_eq!(response.tagged_fields.len(), 2);
    }

    #[test]
    fn a_broker_before_features_finalizes_nothing() {
        assert_eq!(ApiVersionsResponse::default().finalized_features().unwrap(), Vec::new());
    }

    #[test]
    fn a_truncated_finalized_features_field_is_an_error_naming_it() {
        let payload = finalized_payload(&[("transaction.version", 2, 0)]);
        let cut = payload.slice(..payload.len() - 3);
        let response =
            ApiVersionsResponse { tagged_fields: TaggedFields::new(vec![(2, cut)]), ..Default::default() };
        let error = response.finalized_features().unwrap_err();
        assert!(error.to_string().contains("finalized_features"), "{error}");
    }

    #[test]
    fn requests_round_trip_at_every_version() {
        round_trip_every_version(file!(), request);
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        round_trip_every_version(file!(), response);
    }
}
