//! [`ClientConfig`]: how to reach and talk to a cluster. Its own file, below both the
//! [`Client`](crate::Client) and the SASL exchange (`sasl.rs`) that reads it, which the client
//! runs when it opens a connection.

use std::collections::HashMap;
use std::time::Duration;

use crate::error::ClientError;
use crate::net::address::parse_bootstrap;
use crate::net::trace::TraceHook;
use crate::security::settings::{SaslConfig, SecurityProtocol, TlsConfig};
use kafka_wire::protocol::frame::DEFAULT_MAX_FRAME;

/// How to reach and talk to a cluster.
#[derive(Clone)]
pub struct ClientConfig {
    /// `host:port` addresses to bootstrap from; the first reachable one is used.
    pub bootstrap: Vec<String>,
    /// The `client.id` sent in every request header (brokers log it and apply quotas by it);
    /// `kwire` by default.
    pub client_id: String,
    /// How long opening one TCP connection may take (5 s by default); per address, not per call.
    pub connect_timeout: Duration,
    /// How long one request waits for its response (30 s by default); the overall deadline of a
    /// call is its own `timeout` argument or option.
    pub request_timeout: Duration,
    /// Largest response frame accepted, in bytes; a larger size prefix fails the connection with
    /// [`ClientError::InvalidFrame`].
    pub max_frame: usize,
    /// Called with every request and response frame; `None` (the default) traces nothing.
    /// SaslAuthenticate frames are shown with their tokens replaced by `<redacted>`.
    pub trace: Option<TraceHook>,
    /// Kafka's `security.protocol`: TLS and/or SASL on every connection (PLAINTEXT by default).
    pub security_protocol: SecurityProtocol,
    /// TLS settings, used when `security_protocol` is SSL or SASL_SSL.
    pub tls: TlsConfig,
    /// SASL settings, needed when `security_protocol` is SASL_PLAINTEXT or SASL_SSL.
    pub sasl: Option<SaslConfig>,
    /// Where to connect instead of an address brokers advertise (`advertised host:port` →
    /// `host:port`): for tunnels, NAT, and fault-injecting proxies in tests. Errors and
    /// metadata still name the advertised address. Empty by default.
    pub address_map: HashMap<String, String>,
    /// The rack this client runs in (`client.rack`): sent in every Fetch (v11+, Kafka 2.4), so a
    /// leader with a rack-aware `replica.selector.class` can name a replica in this rack to
    /// read from (KIP-392). `None` (the default): always read from the leader.
    pub client_rack: Option<String>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("bootstrap", &self.bootstrap)
            .field("client_id", &self.client_id)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_frame", &self.max_frame)
            .field("trace", &self.trace.is_some())
            .field("security_protocol", &self.security_protocol)
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("address_map", &self.address_map)
            .field("client_rack", &self.client_rack)
            .finish()
    }
}

impl ClientConfig {
    /// A configuration from a comma-separated `host:port` list, checked now.
    pub fn new(bootstrap: &str) -> Result<Self, ClientError> {
        Ok(Self {
            bootstrap: parse_bootstrap(bootstrap)?,
            client_id: "kwire".to_owned(),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_frame: DEFAULT_MAX_FRAME,
            trace: None,
            security_protocol: SecurityProtocol::Plaintext,
            tls: TlsConfig::default(),
            sasl: None,
            address_map: HashMap::new(),
            client_rack: None,
        })
    }
}
