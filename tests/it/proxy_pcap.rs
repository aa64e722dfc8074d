//! Captures: `kwire decode --pcap` against tshark's Kafka dissector (Debian's tshark, the
//! oracle) on a tcpdump capture of a session through `kwire proxy`, and on the proxy's own
//! `--pcap` file; and what a damaged or foreign file gives.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::kwire_proxy::KwireProxy;
use crate::support::{self, create_topic, kwire_bare, stderr, stdout, unique};

/// `tool` on the PATH, or `None` (with a note) outside CI; in CI a missing tool fails (the
/// test script installs it with scripts/install-capture-tools).
fn tool(name: &str) -> Option<()> {
    if Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(());
    }
    assert!(std::env::var("CI").is_err(), "{name} is required in CI (scripts/install-capture-tools)");
    eprintln!("note: {name} not installed; skipping (scripts/install-capture-tools)");
    None
}

/// `(api key, version, correlation id)` of every request frame, and how many times each.
type Frames = BTreeMap<(i64, i64, i64), usize>;

fn kwire_frames(file: &Path, ports: &[u16]) -> (Frames, Vec<Value>) {
    let out = decode_pcap(file, ports);
    assert!(out.status.success(), "kwire decode --pcap: {}", stderr(&out));
    let docs: Vec<Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    (count_frames(&docs), docs)
}

fn decode_pcap(file: &Path, ports: &[u16]) -> std::process::Output {
    let mut args: Vec<String> =
        vec!["decode".into(), "--pcap".into(), file.display().to_string(), "--format".into(), "json".into()];
    for p in ports {
        args.extend(["--port".into(), p.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    kwire_bare(&args)
}

/// Waits until tcpdump has written every frame in `expected` to `file` (it writes each packet as
/// it reads it, `-U`), at most 30 s: on SIGINT it stops reading, and packets still in its capture
/// buffer — under load, seconds of them — would never reach the file.
fn wait_for_capture(file: &Path, ports: &[u16], expected: &Frames) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        // A file being written may end inside a packet: what decodes so far is what counts.
        let out = decode_pcap(file, ports);
        let docs: Vec<Value> = stdout(&out).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        if count_frames(&docs) == *expected {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn count_frames(docs: &[Value]) -> Frames {
    let mut frames = Frames::new();
    for d in docs.iter().filter(|d| d.get("api_key").is_some()) {
        let key = (
            d["api_key"].as_i64().unwrap(),
            d["version"].as_i64().unwrap(),
            d["correlation_id"].as_i64().unwrap(),
        );
        *frames.entry(key).or_default() += 1;
    }
    frames
}

/// What tshark's Kafka dissector reads in the request frames (packets to a broker port).
fn tshark_frames(file: &Path, ports: &[u16]) -> Frames {
    let mut args = vec!["-r".to_owned(), file.display().to_string()];
    for p in ports {
        args.extend(["-d".into(), format!("tcp.port=={p},kafka")]);
    }
    args.extend(
        [
            "-Y",
            "kafka",
            "-T",
            "fields",
            "-e",
            "tcp.dstport",
            "-e",
            "kafka.request_key",
            "-e",
            "kafka.api_version",
            "-e",
            "kafka.correlation_id",
        ]
        .map(str::to_owned),
    );
    let out = Command::new("tshark").args(&args).output().expect("tshark runs");
    assert!(out.status.success(), "tshark: {}", stderr(&out));
    let mut frames = Frames::new();
    for line in stdout(&out).lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [port, keys, versions, correlations] = fields[..] else { continue };
        if !ports.iter().any(|p| p.to_string() == port) {
            continue; // a response
        }
        let split = |s: &str| s.split(',').map(|v| v.parse::<i64>().expect("a number")).collect::<Vec<_>>();
        let (keys, versions, correlations) = (split(keys), split(versions), split(correlations));
        assert_eq!(keys.len(), correlations.len(), "{line}");
        for i in 0..keys.len() {
            *frames.entry((keys[i], versions[i], correlations[i])).or_default() += 1;
        }
    }
    frames
}

fn start_tcpdump(file: &Path, ports: &[u16]) -> Child {
    let filter = ports.iter().map(|p| format!("tcp port {p}")).collect::<Vec<_>>().join(" or ");
    let mut child = Command::new("tcpdump")
        // A 64 MiB kernel buffer (-B, KiB): the fetch responses of the test come in bursts.
        .args(["-i", "lo", "-U", "-s", "0", "-B", "65536", "-w"])
        .arg(file)
        .arg(filter)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tcpdump runs");
    // tcpdump says "listening on lo" once it captures.
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.contains("listening on") => break,
            Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                assert!(Instant::now() < deadline, "tcpdump did not start capturing");
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("tcpdump exited: {:?}", child.wait())
            }
        }
    }
    child
}

