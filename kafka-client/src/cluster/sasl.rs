//! SASL authentication of a connection: SaslHandshake v1 picks the mechanism, then
//! SaslAuthenticate (v0–v2) carries its tokens. Runs after ApiVersions and before any other
//! request, and again on the same connection whenever the session lifetime the broker granted
//! (KIP-368, SaslAuthenticate v1+) is due for renewal (see `Client::reauthenticate`).
//!
//! The SaslHandshake is sent by `Client::authenticate` in `client.rs`, since it is a round trip
//! of the client's own (traced, throttle noted); the token exchange after it ([`exchange`]) is
//! here and reads only the [`ClientConfig`], so this file does not take from `client.rs`, which
//! calls it.
//!
//! `--trace` sees every SaslAuthenticate frame with its `auth_bytes` replaced by `<redacted>`:
//! the tokens carry the PLAIN password, SCRAM proofs (enough for an offline dictionary attack)
//! and OAUTHBEARER tokens.

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::cluster::client_config::ClientConfig;
use crate::error::ClientError;
use crate::net::connection::{Connection, Lane};
use crate::net::trace::{Direction, TraceEvent};
use crate::security::oauth_token::read_token;
use crate::security::scram::{random_nonce, ScramClient, ScramHash};
use crate::security::settings::{SaslConfig, SaslMechanism};
use kafka_wire::protocol::frame::{decode_response, encode_request};
use kafka_wire::protocol::messages::{sasl_authenticate, SaslAuthenticateRequest, SaslAuthenticateResponse};
use kafka_wire::protocol::Body as _;

/// What `--trace` shows in place of a SASL token.
const REDACTED: &[u8] = b"<redacted>";

/// When a session must be renewed: at 85% of the lifetime the broker granted (Kafka's Java
/// client renews between 85% and 95%), so requests in flight finish before the broker's
/// deadline.
pub(crate) fn renewal_time(authenticated_at: Instant, session_lifetime_ms: i64) -> Option<Instant> {
    let lifetime = u64::try_from(session_lifetime_ms).ok().filter(|ms| *ms > 0)?;
    Some(authenticated_at + Duration::from_millis(lifetime.saturating_mul(85) / 100))
}

/// The token exchange of `sasl`'s mechanism on `connection` (SaslAuthenticate at `version`),
/// after the SaslHandshake chose it; the last response, which carries the session lifetime.
pub(crate) async fn exchange(
    config: &ClientConfig,
    connection: &Connection,
    sasl: &SaslConfig,
    version: i16,
) -> Result<SaslAuthenticateResponse, ClientError> {
    let exchange = Exchange { config, connection, sasl, version };
    let last = match sasl.mechanism {
        SaslMechanism::Plain => exchange.plain().await?,
        SaslMechanism::ScramSha256 => exchange.scram(ScramHash::Sha256).await?,
        SaslMechanism::ScramSha512 => exchange.scram(ScramHash::Sha512).await?,
        SaslMechanism::OAuthBearer => exchange.oauthbearer().await?,
    };
    Ok(last)
}

/// One connection's token exchange.
struct Exchange<'a> {
    config: &'a ClientConfig,
    connection: &'a Connection,
    sasl: &'a SaslConfig,
    version: i16,
}

