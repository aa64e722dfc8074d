//! The library client against the real cluster: bootstrap, negotiation, metadata.

use kafka_client::{Client, ClientConfig, ClientError};

use crate::support;
use crate::support::runtime;

#[test]
fn every_broker_negotiates_and_metadata_has_a_generation() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let first = client.refresh_metadata(&[]).await.unwrap();
        let second = client.refresh_metadata(&[]).await.unwrap();
        assert!(second.generation > first.generation);
        let versions = client.broker_versions().await.unwrap();
        assert_eq!(versions.len(), 3);
        for (broker, v) in versions {
            let v = v.unwrap_or_else(|e| panic!("{broker}: {e}"));
            assert!(!v.legacy);
            assert!(v.range(kafka_wire::protocol::ApiKey::METADATA).is_some());
        }
    });
}

#[test]
fn a_bootstrap_list_of_only_dead_addresses_names_each_attempt() {
    runtime().block_on(async {
        let err = Client::connect(ClientConfig::new("127.0.0.1:1,127.0.0.1:2").unwrap()).await.unwrap_err();
        let ClientError::NoBrokerReachable { attempts } = &err else { panic!("{err}") };
        assert_eq!(attempts.len(), 2);
        assert!(err.to_string().contains("127.0.0.1:2"));
    });
}
