//! A server that is one node of a cluster (`serve --nats`,
//! docs/guides/cluster.md): it answers the tenants of the partitions it
//! owns, and a message written to it goes to the shared stream, to be
//! stored by the partition's consumer like any other.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::StatusCode;
use strataflow::pipeline::source::MessageInput;
use strataflow_cluster::ClusterError;
use strataflow_cluster::publish::{PublishOptions, PublishedMessage};
use strataflow_cluster::publisher::{StreamPublishError, StreamPublisher};
use strataflow_cluster::subject::partition_of;

use crate::http::error::ApiError;

/// What makes a server a cluster node.
#[derive(Clone)]
pub struct ClusterNode {
    /// Publishes the messages written to this server.
    pub publisher: Arc<StreamPublisher>,
    /// The partitions whose tenants this node holds.
    pub owned: BTreeSet<u32>,
}

impl ClusterNode {
    /// Connects to NATS at `url`, opens the raw-message stream (creating
    /// it as `publish` says if it does not exist) and checks that each of
    /// `owned` is one of its partitions.
    pub fn connect(
        url: &str,
        publish: PublishOptions,
        owned: &[u32],
    ) -> Result<Self, ClusterError> {
        let publisher = StreamPublisher::connect(url, publish)?;
        let partitions = publisher.partitions();
        if let Some(&partition) = owned.iter().find(|p| **p >= partitions) {
            return Err(ClusterError::NoSuchPartition {
                partition,
                stream: publisher.stream().to_owned(),
                partitions,
            });
        }
        Ok(Self {
            publisher: Arc::new(publisher),
            owned: owned.iter().copied().collect(),
        })
    }

    /// The shared stream's name (answered with each write).
    pub fn stream(&self) -> &str {
        self.publisher.stream()
    }

    /// Ok when `tenant`'s partition is one of this node's; else 421 naming
    /// the partition.
    pub fn owns(&self, tenant: &str) -> Result<(), ApiError> {
        let partition = partition_of(tenant, self.publisher.partitions());
        if self.owned.contains(&partition) {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "other_node",
            format!(
                "tenant `{}` is on partition {partition}, which this node does not hold (it holds {:?}): send the request to the cluster's front (`serve --cluster`) or to that partition's node",
                super::read::cut(tenant),
                self.owned
            ),
        )
        .at_field("tenant"))
    }

    /// Publishes one request's messages (all or nothing on a conflict);
    /// blocks until the stream has stored each with its replicas.
    pub fn publish(&self, inputs: Vec<MessageInput>) -> Result<Vec<PublishedMessage>, ApiError> {
        match self.publisher.append_batch(inputs) {
            Ok(published) => Ok(published),
            Err(StreamPublishError::Conflict { index, error }) => Err(ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("message {index}: {}", error.problem),
            )
            .at_index(index)
            .at_field(error.field.unwrap_or_else(|| "id".into()))),
            Err(StreamPublishError::Invalid(error)) => {
                let invalid = ApiError::invalid(error.to_string());
                Err(match error.field {
                    Some(field) => invalid.at_field(field),
                    None => invalid,
                })
            }
            Err(e) => Err(ApiError::unavailable(
                format!(
                    "the shared stream did not store the messages: {e}; retry (sending the same messages again is safe)"
                ),
                1,
            )),
        }
    }
}
