//! Passwords out of connection strings before they reach a message.

use std::borrow::Cow;

/// A comma-separated address list (`host:port`, `user:password@host:port`,
/// `scheme://user:password@host`) with every password replaced by `***`; the user names and
/// hosts stay, so an error still says where it went. Borrowed when there is nothing to hide.
pub fn redact_credentials(addresses: &str) -> Cow<'_, str> {
    if !addresses.contains('@') {
        return Cow::Borrowed(addresses);
    }
    let redacted: Vec<String> = addresses
        .split(',')
        .map(|addr| {
            let Some(at) = addr.rfind('@') else { return addr.to_owned() };
            let (user_info, host) = addr.split_at(at);
            let start = user_info.find("://").map_or(0, |i| i + 3);
            match user_info[start..].find(':') {
                Some(colon) => format!("{}:***{host}", &user_info[..start + colon]),
                None => addr.to_owned(),
            }
        })
        .collect();
    Cow::Owned(redacted.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn passwords_are_replaced_and_hosts_kept() {
        assert_eq!(redact_credentials("a:9092,b:9092"), "a:9092,b:9092");
        assert_eq!(redact_credentials("alice:s3cret@zk1:2181,zk2:2181"), "alice:***@zk1:2181,zk2:2181");
        assert_eq!(redact_credentials("sasl://bob:pw@h:1"), "sasl://bob:***@h:1");
        assert_eq!(redact_credentials("user@h:1"), "user@h:1");
    }

    proptest! {
        #[test]
        fn no_password_survives(user in "[a-z]{1,8}", password in "[A-Za-z0-9]{6,12}", host in "[a-z]{1,8}") {
            let text = format!("{user}:{password}@{host}:1,{host}:2");
            let shown = redact_credentials(&text);
            prop_assert!(!shown.contains(&password));
            prop_assert!(shown.contains(&host));
        }

        #[test]
        fn never_panics(text in "\\PC*") {
            let _ = redact_credentials(&text);
        }
    }
}
