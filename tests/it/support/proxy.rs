//! A loopback TCP fault proxy: listens on 127.0.0.1 (a free port), forwards every connection
//! to one broker, and can delay, cut or corrupt the broker's responses, switchable while it
//! runs. Requests pass unchanged; faults apply to whole response frames (the proxy reads the
//! 4-byte size prefix, then the frame), so a test knows exactly which response it hit.
//!
//! Plain threads and blocking sockets: it works the same under any test runtime.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What happens to the broker's next response frame(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward unchanged.
    Pass,
    /// Hold the frame this long, then forward it.
    Delay(Duration),
    /// Forward the size prefix and half of the frame, then close both sides.
    Cut,
    /// Invert every byte after the correlation id (the header stays intact, so the frame
    /// reaches the request it answers, and its body does not decode).
    Flip,
    /// Replace the size prefix with a size far above any client's limit (2^31 − 16).
    HugeSize,
    /// Send an HTTP error page instead of the frame, and keep the connection open.
    Garbage,
}

#[derive(Debug)]
struct State {
    fault: Fault,
    /// Apply `fault` to this many more frames, then go back to `Pass`; `None`: keep it.
    remaining: Option<u32>,
}

impl State {
    fn take(&mut self) -> Fault {
        let fault = self.fault;
        if let Some(n) = &mut self.remaining {
            *n -= 1;
            if *n == 0 {
                self.fault = Fault::Pass;
                self.remaining = None;
            }
        }
        fault
    }
}

/// A running proxy; dropping it closes the listener and every connection it carries.
#[derive(Debug)]
pub struct Proxy {
    addr: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    frames: Arc<AtomicUsize>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Starts forwarding 127.0.0.1:<free port> to `target` (`host:port`).
    pub fn start(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().unwrap().to_string();
        let proxy = Self {
            addr,
            state: Arc::new(Mutex::new(State { fault: Fault::Pass, remaining: None })),
            stop: Arc::default(),
            accepted: Arc::default(),
            frames: Arc::default(),
            sockets: Arc::default(),
        };
        let target = target.to_owned();
        let (state, stop, accepted, frames, sockets) = (
            Arc::clone(&proxy.state),
            Arc::clone(&proxy.stop),
            Arc::clone(&proxy.accepted),
            Arc::clone(&proxy.frames),
            Arc::clone(&proxy.sockets),
        );
        thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(upstream) = TcpStream::connect(&target) else {
                    // The broker is down: the client sees the connection close at once.
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                accepted.fetch_add(1, Ordering::SeqCst);
                let _ = client.set_nodelay(true);
                let _ = upstream.set_nodelay(true);
                {
                    let mut open = sockets.lock().unwrap();
                    open.push(client.try_clone().unwrap());
                    open.push(upstream.try_clone().unwrap());
                }
                let (mut c_in, mut u_out) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                thread::spawn(move || {
                    let _ = std::io::copy(&mut c_in, &mut u_out);
                    let _ = u_out.shutdown(Shutdown::Write);
                });
                let (state, frames) = (Arc::clone(&state), Arc::clone(&frames));
                thread::spawn(move || responses(upstream, client, &state, &frames));
            }
        });
        proxy
    }

    /// The proxy's own `127.0.0.1:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Applies `fault` to every response from now on.
    pub fn set(&self, fault: Fault) {
        *self.state.lock().unwrap() = State { fault, remaining: None };
    }

    /// Applies `fault` to the next response only, then forwards unchanged again.
    pub fn once(&self, fault: Fault) {
        *self.state.lock().unwrap() = State { fault, remaining: Some(1) };
    }

    /// Connections accepted (and forwarded to the broker) so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Response frames seen so far (faulted or not).
    pub fn frames(&self) -> usize {
        self.frames.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees `stop`.
        let _ = TcpStream::connect(&self.addr);
        for s in self.sockets.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Forwards response frames from `upstream` to `client`, applying the current fault to each.
fn responses(mut upstream: TcpStream, mut client: TcpStream, state: &Mutex<State>, frames: &AtomicUsize) {
    let close = |a: &TcpStream, b: &TcpStream| {
        let _ = a.shutdown(Shutdown::Both);
        let _ = b.shutdown(Shutdown::Both);
    };
    loop {
        let mut size = [0u8; 4];
        if upstream.read_exact(&mut size).is_err() {
            close(&upstream, &client);
            return;
        }
        let len = usize::try_from(u32::from_be_bytes(size)).unwrap();
        let mut frame = vec![0u8; len];
        if upstream.read_exact(&mut frame).is_err() {
            close(&upstream, &client);
            return;
        }
        frames.fetch_add(1, Ordering::SeqCst);
        let fault = state.lock().unwrap().take();
        let written = match fault {
            Fault::Pass => client.write_all(&size).and_then(|()| client.write_all(&frame)),
            Fault::Delay(d) => {
                thread::sleep(d);
                client.write_all(&size).and_then(|()| client.write_all(&frame))
            }
            Fault::Cut => {
                let _ = client.write_all(&size).and_then(|()| client.write_all(&frame[..len / 2]));
                let _ = client.flush();
                close(&upstream, &client);
                return;
            }
            Fault::Flip => {
                for b in frame.iter_mut().skip(4) {
                    *b = !*b;
                }
                client.write_all(&size).and_then(|()| client.write_all(&frame))
            }
            Fault::HugeSize => {
                client.write_all(&0x7fff_fff0_u32.to_be_bytes()).and_then(|()| client.write_all(&frame))
            }
            Fault::Garbage => client.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
        };
        if written.is_err() {
            close(&upstream, &client);
            return;
        }
    }
}
