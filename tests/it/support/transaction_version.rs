//! The shared cluster's `transaction.version` feature (KIP-890), which scripts/cluster leaves
//! finalized at 2. One test changes it; every test whose transactions on the Kafka 4.1 cluster
//! must go the way version 2 goes (or must not be refused mid-way by a change) holds
//! [`shared`] for its whole run, and the changing test holds [`exclusive`], so the tests of
//! this binary, run in parallel threads, never see the feature at another level. Other
//! processes are not covered: run nothing transactional against the cluster meanwhile.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use kafka_client::{BrokerRef, Client, ClientConfig};
use kafka_wire::protocol::messages::ApiVersionsRequest;

use super::Cluster;

/// The level scripts/cluster finalizes and every other test expects.
pub const DEFAULT_LEVEL: i16 = 2;

const FEATURE: &str = "transaction.version";

static LOCK: RwLock<()> = RwLock::new(());

/// Held while a test relies on `transaction.version` staying at [`DEFAULT_LEVEL`].
pub fn shared() -> RwLockReadGuard<'static, ()> {
    LOCK.read().unwrap_or_else(PoisonError::into_inner)
}

/// The right to change the feature; dropping it (also when the test panics) finalizes
/// [`DEFAULT_LEVEL`] again and waits until every broker says so.
#[derive(Debug)]
pub struct Exclusive {
    bootstrap: String,
    _guard: RwLockWriteGuard<'static, ()>,
}

/// Waits until no test holds [`shared`], then lets the caller change the feature.
pub fn exclusive(cluster: &Cluster) -> Exclusive {
    let guard = LOCK.write().unwrap_or_else(PoisonError::into_inner);
    Exclusive { bootstrap: cluster.bootstrap.clone(), _guard: guard }
}

impl Exclusive {
    /// Finalizes `level` with Kafka's FeatureCommand and waits until every broker's
    /// ApiVersions answer shows it.
    pub async fn set(&self, level: i16) {
        if let Err(e) = feature_command(&self.bootstrap, level) {
            panic!("{e}");
        }
        if let Err(e) = wait_for_level(&self.bootstrap, level).await {
            panic!("{e}");
        }
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        let bootstrap = self.bootstrap.clone();
        // Its own thread and runtime: the drop may run inside the test's runtime.
        let restored = std::thread::spawn(move || {
            feature_command(&bootstrap, DEFAULT_LEVEL)?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(wait_for_level(&bootstrap, DEFAULT_LEVEL))
        })
        .join();
        match restored {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("restoring {FEATURE}={DEFAULT_LEVEL} failed: {e}"),
            Err(_) => eprintln!("restoring {FEATURE}={DEFAULT_LEVEL} panicked"),
        }
    }
}

/// `upgrade` or `downgrade --feature transaction.version=LEVEL`, whichever moves it there
/// (each refuses the other direction; a level already finalized is accepted by both).
fn feature_command(bootstrap: &str, level: i16) -> Result<(), String> {
    let feature = format!("{FEATURE}={level}");
    let mut errors = Vec::new();
    for command in ["downgrade", "upgrade"] {
        let out = super::try_kafka_tool(
            "org.apache.kafka.tools.FeatureCommand",
            &["--bootstrap-server", bootstrap, command, "--feature", &feature],
        );
        if out.status.success() {
            return Ok(());
        }
        errors.push(format!("{command}: {}{}", super::stdout(&out), super::stderr(&out)));
    }
    Err(format!("FeatureCommand could not finalize {feature}: {}", errors.join("; ")))
}

/// Polls each broker with a fresh connection until all report `level` (30 s at most).
async fn wait_for_level(bootstrap: &str, level: i16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let levels = levels(bootstrap).await?;
        if levels.iter().all(|l| *l == Some(level)) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{FEATURE} still at {levels:?} on the brokers, not {level}, after 30 s"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The level each broker's ApiVersions answer gives.
async fn levels(bootstrap: &str) -> Result<Vec<Option<i16>>, String> {
    let config = ClientConfig::new(bootstrap).map_err(|e| e.to_string())?;
    let client = Client::connect(config).await.map_err(|e| e.to_string())?;
    let metadata = client.refresh_metadata(&[]).await.map_err(|e| e.to_string())?;
    let mut levels = Vec::new();
    for b in &metadata.brokers {
        let broker = BrokerRef { node_id: Some(b.node_id), addr: b.addr() };
        let request = ApiVersionsRequest {
            client_software_name: Some("kwire-test".to_owned()),
            client_software_version: Some("0".to_owned()),
            ..Default::default()
        };
        let (_, response) = client.send(&broker, &request).await.map_err(|e| e.to_string())?;
        let finalized = response.finalized_features().map_err(|e| e.to_string())?;
        levels.push(finalized.into_iter().find(|f| f.name == FEATURE).map(|f| f.max_version_level));
    }
    Ok(levels)
}
