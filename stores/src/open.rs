//! A store from its name: what every front end (the CLI, the stream driver, bindings) calls.

use std::sync::Arc;
use std::time::Duration;

use kafka_client::Client;
use offset_store::{OffsetStore, StoreError, StoreSpec};

use crate::spark::FileSink;
use crate::{AclPolicy, FileStore, KafkaGroupStore, SparkStore, ZkAuth, ZkStore, ZkTls};

/// What opening a store may need besides its name.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The Kafka client: the Kafka store's coordinator calls go through it.
    pub client: Arc<Client>,
    /// Bounds each Kafka store call, the ZooKeeper session set-up, and a file load or lock wait.
    pub timeout: Duration,
    /// How long each ZooKeeper call retries through connection loss and session expiry.
    pub zookeeper_retry_budget: Duration,
    /// The connect string for a store written `zk` alone (the CLI's `--zookeeper`).
    pub default_zookeeper: Option<String>,
    /// Credentials every ZooKeeper session presents (the CLI's `--zookeeper-auth`).
    pub zookeeper_auth: Option<ZkAuth>,
    /// TLS to ZooKeeper's secureClientPort (the CLI's `--zookeeper-tls-*`); `None`: plaintext.
    pub zookeeper_tls: Option<ZkTls>,
    /// The ACL of the znodes the ZooKeeper store creates (the CLI's `--zookeeper-acl`).
    pub zookeeper_acl: AclPolicy,
    /// Lets the Kafka store write while the group has active members, and the Spark store
    /// while the query looks alive.
    pub force: bool,
    /// The Spark store's query's file sink, whose log its writes keep in step (the CLI's
    /// `--spark-sink`); other stores ignore it.
    pub spark_sink: Option<FileSink>,
}

impl OpenOptions {
    /// Options with `timeout` for every bound, no default ZooKeeper, and no `force`.
    pub fn new(client: Arc<Client>, timeout: Duration) -> Self {
        Self {
            client,
            timeout,
            zookeeper_retry_budget: timeout,
            default_zookeeper: None,
            zookeeper_auth: None,
            zookeeper_tls: None,
            zookeeper_acl: AclPolicy::default(),
            force: false,
            spark_sink: None,
        }
    }
}

/// Opens the store `spec` names. `zk` without a connect string takes
/// [`OpenOptions::default_zookeeper`]; with neither it is [`StoreError::Invalid`].
pub async fn open(spec: &StoreSpec, options: &OpenOptions) -> Result<Box<dyn OffsetStore>, StoreError> {
    Ok(match spec {
        StoreSpec::Kafka => {
            Box::new(KafkaGroupStore::new(Arc::clone(&options.client), options.timeout).force(options.force))
        }
        StoreSpec::File(path) => Box::new(FileStore::new(path).timeout(options.timeout)),
        StoreSpec::Spark(path) => Box::new(
            SparkStore::new(path)
                .timeout(options.timeout)
                .force(options.force)
                .file_sink(options.spark_sink.clone()),
        ),
        StoreSpec::ZooKeeper(connect) => {
            let connect = connect
                .as_deref()
                .or(options.default_zookeeper.as_deref())
                .filter(|c| !c.is_empty())
                .ok_or_else(|| StoreError::Invalid {
                    store: "zookeeper",
                    message: "the zk store needs a connect string: zk:HOST:PORT[/chroot], or --zookeeper / KWIRE_ZOOKEEPER"
                        .to_owned(),
                })?;
            Box::new(
                ZkStore::connect_with_tls(
                    connect,
                    options.timeout,
                    options.zookeeper_retry_budget,
                    options.zookeeper_auth.clone(),
                    options.zookeeper_acl,
                    options.zookeeper_tls.clone(),
                )
                .await?,
            )
        }
    })
}
