//! `kwire proxy`: a Kafka-aware TCP proxy. One listener per broker; broker endpoints in the
//! responses that carry them are rewritten to the listeners (`kwire_capture::rewrite`), so all
//! of a client's connections stay on the proxy; every other byte passes unchanged. Each
//! request/response pair is printed (`exchange_output`), and with `--pcap` the conversation is
//! written as pcapng (`kwire_capture::PcapngWriter`).
//!
//! With `--faults` / `--fault`, each request goes past the rules first (kwire-faults: which
//! rule fires, the error answers it makes, the order of owed responses) and this file does what
//! the rule decided: waits, drops a response, cuts the connection, or answers in the broker's
//! place.
//!
//! The pure parts (frame pairing, rewriting, pcapng, fault decisions) live in kwire-capture and
//! kwire-faults with their tests; this file is the tokio shell: listeners, two forwarding
//! tasks per connection, and one printing thread fed through a bounded channel (so a slow
//! terminal slows the proxy down rather than growing its memory).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kafka_wire::protocol::frame::decode_response;
use kafka_wire::protocol::messages::MetadataRequest;
use kafka_wire::protocol::ApiKey;
use kwire_capture::rewrite::{carries_endpoints, rewrite_response};
use kwire_capture::{peek_request, Direction, Exchange, Pairer, PcapngWriter, RequestSummary, Unmatched};
use kwire_faults::corrupt::corrupt_fetch_response;
use kwire_faults::error_answer::error_answer;
use kwire_faults::owed::{Fate, Owed};
use kwire_faults::rewrite::rewrite_fields;
use kwire_faults::{Action, Decision, RequestFacts};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};

use crate::cli::ProxyArgs;
use crate::commands::proxy_control::{reload_on_hangup, serve_control, LiveRules};
use crate::commands::stop_signal::wait_for_stop;
use crate::commands::Context;
use crate::exchange_output::{parse_api_filter, AppliedFault, Filters, Place, Renderer};
use crate::exit::{Exit, Failure};
use crate::time::now_ns;

/// Items queued for the printing thread.
enum Item {
    /// A pair, and the fault a rule applied to it.
    Exchange(Arc<Names>, Exchange, Option<Decision>),
    Unmatched(Arc<Names>, Unmatched),
    Note(Arc<Names>, i64, String),
    Open(SocketAddr, SocketAddr, i64),
    Wire(SocketAddr, SocketAddr, Direction, Bytes, i64),
    Close(SocketAddr, SocketAddr, i64),
    /// Flush, then send the summary line back.
    Stop(std::sync::mpsc::Sender<String>),
}

/// A connection's name and ends as printed.
struct Names {
    connection: String,
    client: String,
    broker: String,
}

impl Names {
    fn place(&self) -> Place<'_> {
        Place { connection: &self.connection, client: &self.client, broker: &self.broker }
    }
}

/// Listeners by upstream endpoint, and the port the next one binds.
struct Routes {
    /// `None`: each listener binds port 0 (any free port).
    next_port: Option<u16>,
    by_upstream: HashMap<(String, i32), u16>,
}

struct Shared {
    bind_host: String,
    advertised_host: String,
    routes: Mutex<Routes>,
    items: mpsc::Sender<Item>,
    connections: AtomicU64,
    max_frame: usize,
    pcap: bool,
    faults: Option<Arc<LiveRules>>,
    /// Topic names by id (base64url text), from the Metadata answers passed on while rules
    /// are loaded: how a `topic` rule knows a Fetch v13+ that names its topic by id.
    topic_ids: RwLock<HashMap<String, String>>,
}

/// What a connection's two forwarding tasks share when fault rules are loaded.
#[derive(Default)]
struct ConnectionFaults {
    owed: Mutex<Owed>,
    /// Wakes the task writing to the client: a made answer may be due.
    made: Notify,
    /// The faults applied to requests still unanswered, by correlation id.
    applied: Mutex<HashMap<i32, Decision>>,
}

