//! Whole captures through `CaptureReader` and `CaptureDecoder`: the situations a real capture
//! brings (segments out of order and retransmitted, a capture joined mid-stream, a file cut
//! short) and bad input (bytes that are not Kafka on a broker port, an API key nobody knows, a
//! frame above the cap). Captures are written with `PcapngWriter`, then re-cut packet by packet.

use std::net::SocketAddr;

use kwire_capture::{
    CaptureDecoder, CaptureError, CaptureReader, DecoderOptions, Direction, Event, PcapngWriter,
};

const PORT: u16 = 19092;

fn request(api: i16, correlation_id: i32, body_len: usize) -> Vec<u8> {
    let mut frame = api.to_be_bytes().to_vec();
    frame.extend(1_i16.to_be_bytes());
    frame.extend(correlation_id.to_be_bytes());
    frame.extend(4_i16.to_be_bytes());
    frame.extend(b"test");
    frame.extend((0..body_len).map(|i| i as u8));
    let mut out = (frame.len() as u32).to_be_bytes().to_vec();
    out.extend(frame);
    out
}

fn response(correlation_id: i32, body_len: usize) -> Vec<u8> {
    let mut frame = correlation_id.to_be_bytes().to_vec();
    frame.extend((0..body_len).map(|i| (i * 7) as u8));
    let mut out = (frame.len() as u32).to_be_bytes().to_vec();
    out.extend(frame);
    out
}

fn endpoints() -> (SocketAddr, SocketAddr) {
    ("127.0.0.1:50000".parse().unwrap(), format!("127.0.0.1:{PORT}").parse().unwrap())
}

/// A capture of `exchanges` (request, response) on one connection, as pcapng bytes.
fn capture(exchanges: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let (client, broker) = endpoints();
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    w.open(client, broker, 1).unwrap();
    for (i, (req, resp)) in exchanges.iter().enumerate() {
        let t = (i as i64 + 1) * 1000;
        w.data(client, broker, Direction::ToBroker, req, t).unwrap();
        w.data(client, broker, Direction::ToClient, resp, t + 500).unwrap();
    }
    w.close(client, broker, 1_000_000).unwrap();
    w.into_inner().unwrap()
}

/// The packets of a capture, each as (timestamp, link type, bytes).
fn packets(file: &[u8]) -> Vec<(i64, u32, Vec<u8>)> {
    let mut reader = CaptureReader::new(file);
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet().unwrap() {
        out.push((p.timestamp_ns, p.link_type, p.data.to_vec()));
    }
    out
}

/// Events as text: `pair API CORR REQ_LEN RESP_LEN`, or the notice.
fn decode(packets: &[(i64, u32, Vec<u8>)], max_frame: usize) -> Vec<String> {
    let mut decoder =
        CaptureDecoder::new(DecoderOptions { ports: vec![PORT], max_frame, ..Default::default() });
    let mut out = Vec::new();
    let mut drain = |d: &mut CaptureDecoder| {
        while let Some(e) = d.poll_event() {
            out.push(match e {
                Event::Exchange { exchange, .. } => format!(
                    "pair {} {} {} {}",
                    exchange.request.summary.api.0,
                    exchange.request.summary.correlation_id,
                    exchange.request.frame.len(),
                    exchange.response.map_or(0, |r| r.frame.len())
                ),
                Event::Unmatched { unmatched, .. } => {
                    format!("unmatched {unmatched:?}").chars().take(40).collect()
                }
                Event::Notice { text, .. } => text,
            });
        }
    };
    for (ts, link, data) in packets {
        decoder.packet(&kwire_capture::Packet {
            timestamp_ns: *ts,
            link_type: *link,
            data,
            original_len: data.len() as u32,
        });
        drain(&mut decoder);
    }
    decoder.finish();
    drain(&mut decoder);
    out
}

