//! The SCRAM-SHA-256/512 client (RFC 5802, RFC 7677): salted password with PBKDF2, the
//! client proof, and the broker's signature verified before the session is trusted.
//!
//! Sans-IO: the nonce is an argument and the messages go in and out as bytes; `sasl.rs`
//! carries them in SaslAuthenticate requests.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use kafka_wire::protocol::scram::{
    client_first_bare, parse_server_final, parse_server_first, ScramMessageError, CHANNEL_BINDING, GS2_HEADER,
};

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScramHash {
    Sha256,
    Sha512,
}

impl ScramHash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => {
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            Self::Sha512 => {
                let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Self::Sha256 => pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec(),
            Self::Sha512 => pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec(),
        }
    }
}

/// Why a SCRAM exchange failed on the client's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScramError {
    /// The broker's message did not parse (or carried `e=`).
    Message(ScramMessageError),
    /// The salt was not base64.
    Salt,
    /// The broker's signature does not match: it does not know the password, so it is not the
    /// broker it claims to be (or the exchange was tampered with).
    ServerSignature,
}

impl std::fmt::Display for ScramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Message(e) => e.fmt(f),
            Self::Salt => f.write_str("the broker's SCRAM salt is not base64"),
            Self::ServerSignature => f.write_str(
                "the broker's SCRAM signature does not match: it does not hold this user's credentials",
            ),
        }
    }
}

impl From<ScramMessageError> for ScramError {
    fn from(e: ScramMessageError) -> Self {
        Self::Message(e)
    }
}

/// One SCRAM exchange, from the client's first message to the verified server signature.
#[derive(Debug)]
pub(crate) struct ScramClient {
    hash: ScramHash,
    password: String,
    client_nonce: String,
    client_first_bare: String,
}

/// What the client keeps between its final message and the broker's.
#[derive(Debug)]
pub(crate) struct AwaitingServerFinal {
    expected_signature: Vec<u8>,
}

impl ScramClient {
    /// An exchange for `username` with `client_nonce` (printable ASCII without commas; callers
    /// make it random, tests pass RFC 7677's).
    pub fn new(hash: ScramHash, username: &str, password: &str, client_nonce: &str) -> Self {
        Self {
            hash,
            password: password.to_owned(),
            client_nonce: client_nonce.to_owned(),
            client_first_bare: client_first_bare(username, client_nonce),
        }
    }

    /// The client's first message: GS2 header, user name, nonce.
    pub fn client_first(&self) -> Vec<u8> {
        format!("{GS2_HEADER}{}", self.client_first_bare).into_bytes()
    }

    /// Reads the broker's first message and returns the client's final message (with the
    /// proof) and what is needed to check the broker's answer.
    pub fn client_final(&self, server_first: &[u8]) -> Result<(Vec<u8>, AwaitingServerFinal), ScramError> {
        let first = parse_server_first(server_first, &self.client_nonce)?;
        let salt = STANDARD.decode(first.salt_base64).map_err(|_| ScramError::Salt)?;
        let salted = self.hash.salted_password(self.password.as_bytes(), &salt, first.iterations);
        let client_key = self.hash.hmac(&salted, b"Client Key");
        let stored_key = self.hash.hash(&client_key);
        let without_proof = format!("{CHANNEL_BINDING},r={}", first.nonce);
        // `server_first` parsed as UTF-8 above, so this is the same text.
        let server_first = String::from_utf8_lossy(server_first);
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let client_signature = self.hash.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&client_signature).map(|(k, s)| k ^ s).collect();
        let server_key = self.hash.hmac(&salted, b"Server Key");
        let expected_signature = self.hash.hmac(&server_key, auth_message.as_bytes());
        let message = format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes();
        Ok((message, AwaitingServerFinal { expected_signature }))
    }
}

impl AwaitingServerFinal {
    /// Checks the broker's final message: its signature must be the one only a holder of the
    /// user's stored credentials can compute.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let verifier = parse_server_final(server_final)?;
        let signature = STANDARD.decode(verifier.verifier_base64).map_err(|_| ScramError::ServerSignature)?;
        if signature == self.expected_signature {
            Ok(())
        } else {
            Err(ScramError::ServerSignature)
        }
    }
}

/// A fresh client nonce: 24 random bytes in base64 (printable, no comma).
pub(crate) fn random_nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 24];
    getrandom::getrandom(&mut bytes)?;
    Ok(STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 section 3: user "user", password "pencil".
    const NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const SERVER_FIRST: &[u8] =
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &[u8] = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    #[test]
    fn the_rfc_7677_sha_256_exchange_gives_its_proof_and_accepts_its_server_signature() {
        let client = ScramClient::new(ScramHash::Sha256, "user", "pencil", NONCE);
        assert_eq!(client.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let (client_final, awaiting) = client.client_final(SERVER_FIRST).unwrap();
        assert_eq!(String::from_utf8(client_final).unwrap(), CLIENT_FINAL);
        awaiting.verify(SERVER_FINAL).unwrap();
    }

    #[test]
    fn a_broker_that_does_not_know_the_password_is_caught_by_its_signature() {
        let client = ScramClient::new(ScramHash::Sha256, "user", "pencil", NONCE);
        let (_, awaiting) = client.client_final(SERVER_FIRST).unwrap();
        let forged = b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        assert_eq!(awaiting.verify(forged), Err(ScramError::ServerSignature));
        assert!(matches!(awaiting.verify(b"e=invalid-proof"), Err(ScramError::Message(_))));
    }

    #[test]
    fn sha_512_proofs_differ_from_sha_256_ones_for_the_same_exchange() {
        let sha256 = ScramClient::new(ScramHash::Sha256, "user", "pencil", NONCE);
        let sha512 = ScramClient::new(ScramHash::Sha512, "user", "pencil", NONCE);
        let (a, _) = sha256.client_final(SERVER_FIRST).unwrap();
        let (b, _) = sha512.client_final(SERVER_FIRST).unwrap();
        assert_ne!(a, b);
        // A SHA-512 proof is 64 bytes: 88 base64 characters after `p=`.
        let b = String::from_utf8(b).unwrap();
        assert_eq!(b.rsplit_once(",p=").unwrap().1.len(), 88);
    }

    #[test]
    fn nonces_are_fresh_and_printable() {
        let (a, b) = (random_nonce().unwrap(), random_nonce().unwrap());
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c) && c != b','));
    }
}