#[test]
fn kwire_decode_pcap_lists_the_same_frames_as_tsharks_kafka_dissector() {
    let Some(cluster) = support::cluster() else { return };
    let (Some(()), Some(())) = (tool("tcpdump"), tool("tshark")) else { return };
    let topic = unique("proxy-pcap");
    create_topic(&cluster, &topic, 2, 1);
    let dir = std::env::temp_dir();
    let proxy_pcap = dir.join(format!("{topic}-proxy.pcapng"));
    let tcpdump_pcap = dir.join(format!("{topic}-tcpdump.pcap"));
    let proxy = KwireProxy::start(&cluster, &["--pcap", proxy_pcap.to_str().unwrap()]);
    let ports = proxy.listener_ports();
    let mut tcpdump = start_tcpdump(&tcpdump_pcap, &ports);

    let mut producer = Command::new("kcat")
        .args(["-P", "-b", &proxy.bootstrap, "-t", &topic])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = (0..200).map(|i| format!("captured record {i}\n")).collect::<Vec<_>>().concat();
    producer.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    assert!(producer.wait().unwrap().success());
    let consumed = Command::new("kcat")
        .args(["-C", "-b", &proxy.bootstrap, "-t", &topic, "-o", "beginning", "-e", "-q"])
        .args(["-X", "fetch.wait.max.ms=100"])
        .output()
        .unwrap();
    assert_eq!(stdout(&consumed).lines().count(), 200);
    let via = support::Cluster { bootstrap: proxy.bootstrap.clone(), zookeeper: None };
    assert!(support::kwire(&via, &["offsets", &topic]).status.success());

    // kcat -e leaves its last Fetch waiting at the broker (fetch.wait.max.ms, 100 ms here): the
    // proxy prints a request once its answer came, so give that answer time to pass first.
    std::thread::sleep(Duration::from_secs(1));
    // What the proxy printed is what crossed its listeners; once the capture file holds as
    // much (or 30 s passed), stop tcpdump (SIGINT flushes its file).
    let run = proxy.stop();
    let mut printed = Frames::new();
    for d in run.pairs() {
        let key = (
            d["api_key"].as_i64().unwrap(),
            d["version"].as_i64().unwrap(),
            d["correlation_id"].as_i64().unwrap(),
        );
        *printed.entry(key).or_default() += 1;
    }
    wait_for_capture(&tcpdump_pcap, &ports, &printed);
    assert!(Command::new("kill").args(["-INT", &tcpdump.id().to_string()]).status().unwrap().success());
    tcpdump.wait().unwrap();

    let (kwire_tcpdump, docs) = kwire_frames(&tcpdump_pcap, &ports);
    let tshark_tcpdump = tshark_frames(&tcpdump_pcap, &ports);
    // Enough frames to compare (counted, not their kinds: how many kinds there are depends on
    // where the two partitions' leaders are).
    let frame_count: usize = kwire_tcpdump.values().sum();
    assert!(frame_count > 10, "{kwire_tcpdump:?}");
    assert_eq!(kwire_tcpdump, tshark_tcpdump, "tcpdump capture: kwire (left) vs tshark (right)");
    let notices: Vec<&Value> = docs.iter().filter(|d| d.get("notice").is_some()).collect();
    assert!(notices.is_empty(), "{notices:?}");

    // The proxy's own pcapng: the same frames for both readers, and the same as it printed.
    let (kwire_proxy_file, _) = kwire_frames(&proxy_pcap, &ports);
    assert_eq!(kwire_proxy_file, tshark_frames(&proxy_pcap, &ports), "proxy --pcap: kwire vs tshark");
    assert_eq!(kwire_proxy_file, printed, "decoded from the proxy's pcapng vs printed by the proxy");
    assert_eq!(kwire_tcpdump, printed, "tcpdump's capture vs printed by the proxy");
    let _ = std::fs::remove_file(proxy_pcap);
    let _ = std::fs::remove_file(tcpdump_pcap);
}

#[test]
fn a_damaged_or_foreign_capture_is_one_line_never_a_crash() {
    let Some(cluster) = support::cluster() else { return };
    let dir = std::env::temp_dir();
    let name = unique("damaged");
    let pcap = dir.join(format!("{name}.pcapng"));
    let proxy = KwireProxy::start(&cluster, &["--pcap", pcap.to_str().unwrap()]);
    let ports = proxy.listener_ports();
    let listed = Command::new("kcat").args(["-L", "-b", &proxy.bootstrap]).output().unwrap();
    assert!(listed.status.success());
    proxy.stop();

    let whole = std::fs::read(&pcap).unwrap();
    let cut = dir.join(format!("{name}-cut.pcapng"));
    std::fs::write(&cut, &whole[..whole.len() * 2 / 3]).unwrap();
    // kcat may bootstrap through any of the listeners: every one is a broker port.
    let mut args = vec!["decode".to_owned(), "--pcap".to_owned(), cut.to_str().unwrap().to_owned()];
    for p in &ports {
        args.extend(["--port".to_owned(), p.to_string()]);
    }
    let out = kwire_bare(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.lines().next().is_some_and(|l| l.contains("ApiVersions")), "{text}");
    assert!(
        text.lines().last().is_some_and(|l| l.contains("truncated capture: the record at byte")),
        "{text}"
    );

    let foreign = dir.join(format!("{name}.txt"));
    std::fs::write(&foreign, "GET / HTTP/1.1\r\n\r\n").unwrap();
    let out = kwire_bare(&["decode", "--pcap", foreign.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not a pcap or pcapng file (it starts with 47 45 54 20)"),
        "{}",
        stderr(&out)
    );
    for f in [pcap, cut, foreign] {
        let _ = std::fs::remove_file(f);
    }
}
