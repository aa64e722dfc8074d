//! OAUTHBEARER tokens (KIP-255): read from a file or a command at each authentication, or an
//! unsecured JWS (`alg: none`) made for a test cluster's unsecured validator.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::error::ClientError;
use crate::security::settings::{Secret, TokenSource};

/// The token to send now. Read afresh every time, so a token refreshed on disk or by its
/// command is used once the old one has expired (each new connection, each re-authentication).
pub(crate) fn read_token(source: &TokenSource) -> Result<Secret, ClientError> {
    let token = match source {
        TokenSource::File(path) => {
            std::fs::read_to_string(path).map_err(|e| ClientError::SecurityConfig {
                message: format!("cannot read the OAUTHBEARER token file {}: {e}", path.display()),
            })?
        }
        TokenSource::Command(command) => {
            let output = std::process::Command::new("sh").arg("-c").arg(command).output().map_err(|e| {
                ClientError::SecurityConfig {
                    message: format!("cannot run the OAUTHBEARER token command: {e}"),
                }
            })?;
            if !output.status.success() {
                return Err(ClientError::SecurityConfig {
                    message: format!("the OAUTHBEARER token command failed ({})", output.status),
                });
            }
            String::from_utf8(output.stdout).map_err(|_| ClientError::SecurityConfig {
                message: "the OAUTHBEARER token command printed something that is not UTF-8".to_owned(),
            })?
        }
        TokenSource::Unsecured { principal, lifetime_s } => {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            return Ok(unsecured_jws(principal, now, *lifetime_s));
        }
    };
    let token = token.trim();
    // RFC 6750's b64token: the characters a bearer token may have.
    let valid =
        !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b));
    if !valid {
        return Err(ClientError::SecurityConfig {
            message: "the OAUTHBEARER token is empty or has characters a bearer token cannot have".to_owned(),
        });
    }
    Ok(Secret::new(token))
}

/// An unsigned JWS: `{"alg":"none"}` and the claims `sub`, `iat`, `exp` (seconds since the
/// epoch), with an empty signature.
pub(crate) fn unsecured_jws(principal: &str, now_s: u64, lifetime_s: u64) -> Secret {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
    let sub: String = principal
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => vec![],
            c => vec![c],
        })
        .collect();
    let claims = format!(r#"{{"sub":"{sub}","iat":{now_s},"exp":{}}}"#, now_s.saturating_add(lifetime_s));
    Secret::new(format!("{header}.{}.", URL_SAFE_NO_PAD.encode(claims)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsecured_jws_carries_the_principal_and_its_expiry() {
        let token = unsecured_jws("admin", 1_000, 3600);
        let parts: Vec<&str> = token.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(URL_SAFE_NO_PAD.decode(parts[0]).unwrap(), br#"{"alg":"none"}"#);
        let claims = String::from_utf8(URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims, r#"{"sub":"admin","iat":1000,"exp":4600}"#);
        assert_eq!(parts[2], "");
    }

    #[test]
    fn a_token_file_rewritten_on_disk_is_read_again() {
        let dir = std::env::temp_dir().join(format!("kwire-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        let source = TokenSource::File(path.clone());
        std::fs::write(&path, "first.token.\n").unwrap();
        assert_eq!(read_token(&source).unwrap().expose(), "first.token.");
        std::fs::write(&path, "second.token.").unwrap();
        assert_eq!(read_token(&source).unwrap().expose(), "second.token.");
        std::fs::write(&path, "two words").unwrap();
        assert!(read_token(&source).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_token_command_prints_the_token() {
        let source = TokenSource::Command("printf 'abc.def.'".to_owned());
        assert_eq!(read_token(&source).unwrap().expose(), "abc.def.");
        let failing = TokenSource::Command("exit 3".to_owned());
        assert!(read_token(&failing).unwrap_err().to_string().contains("failed"));
    }
}
