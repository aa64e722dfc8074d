//! The client settings of every command: `--command-config FILE` (or `KWIRE_COMMAND_CONFIG`),
//! then each `-X KEY=VALUE` over it, applied to the `ClientConfig` with Kafka's property names
//! (`kafka_client::apply_properties`).

use std::path::Path;

use kafka_client::{apply_properties, is_secret_key, ClientConfig};

use crate::exit::{Exit, Failure};
use crate::properties_file::parse_properties;

/// Reads a `--command-config` file. Warns (in `warnings`) when it holds a password or JAAS line
/// and other users may read it.
fn read_file(path: &Path, warnings: &mut Vec<String>) -> Result<Vec<(String, String)>, Failure> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::new(Exit::USAGE, format!("--command-config {shown}: {e}")))?;
    let pairs = parse_properties(&text)
        .map_err(|e| Failure::new(Exit::USAGE, format!("--command-config {shown}: {e}")))?;
    if pairs.iter().any(|(k, _)| is_secret_key(k)) && world_readable(path) {
        warnings.push(format!("{shown} holds a password and other users can read it: chmod 600 {shown}"));
    }
    Ok(pairs)
}

#[cfg(unix)]
fn world_readable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0)
}

#[cfg(not(unix))]
fn world_readable(_: &Path) -> bool {
    false
}

/// The file's pairs then the `-X` ones, in the order they apply (later wins): for settings
/// read apart from the client's, like the producer's.
pub fn pairs(file: Option<&Path>, overrides: &[(String, String)]) -> Result<Vec<(String, String)>, Failure> {
    let mut pairs = match file {
        Some(path) => read_file(path, &mut Vec::new())?,
        None => Vec::new(),
    };
    pairs.extend(overrides.iter().cloned());
    Ok(pairs)
}

/// Applies the file and the `-X` pairs (in that order, later wins) to `config`. Returns the
/// warnings to print: unknown keys, disabled host name checks, a readable password file.
pub fn apply(
    config: &mut ClientConfig,
    file: Option<&Path>,
    overrides: &[(String, String)],
) -> Result<Vec<String>, Failure> {
    let mut warnings = Vec::new();
    let mut pairs = match file {
        Some(path) => read_file(path, &mut warnings)?,
        None => Vec::new(),
    };
    pairs.extend(overrides.iter().cloned());
    let applied = apply_properties(config, pairs).map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
    warnings.extend(applied.iter().map(ToString::to_string));
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_file_others_can_read_is_warned_about_and_x_overrides_it() {
        let dir = std::env::temp_dir().join(format!("kwire-command-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("client.properties");
        std::fs::write(
            &path,
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let mut config = ClientConfig::new("127.0.0.1:9092").unwrap();
        let overrides = [("sasl.username".to_owned(), "other".to_owned())];
        let warnings = apply(&mut config, Some(&path), &overrides).unwrap();
        assert_eq!(config.sasl.as_ref().unwrap().username, "other");
        #[cfg(unix)]
        assert!(warnings.iter().any(|w| w.contains("chmod 600")), "{warnings:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            let warnings = apply(&mut config, Some(&path), &[]).unwrap();
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_setting_kwire_cannot_honour_is_a_usage_error() {
        let mut config = ClientConfig::new("127.0.0.1:9092").unwrap();
        let overrides = [("sasl.mechanism".to_owned(), "GSSAPI".to_owned())];
        let failure = apply(&mut config, None, &overrides).unwrap_err();
        assert_eq!(failure.exit, Exit::USAGE);
        assert!(failure.message.contains("GSSAPI"), "{}", failure.message);
    }
}
