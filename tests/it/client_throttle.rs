//! Broker quotas: when a response carries a throttle time, kwire holds back before its next
//! request to that broker, as Kafka's own clients do (KIP-219).

use bytes::Bytes;
use kafka_client::{Client, ClientConfig, ProduceOptions, ProduceRecord};

use crate::support::{self, create_topic, kafka_tool, unique};

#[test]
fn a_throttled_producer_waits_out_the_brokers_throttle_time() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("throttled");
    let client_id = unique("kwire-throttled");
    create_topic(&cluster, &topic, 1, 1);
    kafka_tool(
        "kafka.admin.ConfigCommand",
        &[
            "--bootstrap-server",
            &cluster.bootstrap,
            "--alter",
            "--add-config",
            "producer_byte_rate=4096",
            "--entity-type",
            "clients",
            "--entity-name",
            &client_id,
        ],
    );
    let runtime = crate::support::runtime();
    runtime.block_on(async {
        let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
        config.client_id = client_id.clone();
        let client = Client::connect(config).await.unwrap();
        let records = || {
            (0..16).map(|_| ProduceRecord::new(None, Some(Bytes::from(vec![b'x'; 1024])))).collect::<Vec<_>>()
        };
        let started = std::time::Instant::now();
        let mut last = None;
        // The quota needs a moment to reach every broker; keep producing until a throttle is seen.
        for _ in 0..20 {
            last = Some(client.produce(&topic, 0, records(), &ProduceOptions::default()).await.unwrap());
            if client.throttle_waited_ms() > 0 {
                break;
            }
        }
        assert!(last.is_some_and(|p| p.base_offset.is_some()));
        let waited = client.throttle_waited_ms();
        assert!(waited > 0, "16 KiB per request against a 4 KiB/s quota must be throttled");
        assert!(started.elapsed().as_millis() >= u128::from(waited), "the wait really happened");
    });
}