fn three_exchanges() -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![
        (request(3, 1, 10), response(1, 100_000)),
        (request(1, 2, 70_000), response(2, 20)),
        (request(18, 3, 0), response(3, 5)),
    ]
}

#[test]
fn segments_out_of_order_and_retransmitted_give_the_same_pairs() {
    let file = capture(&three_exchanges());
    let in_order = packets(&file);
    let expected = decode(&in_order, 1 << 20);
    assert_eq!(expected, vec!["pair 3 1 24 100004", "pair 1 2 70014 24", "pair 18 3 14 9"]);
    let mut shuffled = in_order.clone();
    // Swap neighbours after the handshake, and send every fourth packet twice.
    for i in (3..shuffled.len() - 1).step_by(2) {
        shuffled.swap(i, i + 1);
    }
    let mut with_repeats = Vec::new();
    for (i, p) in shuffled.into_iter().enumerate() {
        if i % 4 == 0 {
            with_repeats.push(p.clone());
        }
        with_repeats.push(p);
    }
    assert_eq!(decode(&with_repeats, 1 << 20), expected);
}

#[test]
fn a_capture_joined_mid_stream_resynchronises_on_the_next_frames_and_says_so() {
    let file = capture(&three_exchanges());
    let all = packets(&file);
    // Drop the handshake and the first request's packet: the capture starts in the first
    // response (mid-frame), so that response and its request are lost.
    let events = decode(&all[4..], 1 << 20);
    assert_eq!(events[0], "response stream: the capture starts mid-stream", "{events:?}");
    assert!(events.contains(&"request stream: the capture starts mid-stream".to_owned()), "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("request stream: resynchronised on a frame after skipping 0 bytes")),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e.starts_with("response stream: resynchronised on a frame after skipping")),
        "{events:?}"
    );
    assert!(events.ends_with(&["pair 1 2 70014 24".to_owned(), "pair 18 3 14 9".to_owned()]), "{events:?}");
}

#[test]
fn http_on_a_broker_port_is_one_line_saying_it_is_not_kafka() {
    let (client, broker) = endpoints();
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    w.data(client, broker, Direction::ToBroker, b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n", 1).unwrap();
    w.data(client, broker, Direction::ToClient, b"HTTP/1.1 400 Bad Request\r\n\r\n", 2).unwrap();
    let events = decode(&packets(&w.into_inner().unwrap()), 1 << 20);
    assert_eq!(
        events,
        vec![
            "request stream: not a Kafka frame: \"GET / HTTP/1\"",
            "response stream: not a Kafka frame: \"HTTP/1.1\""
        ]
    );
}

#[test]
fn an_unknown_api_key_is_still_paired() {
    let events = decode(&packets(&capture(&[(request(1234, 9, 45), response(9, 3))])), 1 << 20);
    assert_eq!(events, vec!["pair 1234 9 59 7"]);
}

#[test]
fn a_frame_above_the_cap_is_reported_skipped_and_the_next_one_decoded() {
    let events = decode(&packets(&capture(&three_exchanges())), 50_000);
    assert_eq!(
        events,
        vec![
            "response stream: a frame of 100004 bytes, above the 50000-byte cap: skipped",
            "request stream: a frame of 70014 bytes, above the 50000-byte cap: skipped",
            // The skipped request's response has nobody to pair with; the request whose
            // response was skipped is left without one.
            "unmatched Response { correlation_id: Som",
            "pair 18 3 14 9",
            "pair 3 1 24 0",
        ]
    );
}

#[test]
fn a_capture_cut_short_yields_its_packets_then_says_it_is_truncated() {
    let file = capture(&three_exchanges());
    let cut = &file[..file.len() * 2 / 3];
    let mut reader = CaptureReader::new(cut);
    let mut n = 0;
    let err = loop {
        match reader.next_packet() {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("a cut file must not end cleanly"),
            Err(e) => break e,
        }
    };
    assert!(n > 3);
    assert!(matches!(err, CaptureError::Truncated { .. }), "{err}");
}
