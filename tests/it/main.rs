//! Integration tests against the real local cluster (`scripts/cluster up`): three KRaft
//! brokers and one ZooKeeper. One test binary; one module per area; tests are named after the
//! situation they reproduce.
//!
//! Without `KWIRE_BOOTSTRAP` these tests print a note and pass; with `CI` (or
//! `KWIRE_REQUIRE_CLUSTER`) set, a missing or unreachable cluster fails them.

mod support;

mod broker_matrix;
mod cli_basics;
mod cli_consume_group;
mod cli_decode;
mod cli_exporter;
mod cli_file_store;
mod cli_group_check;
mod cli_group_share;
mod cli_group_types;
mod cli_group_watch;
mod cli_hardening;
mod cli_offsets;
mod cli_records;
mod cli_reset_plan;
mod cli_spark_sink;
mod cli_spellings;
mod cli_stores;
mod cli_time_lag;
mod cli_zookeeper_auth;
mod cli_zookeeper_sasl;
mod cli_zookeeper_tls;
mod client_admin;
mod client_consumer;
mod client_differential;
mod client_faults;
mod client_fetch_sessions;
mod client_fetcher;
mod client_group_member;
mod client_partial_authz;
mod client_produce_fetch;
mod client_producer;
mod client_read_replica;
mod client_record_oracle;
mod client_routing;
mod client_security;
mod client_throttle;
mod client_transactions;
mod client_versions;
mod proxy_clients;
mod proxy_confluent_kafka;
mod proxy_fault_actions;
mod proxy_faults;
mod proxy_leader_change;
mod proxy_pcap;
mod secured_handshakes;
mod secured_interop;
mod secured_matrix;
mod secured_partial_authz;
mod secured_pkcs12;
mod secured_reauth;
mod spark_batch_loop_crash;
mod spark_store;
