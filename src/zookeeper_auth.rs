//! `--zookeeper-auth` / `KWIRE_ZOOKEEPER_AUTH`: `digest:USER:PASSWORD` or `sasl:USER:PASSWORD`,
//! or `@FILE` holding it (so the password need not be on the command line or in the
//! environment). Resolved only when a ZooKeeper store is opened; no message repeats the
//! password.

use std::path::Path;

use kwire_stores::ZkAuth;

use crate::exit::{Exit, Failure};

/// The credentials `value` names: the text itself, or the contents of the file after `@`.
pub fn resolve(value: &str) -> Result<ZkAuth, Failure> {
    let (text, origin) = match value.strip_prefix('@') {
        Some(path) => (read_secret_file(Path::new(path))?, format!("in {path}")),
        None => (value.to_owned(), "in --zookeeper-auth / KWIRE_ZOOKEEPER_AUTH".to_owned()),
    };
    ZkAuth::parse(&text)
        .map_err(|e| Failure::new(Exit::USAGE, format!("ZooKeeper credentials {origin}: {e}")))
}

fn read_secret_file(path: &Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::new(Exit::USAGE, format!("cannot read ZooKeeper credentials from {}: {e}", path.display()))
    })?;
    warn_if_world_readable(path);
    Ok(text)
}

#[cfg(unix)]
fn warn_if_world_readable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0) {
        eprintln!(
            "kwire: warning: {} holds a ZooKeeper password and is readable by every user (chmod 600 it)",
            path.display()
        );
    }
}

#[cfg(not(unix))]
fn warn_if_world_readable(_: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_from_the_text_or_a_file() {
        assert_eq!(resolve("digest:kwire:s3cret").unwrap().user(), "kwire");
        let dir = std::env::temp_dir().join(format!("kwire-zk-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("auth");
        std::fs::write(&file, "digest:from-file:s3cret\n").unwrap();
        assert_eq!(resolve(&format!("@{}", file.display())).unwrap().user(), "from-file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_value_is_a_usage_error_that_does_not_echo_the_password() {
        let failure = resolve("kerberos:kwire:TOPSECRET").unwrap_err();
        let text = format!("{failure:?}");
        assert!(!text.contains("TOPSECRET"), "{text}");
        let missing = resolve("@/nonexistent/kwire-zk-auth").unwrap_err();
        assert!(format!("{missing:?}").contains("/nonexistent/kwire-zk-auth"));
    }
}