pub async fn run(ctx: &Context, args: &ProxyArgs) -> Result<(), Failure> {
    let usage = |m: String| Failure::new(Exit::USAGE, m);
    let faults = load_faults(args)?.map(Arc::new);
    if faults.is_some() || args.control.is_some() {
        for (flag, address) in [("--listen", Some(&args.listen)), ("--control", args.control.as_ref())] {
            let Some(address) = address else { continue };
            if !args.allow_remote_faults && !is_loopback(address) {
                return Err(usage(format!(
                    "{flag} {address} is not a loopback address: fault rules there would reach anyone who \
                     connects; listen on 127.0.0.1 or ::1, or pass --allow-remote-faults"
                )));
            }
        }
    }
    if let Some(live) = &faults {
        for rule in live.current().rules() {
            eprintln!("kwire proxy: fault rule {}: {}", rule.origin, rule.action);
        }
        tokio::spawn(reload_on_hangup(Arc::clone(live)));
    }
    if let Some(control) = &args.control {
        let live = faults.as_ref().ok_or_else(|| {
            usage("--control switches fault rules: give --faults FILE or --fault RULE too".to_owned())
        })?;
        let listener = TcpListener::bind(control)
            .await
            .map_err(|e| usage(format!("--control: cannot listen on {control}: {e}")))?;
        let at = listener.local_addr().map_or_else(|_| control.clone(), |a| a.to_string());
        eprintln!("kwire proxy: control endpoint on http://{at} (GET /metrics, GET /rules, POST /rules/N/on|off, POST /reload)");
        tokio::spawn(serve_control(listener, Arc::clone(live)));
    }
    let proxy = RunningProxy::start(ctx.format(), args, faults, Box::new(std::io::stdout()))?;
    wait_for_stop().await;
    let mut proxy = proxy;
    let summary = proxy.stop().await;
    eprintln!("kwire proxy: {summary}");
    if let Some(live) = &proxy.shared.faults {
        let set = live.current();
        for (rule, applied) in set.rules().iter().zip(set.applied()) {
            eprintln!("kwire proxy: fault rule {} ({}) applied {applied} times", rule.origin, rule.action);
        }
    }
    Ok(())
}

/// A proxy serving its listeners on the runtime, until [`stop`](Self::stop).
pub struct RunningProxy {
    shared: Arc<Shared>,
    /// The listeners standing for the `--upstream` brokers, in their order (`host:port`): a
    /// client's bootstrap.
    pub bootstrap: Vec<String>,
    printer: Option<std::thread::JoinHandle<()>>,
}

impl RunningProxy {
    /// Opens the listeners of `args` and starts printing pairs in `format` to `out`.
    pub fn start(
        format: crate::cli::Format,
        args: &ProxyArgs,
        faults: Option<Arc<LiveRules>>,
        out: Box<dyn std::io::Write + Send>,
    ) -> Result<Self, Failure> {
        let usage = |m: String| Failure::new(Exit::USAGE, m);
        let upstreams: Vec<(String, i32)> = args
            .upstream
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| split_host_port(s).ok_or_else(|| usage(format!("--upstream: `{s}` is not HOST:PORT"))))
            .collect::<Result<_, _>>()?;
        if upstreams.is_empty() {
            return Err(usage("--upstream: no brokers given".into()));
        }
        let (bind_host, port) = split_host_port(&args.listen)
            .ok_or_else(|| usage(format!("--listen: `{}` is not HOST:PORT", args.listen)))?;
        let port =
            u16::try_from(port).map_err(|_| usage(format!("--listen: port {port} is out of range")))?;
        let filters = Filters {
            apis: args.apis.iter().map(|a| parse_api_filter(a)).collect::<Result<_, _>>().map_err(usage)?,
            client_ids: args.pairs.client_ids.clone(),
            topics: args.pairs.topics.clone(),
            groups: args.pairs.groups.clone(),
        };
        let pcap = match &args.pcap {
            None => None,
            Some(path) => {
                let file = File::create(path)
                    .map_err(|e| usage(format!("cannot create {}: {e}", path.display())))?;
                Some(
                    PcapngWriter::new(BufWriter::with_capacity(1 << 20, file))
                        .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?,
                )
            }
        };
        let (items, receiver) = mpsc::channel(1024);
        let renderer = Renderer::new(format, filters);
        let printer = std::thread::spawn(move || print_items(receiver, renderer, pcap, out));
        // A listener on every address names itself to clients by a host they can reach.
        let advertised_host = match bind_host.as_str() {
            "0.0.0.0" | "::" | "[::]" => "localhost".to_owned(),
            h => h.to_owned(),
        };
        let shared = Arc::new(Shared {
            bind_host: bind_host.trim_start_matches('[').trim_end_matches(']').to_owned(),
            advertised_host,
            routes: Mutex::new(Routes {
                next_port: (port != 0).then_some(port),
                by_upstream: HashMap::new(),
            }),
            items,
            connections: AtomicU64::new(1),
            max_frame: args.max_frame,
            pcap: args.pcap.is_some(),
            faults,
            topic_ids: RwLock::new(HashMap::new()),
        });
        let mut bootstrap = Vec::new();
        for (host, port) in &upstreams {
            let local = listener_for(&shared, host, *port)
                .map_err(|e| Failure::new(Exit::USAGE, format!("cannot listen for {host}:{port}: {e}")))?;
            bootstrap.push(join_host_port(&shared.advertised_host, i32::from(local)));
        }
        Ok(Self { shared, bootstrap, printer: Some(printer) })
    }

    /// The rules in force, if any.
    pub fn faults(&self) -> Option<Arc<kwire_faults::FaultSet>> {
        self.shared.faults.as_ref().map(|live| live.current())
    }

    /// Flushes what is queued for printing and the pcapng file; returns the summary line. The
    /// listeners stay open until the runtime ends.
    pub async fn stop(&mut self) -> String {
        let (done, finished) = std::sync::mpsc::channel();
        let mut summary = String::new();
        if self.shared.items.send(Item::Stop(done)).await.is_ok() {
            if let Ok(Ok(text)) = tokio::task::spawn_blocking(move || finished.recv()).await {
                summary = text;
            }
        }
        drop(self.printer.take());
        summary
    }
}