impl Exchange<'_> {
    fn refused(&self, message: impl Into<String>) -> ClientError {
        ClientError::Authentication {
            broker: self.connection.broker().clone(),
            mechanism: self.sasl.mechanism.name(),
            user: if self.sasl.username.is_empty() {
                self.sasl.principal()
            } else {
                self.sasl.username.clone()
            },
            message: message.into(),
        }
    }

    /// RFC 4616: `\0user\0password`, one round.
    async fn plain(&self) -> Result<SaslAuthenticateResponse, ClientError> {
        let mut token = vec![0];
        token.extend_from_slice(self.sasl.username.as_bytes());
        token.push(0);
        token.extend_from_slice(self.sasl.password.expose().as_bytes());
        self.send(token).await
    }

    /// RFC 5802: client-first, client-final with the proof, then the broker's signature checked.
    async fn scram(&self, hash: ScramHash) -> Result<SaslAuthenticateResponse, ClientError> {
        let nonce = random_nonce().map_err(|e| ClientError::SecurityConfig {
            message: format!("no randomness for the SCRAM nonce: {e}"),
        })?;
        let scram = ScramClient::new(hash, &self.sasl.username, self.sasl.password.expose(), &nonce);
        let first = self.send(scram.client_first()).await?;
        let (client_final, awaiting) =
            scram.client_final(&first.auth_bytes).map_err(|e| self.refused(e.to_string()))?;
        let last = self.send(client_final).await?;
        awaiting.verify(&last.auth_bytes).map_err(|e| self.refused(e.to_string()))?;
        Ok(last)
    }

    /// RFC 7628: `n,,\x01auth=Bearer <token>\x01\x01`. A refused token gets a JSON error
    /// challenge, which the client acknowledges with `\x01` to learn the final error.
    async fn oauthbearer(&self) -> Result<SaslAuthenticateResponse, ClientError> {
        let source = self.sasl.token.as_ref().ok_or_else(|| ClientError::SecurityConfig {
            message: "sasl.mechanism=OAUTHBEARER needs a token: sasl.oauthbearer.token.file, \
                      sasl.oauthbearer.token.command, or an unsecured JWS principal"
                .to_owned(),
        })?;
        let token = read_token(source)?;
        let message = format!("n,,\u{1}auth=Bearer {}\u{1}\u{1}", token.expose());
        let response = self.send(message.into_bytes()).await?;
        if response.auth_bytes.is_empty() {
            return Ok(response);
        }
        let challenge = String::from_utf8_lossy(&response.auth_bytes).into_owned();
        match self.send(vec![1]).await {
            Ok(_) => Err(self.refused(format!("token refused: {challenge}"))),
            Err(ClientError::Authentication { message, .. }) => {
                Err(self.refused(format!("{message} ({challenge})")))
            }
            Err(e) => Err(e),
        }
    }

    /// One SaslAuthenticate round; a broker error is an [`ClientError::Authentication`].
    async fn send(&self, token: Vec<u8>) -> Result<SaslAuthenticateResponse, ClientError> {
        let request = SaslAuthenticateRequest { auth_bytes: Bytes::from(token), ..Default::default() };
        let response = self.round_trip(&request).await?;
        if !response.error_code.is_ok() {
            let message = match &response.error_message {
                Some(m) if !m.is_empty() => m.clone(),
                _ => response.error_code.to_string(),
            };
            return Err(self.refused(message));
        }
        Ok(response)
    }

    /// A SaslAuthenticate round trip traced with its tokens redacted.
    async fn round_trip(
        &self,
        request: &SaslAuthenticateRequest,
    ) -> Result<SaslAuthenticateResponse, ClientError> {
        let broker = self.connection.broker();
        let api = sasl_authenticate::SPEC.key;
        let version = self.version;
        let client_id = Some(self.config.client_id.as_str());
        let response = self
            .connection
            .round_trip_in(
                Lane::Authentication,
                api,
                |correlation_id| {
                    let frame = encode_request(request, version, correlation_id, client_id)
                        .map_err(|source| ClientError::Encode { api, version, source })?;
                    if let Some(trace) = &self.config.trace {
                        let shown = SaslAuthenticateRequest {
                            auth_bytes: Bytes::from_static(REDACTED),
                            ..Default::default()
                        };
                        let redacted = encode_request(&shown, version, correlation_id, client_id)
                            .map_err(|source| ClientError::Encode { api, version, source })?;
                        trace(&TraceEvent {
                            direction: Direction::Request,
                            broker: &broker.addr,
                            api,
                            version,
                            correlation_id,
                            frame: &redacted,
                            decoded: &shown,
                        });
                    }
                    Ok(frame.into())
                },
                self.config.request_timeout,
            )
            .await?;
        let decoded = decode_response::<SaslAuthenticateRequest>(response.frame, version)
            .map(|(_, body)| body)
            .map_err(|source| ClientError::Decode { broker: broker.clone(), api, version, source })?;
        if let Some(trace) = &self.config.trace {
            let shown =
                SaslAuthenticateResponse { auth_bytes: Bytes::from_static(REDACTED), ..decoded.clone() };
            let mut frame = response.correlation_id.to_be_bytes().to_vec();
            if sasl_authenticate::SPEC.is_flexible(version) {
                // Response header v1: no tagged fields.
                frame.push(0);
            }
            frame.extend(shown.encode_body(version).map_err(|source| ClientError::Encode {
                api,
                version,
                source,
            })?);
            trace(&TraceEvent {
                direction: Direction::Response,
                broker: &broker.addr,
                api,
                version,
                correlation_id: response.correlation_id,
                frame: &frame,
                decoded: &shown,
            });
        }
        Ok(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_renewed_at_85_percent_of_its_lifetime_and_never_without_one() {
        let now = Instant::now();
        assert_eq!(renewal_time(now, 10_000), Some(now + Duration::from_millis(8500)));
        assert_eq!(renewal_time(now, 0), None);
        assert_eq!(renewal_time(now, -1), None);
    }
}
