//! How bytes reach a broker: a TCP socket, or TLS over it. The connection layer above
//! (`connection.rs`) sees one byte stream either way; the TLS handshake happens here, once per
//! connection, within the connect timeout.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::error::{BrokerRef, ClientError};
use crate::security::settings::{SecurityProtocol, TlsConfig};

/// A connected byte stream to a broker.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// What a new connection runs over; built once per client (the TLS settings, PEM files
/// included, are read when the client connects).
#[derive(Clone)]
pub(crate) enum Transport {
    /// Plain TCP.
    Plain,
    /// TLS over TCP.
    #[cfg(feature = "tls")]
    Tls(Arc<tokio_rustls::rustls::ClientConfig>),
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Plain => f.write_str("Plain"),
            #[cfg(feature = "tls")]
            Self::Tls(_) => f.write_str("Tls"),
        }
    }
}

impl Transport {
    /// The transport `protocol` asks for, with its TLS settings loaded and checked.
    pub fn new(protocol: SecurityProtocol, tls: &TlsConfig) -> Result<Self, ClientError> {
        if !protocol.uses_tls() {
            return Ok(Self::Plain);
        }
        #[cfg(feature = "tls")]
        {
            Ok(Self::Tls(crate::security::tls::client_config(tls)?))
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = tls;
            Err(ClientError::SecurityConfig {
                message: format!(
                    "security.protocol={protocol} needs TLS, and this build of kafka-client lacks its `tls` feature"
                ),
            })
        }
    }

    /// Opens a TCP connection (with `TCP_NODELAY`) and, for TLS, completes the handshake, all
    /// within `timeout`: a peer that never answers the handshake is a timeout, not a hang.
    pub async fn connect(
        &self,
        broker: &BrokerRef,
        timeout: Duration,
    ) -> Result<Box<dyn Stream>, ClientError> {
        match tokio::time::timeout(timeout, self.connect_inner(broker)).await {
            Ok(result) => result,
            Err(_) => {
                let e = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                );
                match self {
                    Self::Plain => Err(ClientError::Connect { broker: broker.clone(), source: Arc::new(e) }),
                    #[cfg(feature = "tls")]
                    Self::Tls(_) => Err(ClientError::Tls {
                        broker: broker.clone(),
                        message: format!(
                            "no TLS handshake within {timeout:?}: is this a TLS listener (security.protocol)?"
                        ),
                    }),
                }
            }
        }
    }

    async fn connect_inner(&self, broker: &BrokerRef) -> Result<Box<dyn Stream>, ClientError> {
        let tcp = TcpStream::connect(broker.addr.as_str())
            .await
            .map_err(|e| ClientError::Connect { broker: broker.clone(), source: Arc::new(e) })?;
        tcp.set_nodelay(true)
            .map_err(|e| ClientError::Connect { broker: broker.clone(), source: Arc::new(e) })?;
        match self {
            Self::Plain => Ok(Box::new(tcp)),
            #[cfg(feature = "tls")]
            Self::Tls(config) => Ok(Box::new(crate::security::tls::handshake(config, broker, tcp).await?)),
        }
    }
}
