//! ListGroups (key 16): the groups one broker coordinates. To list a cluster's groups, ask
//! every broker and merge.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// ListGroups's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::LIST_GROUPS,
    name: "ListGroups",
    versions: VersionRange::new(0, 5),
    flexible_from: Some(3),
};

kafka_message! {
    /// A ListGroups request (v0–v5).
    pub struct ListGroupsRequest {
        /// Added in v4 (KIP-518): only groups in these states ("Stable", "Empty", …); empty = all.
        [since 4] states_filter: Option<Vec<String>>,
        /// Added in v5 (KIP-848): only groups of these types ("classic", "consumer", …); empty = all.
        [since 5] types_filter: Option<Vec<String>>,
    }
}

impl Body for ListGroupsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 4 {
            e.array(self.states_filter.as_deref().unwrap_or_default(), "states_filter", |e, s| {
                e.string(s, "states_filter")
            })?;
        }
        if version >= 5 {
            e.array(self.types_filter.as_deref().unwrap_or_default(), "types_filter", |e, s| {
                e.string(s, "types_filter")
            })?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let states_filter = if version >= 4 {
            Some(d.array("states_filter", 1, |d| d.string("states_filter"))?)
        } else {
            None
        };
        let types_filter =
            if version >= 5 { Some(d.array("types_filter", 1, |d| d.string("types_filter"))?) } else { None };
        Ok(Self { states_filter, types_filter, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for ListGroupsRequest {
    type Response = ListGroupsResponse;
}

kafka_message! {
    /// A ListGroups response (v0–v5).
    pub struct ListGroupsResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// Each group in the response.
        groups: Vec<ListedGroup>,
    }
}

kafka_message! {
    /// An element of [`ListGroupsResponse::groups`]: each group in the response.
    pub struct ListedGroup {
        /// The group ID.
        group_id: String,
        /// "consumer" for consumer groups, "" for groups that only commit offsets.
        protocol_type: String,
        /// Added in v4.
        [since 4] group_state: Option<String>,
        /// Added in v5.
        [since 5] group_type: Option<String>,
    }
}

impl Body for ListGroupsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.i16(self.error_code.0);
        e.array(&self.groups, "groups", |e, g| {
            e.string(&g.group_id, "groups.group_id")?;
            e.string(&g.protocol_type, "groups.protocol_type")?;
            if version >= 4 {
                e.string(g.group_state.as_deref().unwrap_or_default(), "groups.group_state")?;
            }
            if version >= 5 {
                e.string(g.group_type.as_deref().unwrap_or_default(), "groups.group_type")?;
            }
            e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        let error_code = ErrorCode(d.i16("error_code")?);
        let groups = d.array("groups", 2, |d| {
            Ok(ListedGroup {
                group_id: d.string("groups.group_id")?,
                protocol_type: d.string("groups.protocol_type")?,
                group_state: if version >= 4 { Some(d.string("groups.group_state")?) } else { None },
                group_type: if version >= 5 { Some(d.string("groups.group_type")?) } else { None },
                tagged_fields: d.tagged_fields("groups.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, error_code, groups, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = ListGroupsRequest> {
        (gated(v >= 4, array(string())), gated(v >= 5, array(string())), tagged(v >= 3)).prop_map(
            |(states_filter, types_filter, tagged_fields)| ListGroupsRequest {
                states_filter,
                types_filter,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = ListGroupsResponse> {
        let flexible = v >= 3;
        let group = (string(), string(), gated(v >= 4, string()), gated(v >= 5, string()), tagged(flexible))
            .prop_map(|(group_id, protocol_type, group_state, group_type, tagged_fields)| ListedGroup {
                group_id,
                protocol_type,
                group_state,
                group_type,
                tagged_fields,
            });
        (gated(v >= 1, any::<i32>()), error_code(), array(group), tagged(flexible)).prop_map(
            |(throttle_time_ms, error_code, groups, tagged_fields)| ListGroupsResponse {
                throttle_time_ms,
                error_code,
                groups,
                tagged_fields,
            },
        )
    }

    #[test]
    fn requests_round_trip_at_every_version() {
        round_trip_every_version(file!(), request);
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        round_trip_every_version(file!(), response);
    }

    #[test]
    fn a_v0_request_is_empty_and_a_v5_request_carries_both_filters() {
        assert!(ListGroupsRequest::default().encode_body(0).unwrap().is_empty());
        let request = ListGroupsRequest {
            states_filter: Some(vec!["Empty".into()]),
            types_filter: Some(vec![]),
            ..Default::default()
        };
        let expected = [2, 6, b'E', b'm', b'p', b't', b'y', 1, 0];
        assert_eq!(request.encode_body(5).unwrap(), expected);
        assert_eq!(ListGroupsRequest::decode_body(Bytes::copy_from_slice(&expected), 5).unwrap(), request);
    }

    #[test]
    fn a_v5_response_lists_state_and_type() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, 0, 0, // throttle_time_ms, error_code
            2, // groups: 1
            2, b'g', 9, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r', // "g", "consumer"
            7, b'S', b't', b'a', b'b', b'l', b'e', // "Stable"
            8, b'c', b'l', b'a', b's', b's', b'i', b'c', // "classic"
            0, 0, // group tags, body tags
        ];
        let decoded = ListGroupsResponse::decode_body(Bytes::copy_from_slice(&body), 5).unwrap();
        let g = &decoded.groups[0];
        assert_eq!((g.group_id.as_str(), g.protocol_type.as_str()), ("g", "consumer"));
        assert_eq!((g.group_state.as_deref(), g.group_type.as_deref()), (Some("Stable"), Some("classic")));
        assert_eq!(decoded.encode_body(5).unwrap(), body);
    }
}
