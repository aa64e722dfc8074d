//! `kwire decode --pcap FILE`: every Kafka request/response pair in a pcap or pcapng capture,
//! printed as `kwire proxy` prints them. Streams the file (memory: one record, plus per
//! connection at most one frame per direction, capped by `--max-frame`).

use std::fs::File;
use std::io::Write as _;

use kwire_capture::{CaptureDecoder, CaptureError, CaptureReader, DecoderOptions, Event};

use crate::cli::DecodeArgs;
use crate::commands::Context;
use crate::exchange_output::{parse_api_filter, Filters, Place, Renderer};
use crate::exit::{Exit, Failure};

pub fn run(ctx: &Context, args: &DecodeArgs) -> Result<(), Failure> {
    let Some(path) = args.pcap.as_deref() else {
        return Err(Failure::new(Exit::USAGE, "--pcap FILE is required"));
    };
    let filters = Filters {
        apis: args
            .api
            .iter()
            .map(|a| parse_api_filter(a))
            .collect::<Result<_, _>>()
            .map_err(|e| Failure::new(Exit::USAGE, e))?,
        client_ids: args.pairs.client_ids.clone(),
        topics: args.pairs.topics.clone(),
        groups: args.pairs.groups.clone(),
    };
    let file = File::open(path)
        .map_err(|e| Failure::new(Exit::USAGE, format!("cannot open {}: {e}", path.display())))?;
    let ports = if args.ports.is_empty() { vec![9092] } else { args.ports.clone() };
    let mut reader = CaptureReader::new(file);
    let mut decoder =
        CaptureDecoder::new(DecoderOptions { ports, max_frame: args.max_frame, ..Default::default() });
    let mut renderer = Renderer::new(ctx.format(), filters);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut failed = None;
    loop {
        match reader.next_packet() {
            Ok(Some(packet)) => decoder.packet(&packet),
            Ok(None) => break,
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
        drain(&mut decoder, &mut renderer, &mut out);
    }
    decoder.finish();
    drain(&mut decoder, &mut renderer, &mut out);
    let skipped = decoder.skipped();
    let result = match failed {
        // Not a capture at all: nothing was read, so it is the argument that is wrong.
        Some(e @ CaptureError::NotACapture { .. }) => {
            Err(Failure::new(Exit::USAGE, format!("{}: {e}", path.display())))
        }
        Some(CaptureError::Io(e)) => {
            Err(Failure::new(Exit::USAGE, format!("cannot read {}: {e}", path.display())))
        }
        // A truncated or damaged capture: what was before the damage is printed, then one line.
        Some(e) => {
            let place = Place { connection: "-", client: "-", broker: "-" };
            let _ = writeln!(out, "{}", renderer.note(place, decoder.last_timestamp_ns(), &e.to_string()));
            Ok(())
        }
        None => Ok(()),
    };
    let _ = out.flush();
    eprintln!(
        "kwire decode --pcap: {}; packets without Kafka bytes: {} on other ports, {} not IP, {} not TCP, {} fragments, {} malformed",
        renderer.summary(),
        skipped.other_ports,
        skipped.not_ip,
        skipped.not_tcp,
        skipped.fragments,
        skipped.malformed
    );
    result
}

fn drain(decoder: &mut CaptureDecoder, renderer: &mut Renderer, out: &mut impl std::io::Write) {
    while let Some(event) = decoder.poll_event() {
        let (connection, endpoints) = match &event {
            Event::Exchange { connection, endpoints, .. }
            | Event::Unmatched { connection, endpoints, .. }
            | Event::Notice { connection, endpoints, .. } => (connection, endpoints),
        };
        let (connection, client, broker) =
            (connection.to_string(), endpoints.client.to_string(), endpoints.broker.to_string());
        let place = Place { connection: &connection, client: &client, broker: &broker };
        let line = match &event {
            Event::Exchange { exchange, .. } => renderer.exchange(place, exchange),
            Event::Unmatched { unmatched, .. } => Some(renderer.unmatched(place, unmatched)),
            Event::Notice { at_ns, text, .. } => Some(renderer.note(place, *at_ns, text)),
        };
        if let Some(line) = line {
            // A closed pipe (`| head`) ends the output, not the program with a panic.
            let _ = writeln!(out, "{line}");
        }
    }
}