/// The rules of `--faults FILE`, then of each `--fault`; `None` without either.
fn load_faults(args: &ProxyArgs) -> Result<Option<LiveRules>, Failure> {
    if args.faults.is_none() && args.fault.is_empty() {
        return Ok(None);
    }
    let seed = args.fault_seed.unwrap_or_else(|| now_ns().unsigned_abs());
    LiveRules::load(args.faults.clone(), args.fault.clone(), seed)
        .map(Some)
        .map_err(|e| Failure::new(Exit::USAGE, e))
}

/// Whether `address` (`host:port`) listens on loopback only.
fn is_loopback(address: &str) -> bool {
    split_host_port(address).is_some_and(|(host, _)| {
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    })
}

/// `host:port` or `[v6]:port`.
fn split_host_port(text: &str) -> Option<(String, i32)> {
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    (!host.is_empty()).then(|| (host.to_owned(), i32::from(port)))
}

fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The local port that stands for the upstream `host:port`, opening a listener for it the
/// first time it is named (at startup for `--upstream`, later when a response names a broker).
fn listener_for(shared: &Arc<Shared>, host: &str, port: i32) -> std::io::Result<u16> {
    let mut routes = shared.routes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(local) = routes.by_upstream.get(&(host.to_owned(), port)) {
        return Ok(*local);
    }
    let mut attempt = 0;
    let std_listener = loop {
        let wanted = routes.next_port.unwrap_or(0);
        match std::net::TcpListener::bind((shared.bind_host.as_str(), wanted)) {
            Ok(l) => {
                if let Some(p) = routes.next_port.as_mut() {
                    *p = p.wrapping_add(1);
                }
                break l;
            }
            // A fixed port in use: try the next ones.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && wanted != 0 && attempt < 64 => {
                attempt += 1;
                routes.next_port = Some(wanted.wrapping_add(1));
            }
            Err(e) => return Err(e),
        }
    };
    std_listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(std_listener)?;
    let local = listener.local_addr()?;
    let upstream = join_host_port(host, port);
    eprintln!("kwire proxy: listening on {local} for {upstream}");
    routes.by_upstream.insert((host.to_owned(), port), local.port());
    tokio::spawn(accept(listener, local, upstream, Arc::clone(shared)));
    Ok(local.port())
}

