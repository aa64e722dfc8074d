//! Size-prefixed frames: `i32 size` followed by `size` bytes of header and body.

use bytes::{Buf, Bytes, BytesMut};

use super::api::{Body, Request};
use super::decoder::{DecodeResult, Decoder};
use super::encoder::Encoder;
use super::error::{DecodeError, DecodeErrorKind, EncodeError};
use super::header::{RequestHeader, ResponseHeader};
use super::request_frame::RequestFrame;
use super::tagged::TaggedFields;

/// The default cap on a frame's size: Kafka's own `socket.request.max.bytes` default (100 MiB).
pub const DEFAULT_MAX_FRAME: usize = 100 * 1024 * 1024;

/// Takes one complete frame (without its size prefix) off the front of `buf`, or returns
/// `Ok(None)` when more bytes are needed. A negative size or one above `max_frame` is an
/// error, raised from the 4 size bytes alone, before any of the frame is buffered.
pub fn split_frame(buf: &mut BytesMut, max_frame: usize) -> DecodeResult<Option<Bytes>> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let Ok(size) = usize::try_from(size) else {
        return Err(DecodeError::new(DecodeErrorKind::NegativeLength(i64::from(size)), "frame.size", 0));
    };
    if size > max_frame {
        return Err(DecodeError::new(
            DecodeErrorKind::FrameTooLarge { size, max: max_frame },
            "frame.size",
            0,
        ));
    }
    if buf.len() < 4 + size {
        buf.reserve(4 + size - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(size).freeze()))
}

/// Encodes a whole request frame: size prefix, header (its version chosen by the API's
/// flexibility at `version`) and body.
pub fn encode_request<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
) -> Result<Vec<u8>, EncodeError> {
    let e = Encoder::with_buffer(vec![0; 4], R::SPEC.is_flexible(version));
    let mut out = write_request(e, request, version, correlation_id, client_id)?.into_inner();
    let size =
        u32::try_from(out.len() - 4).map_err(|_| EncodeError::TooLong { field: "frame", len: out.len() })?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(out)
}

/// [`encode_request`] as the client writes it: large shared byte fields (a Produce request's
/// record batches) are referenced, not copied into the frame.
pub fn encode_request_frame<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
) -> Result<RequestFrame, EncodeError> {
    let e = Encoder::splicing(vec![0; 4], R::SPEC.is_flexible(version));
    let e = write_request(e, request, version, correlation_id, client_id)?;
    let len = e.len();
    let size = u32::try_from(len - 4).map_err(|_| EncodeError::TooLong { field: "frame", len })?;
    let mut e = e;
    // The prefix comes before any spliced field, so its offsets are the frame's own.
    e.as_mut_vec()[..4].copy_from_slice(&size.to_be_bytes());
    Ok(e.into_frame())
}

/// Writes the header and body of a request after the size prefix already in `e`.
fn write_request<R: Request>(
    mut e: Encoder,
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
) -> Result<Encoder, EncodeError> {
    R::SPEC.check_encode(version)?;
    let header = RequestHeader {
        api_key: R::SPEC.key,
        api_version: version,
        correlation_id,
        client_id: client_id.map(str::to_owned),
        tagged_fields: TaggedFields::default(),
    };
    header.write(&mut e, R::SPEC.request_header_version(version))?;
    request.write(&mut e, version)?;
    Ok(e)
}

/// Reads the correlation id at the front of a response frame (the same in every header
/// version), so a connection can route the frame before knowing how to decode it.
pub fn peek_correlation_id(frame: &[u8]) -> Option<i32> {
    frame.get(..4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes a response frame (without its size prefix) for request type `R` at `version`.
///
/// `version` is the one the request was sent at: a response does not carry it, so the
/// caller matches the frame to its request by correlation id ([`peek_correlation_id`]) first.
///
/// ```
/// use bytes::Bytes;
/// use kafka_wire::protocol::frame::{decode_response, peek_correlation_id};
/// use kafka_wire::protocol::messages::{ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopicResponse};
/// use kafka_wire::protocol::{Body, ErrorCode};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let response = ListOffsetsResponse {
///     topics: vec![ListOffsetsTopicResponse { name: "orders".to_owned(), ..Default::default() }],
///     ..Default::default()
/// };
/// // A v1 response frame (size prefix already taken off): header v0 is the correlation id alone.
/// let mut frame = 42_i32.to_be_bytes().to_vec();
/// frame.extend(response.encode_body(1)?);
///
/// assert_eq!(peek_correlation_id(&frame), Some(42));
/// let (header, decoded) = decode_response::<ListOffsetsRequest>(Bytes::from(frame), 1)?;
/// assert_eq!(header.correlation_id, 42);
/// assert_eq!(decoded.topics[0].name, "orders");
/// # Ok(())
/// # }
/// ```
pub fn decode_response<R: Request>(
    frame: Bytes,
    version: i16,
) -> DecodeResult<(ResponseHeader, R::Response)> {
    let spec = <R::Response as Body>::SPEC;
    let mut d = Decoder::new(frame);
    spec.check_decode(&d, version)?;
    let header = ResponseHeader::read(&mut d, spec.response_header_version(version))?;
    d.set_flexible(spec.is_flexible(version));
    let body = R::Response::read(&mut d, version)?;
    d.finish(spec.name)?;
    Ok((header, body))
}

/// Decodes a request frame (without its size prefix): header first, then the body at the
/// version the header names.
pub fn decode_request<R: Request>(frame: Bytes) -> DecodeResult<(RequestHeader, R)> {
    let mut d = Decoder::new(frame);
    // The key and version sit at the front of every header version.
    let mut peek = d.clone();
    peek.i16("api_key")?;
    let version = peek.i16("api_version")?;
    R::SPEC.check_decode(&d, version)?;
    let header = RequestHeader::read(&mut d, R::SPEC.request_header_version(version))?;
    d.set_flexible(R::SPEC.is_flexible(version));
    let body = R::read(&mut d, version)?;
    d.finish(R::SPEC.name)?;
    Ok((header, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_frame_waits_for_more_bytes() {
        let mut buf = BytesMut::from(&[0, 0, 0, 3, 1, 2][..]);
        assert_eq!(split_frame(&mut buf, 100).unwrap(), None);
        buf.extend_from_slice(&[3, 9]);
        assert_eq!(split_frame(&mut buf, 100).unwrap().unwrap().as_ref(), &[1, 2, 3]);
        assert_eq!(buf.as_ref(), &[9]);
    }

    #[test]
    fn an_oversized_or_negative_frame_is_refused_from_its_size_alone() {
        let mut buf = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff][..]);
        let err = split_frame(&mut buf, 1024).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::FrameTooLarge { .. }));
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xfe][..]);
        assert!(matches!(split_frame(&mut buf, 1024).unwrap_err().kind, DecodeErrorKind::NegativeLength(-2)));
    }
}
