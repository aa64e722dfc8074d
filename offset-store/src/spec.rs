//! A store named in one string, as the CLI, the stream driver and other front ends take it:
//! `kafka`, `zk` / `zk:HOST:PORT[,HOST:PORT][/chroot]`, `file:PATH` or `spark:PATH`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Which offset store a string names. Opening it is `kwire_stores::open`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// The group's committed offsets in Kafka.
    Kafka,
    /// The Kafka 0.8 ZooKeeper layout, at this connect string; `None` (written `zk`) leaves the
    /// connect string to the program (the CLI's `--zookeeper`).
    ZooKeeper(Option<String>),
    /// kwire's JSON file.
    File(PathBuf),
    /// A Spark Structured Streaming checkpoint folder.
    Spark(PathBuf),
}

impl FromStr for StoreSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "kafka" => return Ok(Self::Kafka),
            "zk" | "zookeeper" => return Ok(Self::ZooKeeper(None)),
            _ => {}
        }
        if let Some(rest) = s.strip_prefix("zk:").or_else(|| s.strip_prefix("zookeeper:")) {
            return match rest {
                "" => Err(format!("`{s}` names no ZooKeeper: use zk:HOST:PORT[/chroot], or zk alone")),
                connect => Ok(Self::ZooKeeper(Some(connect.to_owned()))),
            };
        }
        if let Some(rest) = s.strip_prefix("file:") {
            return match rest {
                "" => Err(format!("`{s}` names no file: use file:PATH")),
                path => Ok(Self::File(PathBuf::from(path))),
            };
        }
        if let Some(rest) = s.strip_prefix("spark:") {
            return match rest {
                "" => {
                    Err(format!("`{s}` names no checkpoint: use spark:PATH (the query's checkpointLocation)"))
                }
                path => Ok(Self::Spark(PathBuf::from(path))),
            };
        }
        Err(format!("unknown store `{s}`: use kafka, zk[:HOST:PORT[/chroot]], file:PATH or spark:PATH"))
    }
}

impl fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kafka => f.write_str("kafka"),
            Self::ZooKeeper(None) => f.write_str("zk"),
            Self::ZooKeeper(Some(connect)) => write!(f, "zk:{connect}"),
            Self::File(path) => write!(f, "file:{}", path.display()),
            Self::Spark(path) => write!(f, "spark:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_parse_and_print_back() {
        for text in ["kafka", "zk", "zk:127.0.0.1:2181/kafka", "file:/tmp/o.json", "spark:/data/ckpt"] {
            let spec: StoreSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        assert_eq!("zookeeper:h:1".parse::<StoreSpec>(), Ok(StoreSpec::ZooKeeper(Some("h:1".into()))));
        assert_eq!("zookeeper".parse::<StoreSpec>(), Ok(StoreSpec::ZooKeeper(None)));
        for bad in ["", "zk:", "file:", "spark:", "redis", "Kafka"] {
            assert!(bad.parse::<StoreSpec>().is_err(), "{bad}");
        }
    }
}