async fn accept(listener: TcpListener, local: SocketAddr, upstream: String, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((client, peer)) => {
                tokio::spawn(connection(client, peer, local, upstream.clone(), Arc::clone(&shared)));
            }
            // Out of file descriptors and the like: wait and go on accepting.
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
}

async fn connection(
    client: TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
    upstream: String,
    shared: Arc<Shared>,
) {
    let id = shared.connections.fetch_add(1, Ordering::Relaxed);
    let names =
        Arc::new(Names { connection: format!("#{id}"), client: peer.to_string(), broker: upstream.clone() });
    let broker = match TcpStream::connect(&upstream).await {
        Ok(b) => b,
        Err(e) => {
            let text =
                format!("cannot connect to the broker {upstream}: {e}; closing the client's connection");
            let _ = shared.items.send(Item::Note(names, now_ns(), text)).await;
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = broker.set_nodelay(true);
    if shared.pcap {
        let _ = shared.items.send(Item::Open(peer, local, now_ns())).await;
    }
    let pairer = Arc::new(Mutex::new(Pairer::default()));
    let (client_read, client_write) = client.into_split();
    let (broker_read, broker_write) = broker.into_split();
    let faults = shared.faults.is_some().then(ConnectionFaults::default);
    let (cut, _) = watch::channel(false);
    let side = Side {
        shared: &shared,
        names: &names,
        pairer: &pairer,
        client: peer,
        local,
        faults: faults.as_ref(),
        cut: &cut,
    };
    tokio::join!(
        side.forward(client_read, broker_write, Direction::ToBroker),
        side.forward(broker_read, client_write, Direction::ToClient)
    );
    let left = pairer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).finish();
    for exchange in left {
        let _ = shared.items.send(side.item(Ok(exchange))).await;
    }
    if shared.pcap {
        let _ = shared.items.send(Item::Close(peer, local, now_ns())).await;
    }
}

/// What both forwarding tasks of a connection share.
struct Side<'a> {
    shared: &'a Arc<Shared>,
    names: &'a Arc<Names>,
    pairer: &'a Mutex<Pairer>,
    client: SocketAddr,
    local: SocketAddr,
    faults: Option<&'a ConnectionFaults>,
    /// Set when a rule cuts the connection: both tasks close their side.
    cut: &'a watch::Sender<bool>,
}

