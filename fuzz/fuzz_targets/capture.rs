//! The capture reader and decoder on any bytes: `kwire decode --pcap`'s whole path (pcap or
//! pcapng blocks, link layers, IP, TCP reassembly, frame splitting with resync, pairing) must
//! never panic, and every frame it hands out must be within the frame cap.
//!
//! Byte 0 picks the mode. Bit 0 clear: the rest is a capture file. Bit 0 set: the rest is a
//! list of packets (u16 length, bytes), each given the link type bits 1-3 pick, so the link,
//! IP and TCP parsers and the reassembler see arbitrary packets without a valid file around
//! them. Bits 4-7 pick the frame cap (16 << n bytes).
#![no_main]

use kwire_capture::link;
use kwire_capture::{CaptureDecoder, CaptureReader, DecoderOptions, Event, Packet};
use libfuzzer_sys::fuzz_target;

const LINK_TYPES: [u32; 8] = [
    link::ETHERNET,
    link::LINUX_SLL,
    link::LINUX_SLL2,
    link::NULL,
    link::LOOP,
    link::RAW,
    link::IPV4,
    link::IPV6,
];

fn drain(decoder: &mut CaptureDecoder, max_frame: usize) {
    while let Some(event) = decoder.poll_event() {
        if let Event::Exchange { exchange, .. } = event {
            assert!(exchange.request.frame.len() <= max_frame);
            if let Some(response) = exchange.response {
                assert!(response.frame.len() <= max_frame);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, rest @ ..] = data else { return };
    let max_frame = 16usize << (mode >> 4);
    // Both ends of the synthesised captures use ports in this set.
    let options = DecoderOptions { ports: vec![9092, 19092], max_frame, max_out_of_order: 64 * 1024 };
    let mut decoder = CaptureDecoder::new(options);
    if mode & 1 == 0 {
        let mut reader = CaptureReader::with_max_record(rest, 1 << 20);
        while let Ok(Some(packet)) = reader.next_packet() {
            decoder.packet(&packet);
            drain(&mut decoder, max_frame);
        }
    } else {
        let link_type = LINK_TYPES[usize::from((mode >> 1) & 7)];
        let mut rest = rest;
        let mut ts = 0;
        while let [hi, lo, tail @ ..] = rest {
            let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
            let (packet, after) = tail.split_at(len);
            ts += 1;
            decoder.packet(&Packet { timestamp_ns: ts, link_type, data: packet, original_len: len as u32 });
            drain(&mut decoder, max_frame);
            rest = after;
        }
    }
    decoder.finish();
    drain(&mut decoder, max_frame);
});