impl Side<'_> {
    /// Forwards one direction frame by frame until the reader ends, then closes the writer.
    /// Bytes that are not a frame (or one above the cap) end the pairing of this direction:
    /// the rest passes through as it comes.
    async fn forward(
        &self,
        mut from: impl AsyncRead + Unpin,
        mut to: impl AsyncWrite + Unpin,
        direction: Direction,
    ) {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let mut cut = self.cut.subscribe();
        loop {
            loop {
                if *cut.borrow() {
                    let _ = to.shutdown().await;
                    return;
                }
                match take_frame(&mut buf, self.shared.max_frame) {
                    Ok(Some(whole)) => {
                        if self.frame(whole, direction, &mut to).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(why) => {
                        let text = format!(
                            "{why}; the rest of this connection's {} pass through unpaired",
                            match direction {
                                Direction::ToBroker => "requests",
                                Direction::ToClient => "responses",
                            }
                        );
                        let _ =
                            self.shared.items.send(Item::Note(Arc::clone(self.names), now_ns(), text)).await;
                        if to.write_all(&buf).await.is_ok() {
                            let _ = tokio::io::copy(&mut from, &mut to).await;
                        }
                        let _ = to.shutdown().await;
                        return;
                    }
                }
            }
            if buf.capacity() - buf.len() < 16 * 1024 {
                buf.reserve(64 * 1024);
            }
            tokio::select! {
                read = from.read_buf(&mut buf) => match read {
                    Ok(0) | Err(_) => {
                        let _ = to.shutdown().await;
                        return;
                    }
                    Ok(_) => {}
                },
                // Only the task writing to the client is woken for made answers.
                () = self.made_answer_due(direction) => {
                    if self.deliver_due(&mut to).await.is_err() {
                        return;
                    }
                }
                _ = cut.changed() => {
                    let _ = to.shutdown().await;
                    return;
                }
            }
        }
    }

    /// Resolves when a made answer may be due on the way to the client; never otherwise.
    async fn made_answer_due(&self, direction: Direction) {
        match (self.faults, direction) {
            (Some(f), Direction::ToClient) => f.made.notified().await,
            _ => std::future::pending().await,
        }
    }

    /// Writes the made answers now due to the client.
    async fn deliver_due(&self, to: &mut (impl AsyncWrite + Unpin)) -> std::io::Result<()> {
        let Some(f) = self.faults else { return Ok(()) };
        let due = lock(&f.owed).due();
        for frame in due {
            self.deliver(frame, now_ns(), to, Delivery::Write).await?;
        }
        Ok(())
    }

    /// What the rules decide for a request frame (size prefix included) whose header says
    /// `summary`, noted for its pair.
    fn decide(&self, whole: &Bytes, summary: &RequestSummary) -> Option<Decision> {
        let set = self.shared.faults.as_ref()?.current();
        let frame = whole.slice(4..);
        let topic_name_of = |id: &str| {
            self.shared.topic_ids.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(id).cloned()
        };
        let facts = RequestFacts {
            summary,
            frame: &frame,
            broker: &self.names.broker,
            topic_name_of: &topic_name_of,
        };
        let decision = set.decide(&facts, Instant::now())?;
        if let Some(f) = self.faults {
            lock(&f.applied).insert(summary.correlation_id, decision.clone());
        }
        Some(decision)
    }

    /// Cuts the connection: both tasks close their side.
    fn cut(&self) {
        self.cut.send_replace(true);
    }

    /// One whole frame (size prefix included): paired, rewritten if it is a response that
    /// names brokers, forwarded, queued for printing.
    async fn frame(
        &self,
        whole: Bytes,
        direction: Direction,
        to: &mut (impl AsyncWrite + Unpin),
    ) -> std::io::Result<()> {
        let at = now_ns();
        let items = &self.shared.items;
        match direction {
            Direction::ToBroker => {
                let mut fate = Fate::Pass;
                let mut cut_after = false;
                let mut pace_request = None;
                let mut made = None;
                // The header is read once, and only when rules are loaded.
                let summary = self.faults.and_then(|_| peek_request(&whole.slice(4..)));
                let decision = summary.as_ref().and_then(|s| self.decide(&whole, s));
                if let (Some(decision), Some(summary)) = (decision, &summary) {
                    match decision.action {
                        Action::Delay { on_response: false, .. } => tokio::time::sleep(decision.delay).await,
                        Action::Delay { on_response: true, .. } => fate = Fate::Delay(decision.delay),
                        Action::Hold { hold } => fate = Fate::Delay(hold),
                        Action::Bandwidth { bytes_per_second, on_response: true } => {
                            fate = Fate::Pace(bytes_per_second);
                        }
                        Action::Bandwidth { bytes_per_second, on_response: false } => {
                            pace_request = Some(bytes_per_second);
                        }
                        Action::DropResponse => fate = Fate::Drop,
                        Action::Corrupt => fate = Fate::Corrupt { version: summary.version },
                        Action::Rewrite { .. } => {
                            fate = Fate::Rewrite { api: summary.api, version: summary.version };
                        }
                        Action::CutBefore => {
                            self.request_not_forwarded(&whole, at).await;
                            self.cut();
                            return Err(std::io::Error::other("cut before forwarding"));
                        }
                        Action::CutAfter => cut_after = true,
                        Action::Error { code } => match error_answer(&whole.slice(4..), code) {
                            Ok(answer) => made = Some(Bytes::from(answer)),
                            Err(why) => {
                                if let Some(f) = self.faults {
                                    lock(&f.applied).remove(&summary.correlation_id);
                                }
                                let text =
                                    format!("fault rule {}: forwarded unchanged: {why}", decision.origin);
                                let _ = items.send(Item::Note(Arc::clone(self.names), at, text)).await;
                            }
                        },
                    }
                }
                if let Some(answer) = made {
                    // Paired with the request as if the broker had sent it, in its turn.
                    self.request_not_forwarded(&whole, at).await;
                    if let Some(f) = self.faults {
                        lock(&f.owed).made(answer);
                        f.made.notify_one();
                    }
                    return Ok(());
                }
                if let (Some(f), Some(summary)) = (self.faults, &summary) {
                    if summary.expects_response {
                        lock(&f.owed).forwarded(summary.correlation_id, fate);
                    }
                }
                // Known to the pairer before the broker can answer it: a paced request's last
                // bytes reach the broker well before its write returns.
                let mut paired = Vec::new();
                lock(self.pairer).request(whole.slice(4..), at, &mut |p| paired.push(p));
                match pace_request {
                    Some(rate) => write_paced(to, &whole, rate).await?,
                    None => to.write_all(&whole).await?,
                }
                if self.shared.pcap {
                    let _ =
                        items.send(Item::Wire(self.client, self.local, direction, whole.clone(), at)).await;
                }
                for p in paired {
                    let _ = items.send(self.item(p)).await;
                }
                if cut_after {
                    self.cut();
                    return Err(std::io::Error::other("cut after forwarding"));
                }
            }
            Direction::ToClient => {
                let correlation_id =
                    whole.get(4..8).map(|id| i32::from_be_bytes([id[0], id[1], id[2], id[3]]));
                let fate = match (self.faults, correlation_id) {
                    (Some(f), Some(id)) => lock(&f.owed).answered(id),
                    _ => Fate::Pass,
                };
                let mut whole = whole;
                match fate {
                    Fate::Delay(delay) => tokio::time::sleep(delay).await,
                    Fate::Corrupt { version } => {
                        let note = match corrupt_fetch_response(&whole.slice(4..), version) {
                            Some((corrupted, which)) => {
                                let mut out = Vec::with_capacity(4 + corrupted.len());
                                out.extend(&whole[..4]);
                                out.extend(corrupted);
                                whole = Bytes::from(out);
                                format!(
                                    "fault: corrupted the batch at offset {} of {}-{}",
                                    which.base_offset, which.topic, which.partition
                                )
                            }
                            None => "fault: a corrupt rule fired but the response has no whole batch: passed on unchanged"
                                .to_owned(),
                        };
                        let _ = self.shared.items.send(Item::Note(Arc::clone(self.names), at, note)).await;
                    }
                    Fate::Rewrite { api, version } => {
                        let rule = self
                            .faults
                            .zip(correlation_id)
                            .and_then(|(f, id)| lock(&f.applied).get(&id).cloned());
                        if let Some(Decision { action: Action::Rewrite { field, value }, origin, .. }) = rule
                        {
                            match rewrite_fields(&whole.slice(4..), api, version, &field, &value) {
                                Ok((rewritten, _)) => whole = size_prefixed(&rewritten),
                                Err(why) => {
                                    let note =
                                        format!("fault rule {origin}: response passed on unchanged: {why}");
                                    let _ = self
                                        .shared
                                        .items
                                        .send(Item::Note(Arc::clone(self.names), at, note))
                                        .await;
                                }
                            }
                        }
                    }
                    Fate::Pass | Fate::Drop | Fate::Pace(_) => {}
                }
                let delivery = match fate {
                    Fate::Drop => Delivery::Withhold,
                    Fate::Pace(rate) => Delivery::Pace(rate),
                    _ => Delivery::Write,
                };
                self.deliver(whole, at, to, delivery).await?;
                self.deliver_due(to).await?;
            }
        }
        Ok(())
    }

    /// A request the proxy does not forward (answered by a rule, or cut): paired and printed
    /// like the others.
    async fn request_not_forwarded(&self, whole: &Bytes, at: i64) {
        let mut paired = Vec::new();
        lock(self.pairer).request(whole.slice(4..), at, &mut |p| paired.push(p));
        for p in paired {
            let _ = self.shared.items.send(self.item(p)).await;
        }
    }

    /// One response frame (size prefix included) on its way to the client: paired, rewritten
    /// if it names brokers, written as `delivery` says, printed.
    async fn deliver(
        &self,
        whole: Bytes,
        at: i64,
        to: &mut (impl AsyncWrite + Unpin),
        delivery: Delivery,
    ) -> std::io::Result<()> {
        let items = &self.shared.items;
        let answered = lock(self.pairer).response(whole.slice(4..), at);
        let mut sent = whole;
        let answered = match answered {
            Ok(mut exchange) => {
                let api = exchange.request.summary.api;
                let version = exchange.request.summary.version;
                if self.faults.is_some() && api == ApiKey::METADATA {
                    if let Some(response) = &exchange.response {
                        self.learn_topic_ids(&response.frame, version);
                    }
                }
                if let Some(response) = exchange.response.as_mut().filter(|_| carries_endpoints(api, version))
                {
                    let shared = self.shared;
                    let mut map = |host: &str, port: i32| {
                        listener_for(shared, host, port)
                            .ok()
                            .map(|local| (shared.advertised_host.clone(), i32::from(local)))
                    };
                    match rewrite_response(api, version, &response.frame, &mut map) {
                        Ok(Some(rewritten)) => {
                            sent = size_prefixed(&rewritten);
                            response.frame = rewritten;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            let text = format!("{api} v{version} response forwarded unchanged (its broker endpoints are not rewritten): {e}");
                            let _ = items.send(Item::Note(Arc::clone(self.names), at, text)).await;
                        }
                    }
                }
                Ok(exchange)
            }
            Err(unmatched) => Err(unmatched),
        };
        if delivery != Delivery::Withhold {
            match delivery {
                Delivery::Pace(rate) => write_paced(to, &sent, rate).await?,
                _ => to.write_all(&sent).await?,
            }
            if self.shared.pcap {
                let _ = items.send(Item::Wire(self.client, self.local, Direction::ToClient, sent, at)).await;
            }
        }
        let _ = items.send(self.item(answered)).await;
        Ok(())
    }

    /// Notes the topic ids a Metadata answer (`frame`, without its size prefix) gives.
    fn learn_topic_ids(&self, frame: &Bytes, version: i16) {
        let Ok((_, answer)) = decode_response::<MetadataRequest>(frame.clone(), version) else { return };
        let known: Vec<(String, String)> = answer
            .topics
            .into_iter()
            .filter_map(|t| Some((t.topic_id.filter(|id| !id.is_zero())?.to_string(), t.name?)))
            .collect();
        if !known.is_empty() {
            self.shared.topic_ids.write().unwrap_or_else(std::sync::PoisonError::into_inner).extend(known);
        }
    }

    fn item(&self, paired: Result<Exchange, Unmatched>) -> Item {
        match paired {
            Ok(exchange) => {
                let fault = self
                    .faults
                    .and_then(|f| lock(&f.applied).remove(&exchange.request.summary.correlation_id));
                Item::Exchange(Arc::clone(self.names), exchange, fault)
            }
            Err(unmatched) => Item::Unmatched(Arc::clone(self.names), unmatched),
        }
    }
}

/// `frame` (a response without its size prefix) with its size prefix, as it goes on the wire.
fn size_prefixed(frame: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(4 + frame.len());
    out.extend((frame.len() as u32).to_be_bytes());
    out.extend_from_slice(frame);
    Bytes::from(out)
}

/// How [`Side::deliver`] passes a response on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    Write,
    /// At no more than this many bytes a second.
    Pace(u64),
    /// Not at all (a dropped response).
    Withhold,
}

/// Writes `frame` at no more than `bytes_per_second`: a slice of what 10 ms allows, each
/// written when the bytes before it have had their time (`action = bandwidth`).
async fn write_paced(
    to: &mut (impl AsyncWrite + Unpin),
    frame: &[u8],
    bytes_per_second: u64,
) -> std::io::Result<()> {
    const TICKS_PER_SECOND: u64 = 100;
    let slice = usize::try_from((bytes_per_second / TICKS_PER_SECOND).max(1)).unwrap_or(usize::MAX);
    let start = tokio::time::Instant::now();
    let mut sent = 0u64;
    for piece in frame.chunks(slice) {
        to.write_all(piece).await?;
        to.flush().await?;
        sent += piece.len() as u64;
        let due = std::time::Duration::from_secs_f64(sent as f64 / bytes_per_second as f64);
        tokio::time::sleep_until(start + due).await;
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Takes one whole frame (size prefix included) off the front of `buf`; `Ok(None)` until it is
/// all there. A negative size or one above `max_frame` is an error naming it.
fn take_frame(buf: &mut BytesMut, max_frame: usize) -> Result<Option<Bytes>, String> {
    let Some(prefix) = buf.get(..4) else { return Ok(None) };
    let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let size = usize::try_from(size).map_err(|_| format!("not a Kafka frame (size prefix {size})"))?;
    if size > max_frame {
        return Err(format!("a frame of {size} bytes, above the {max_frame}-byte cap (or not Kafka)"));
    }
    if buf.len() < 4 + size {
        buf.reserve(4 + size - buf.len());
        return Ok(None);
    }
    Ok(Some(buf.split_to(4 + size).freeze()))
}

/// The printing thread: renders pairs and notes to `out` (flushed whenever the queue runs
/// empty), writes the pcapng file, and at `Stop` sends the summary line back.
fn print_items(
    mut items: mpsc::Receiver<Item>,
    mut renderer: Renderer,
    mut pcap: Option<PcapngWriter<BufWriter<File>>>,
    out: Box<dyn std::io::Write + Send>,
) {
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let mut pcap_failed = false;
    while let Some(item) = items.blocking_recv() {
        let line = match item {
            Item::Exchange(names, exchange, fault) => {
                let action = fault.as_ref().map(Decision::applied);
                let applied = fault
                    .as_ref()
                    .zip(action.as_deref())
                    .map(|(d, action)| AppliedFault { rule: &d.origin, action });
                renderer.exchange_with_fault(names.place(), &exchange, applied)
            }
            Item::Unmatched(names, unmatched) => Some(renderer.unmatched(names.place(), &unmatched)),
            Item::Note(names, at, text) => Some(renderer.note(names.place(), at, &text)),
            Item::Open(client, local, at) => {
                pcap_failed |= pcap.as_mut().is_some_and(|w| w.open(client, local, at).is_err());
                None
            }
            Item::Wire(client, local, direction, bytes, at) => {
                pcap_failed |=
                    pcap.as_mut().is_some_and(|w| w.data(client, local, direction, &bytes, at).is_err());
                None
            }
            Item::Close(client, local, at) => {
                pcap_failed |= pcap.as_mut().is_some_and(|w| w.close(client, local, at).is_err());
                None
            }
            Item::Stop(done) => {
                if let Some(w) = pcap.take() {
                    pcap_failed |= w.into_inner().is_err();
                }
                let _ = out.flush();
                let mut summary = renderer.summary();
                if pcap_failed {
                    summary.push_str("; writing the pcapng file failed: it is incomplete");
                }
                let _ = done.send(summary);
                return;
            }
        };
        if let Some(line) = line {
            let _ = writeln!(out, "{line}");
        }
        if items.is_empty() {
            let _ = out.flush();
            if let Some(w) = pcap.as_mut() {
                pcap_failed |= w.flush().is_err();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_including_ipv6_in_brackets() {
        assert_eq!(split_host_port("127.0.0.1:9092"), Some(("127.0.0.1".into(), 9092)));
        assert_eq!(split_host_port("[::1]:19092"), Some(("::1".into(), 19092)));
        assert_eq!(split_host_port("broker:99999"), None);
        assert_eq!(split_host_port(":9092"), None);
        assert_eq!(join_host_port("::1", 9), "[::1]:9");
        assert!(is_loopback("127.0.0.1:0") && is_loopback("[::1]:9") && is_loopback("localhost:1"));
        assert!(!is_loopback("0.0.0.0:9092") && !is_loopback("10.0.0.5:9092") && !is_loopback("broker:1"));
    }

    #[test]
    fn frames_come_off_whole_and_a_foreign_size_is_named() {
        let mut buf = BytesMut::from(&[0, 0, 0, 2, 7, 8, 0, 0][..]);
        assert_eq!(take_frame(&mut buf, 100).unwrap().unwrap().as_ref(), &[0, 0, 0, 2, 7, 8]);
        assert_eq!(take_frame(&mut buf, 100), Ok(None));
        let mut text = BytesMut::from(&b"GET / HTTP/1.1"[..]);
        assert!(take_frame(&mut text, 100).unwrap_err().contains("above the 100-byte cap"));
        let mut negative = BytesMut::from(&[0xff, 0, 0, 0][..]);
        assert!(take_frame(&mut negative, 100).unwrap_err().starts_with("not a Kafka frame"));
    }
}
