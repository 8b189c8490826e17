//! Snapshots of the metadata image (KIP-630), as Kafka's
//! `SnapshotGenerator` takes them: when the policy says so
//! (`metadata.log.max.record.bytes.between.snapshots`,
//! `metadata.log.max.snapshot.interval.ms`), encoded on the loop (the image
//! is small), written, fsynced and renamed into place by a blocking task so
//! the loop keeps serving; one at a time; then registered with the engine.
//!
//! It must not write a snapshot past the log's flushed end, nor block.

use std::task::{Context, Poll};

use tokio::sync::mpsc;

use crate::{
    log::{FileLog, LogError, OffsetAndEpoch, ReplicatedLog},
    metadata::{
        image::MetadataImage,
        snapshot::{SnapshotPolicy, encode_image_snapshot, image_snapshot_id},
    },
    raft::{RaftError, listener::RaftClient},
};

/// The outcome of a snapshot written off the loop: its id, or why not.
type SnapshotOutcome = (OffsetAndEpoch, Result<(), LogError>);

/// Snapshot generation state.
#[derive(Debug)]
pub(super) struct Snapshots {
    /// `applied_bytes` of the image when the last snapshot was taken.
    bytes_at_last: u64,
    /// When the last snapshot was taken (or the listener started), ms.
    last_ms: u64,
    /// End offset of the newest snapshot written or being written.
    last_offset: i64,
    /// A snapshot is being written by a blocking task.
    in_flight: bool,
    done_tx: mpsc::UnboundedSender<SnapshotOutcome>,
    done_rx: mpsc::UnboundedReceiver<SnapshotOutcome>,
}

impl Snapshots {
    pub(super) fn new(now_ms: u64) -> Self {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Self {
            bytes_at_last: 0,
            last_ms: now_ms,
            last_offset: 0,
            in_flight: false,
            done_tx,
            done_rx,
        }
    }

    /// The image was loaded from the local snapshot `id` at start.
    pub(super) fn loaded_at_start(&mut self, id: OffsetAndEpoch) {
        self.last_offset = id.offset;
    }

    /// The image restarted from snapshot `id` installed from the leader.
    pub(super) fn installed(&mut self, id: OffsetAndEpoch, image: &MetadataImage, now_ms: u64) {
        self.last_offset = id.offset;
        self.bytes_at_last = image.applied_bytes();
        self.last_ms = now_ms;
    }

    /// The next snapshot written off the loop, if one is done.
    pub(super) fn poll_written(&mut self, cx: &mut Context<'_>) -> Poll<Option<SnapshotOutcome>> {
        self.done_rx.poll_recv(cx)
    }

    /// Writes a snapshot of `image` when `policy` says so.
    pub(super) fn maybe_snapshot(
        &mut self,
        client: &RaftClient<'_, FileLog>,
        image: &MetadataImage,
        policy: &SnapshotPolicy,
    ) {
        let now = client.now_ms();
        let id = image_snapshot_id(image);
        // Only what this node's log holds durably: a snapshot past the
        // flushed end would survive a crash that the records below it do not.
        if self.in_flight
            || id.offset <= self.last_offset
            || id.offset > client.log().flushed_end_offset()
            || !policy.due(
                image.applied_bytes() - self.bytes_at_last,
                now.saturating_sub(self.last_ms),
            )
        {
            return;
        }
        let bytes = match encode_image_snapshot(
            image,
            client.status().kraft_version,
            client.voters_at(id.offset).to_record(),
            now as i64,
        ) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(snapshot = %id, error = %e, "encoding a snapshot failed");
                return;
            }
        };
        let mut writer = match client.log().create_snapshot(id) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(snapshot = %id, error = %e, "creating a snapshot failed");
                return;
            }
        };
        self.in_flight = true;
        self.bytes_at_last = image.applied_bytes();
        self.last_ms = now;
        self.last_offset = id.offset;
        let done = self.done_tx.clone();
        tokio::task::spawn_blocking(move || {
            let outcome = writer
                .append(&bytes)
                .and_then(|()| writer.freeze().map(drop));
            let _ = done.send((id, outcome));
        });
    }

    /// A snapshot written off the loop is done: the log learns about it (it
    /// counts for cleaning and FetchSnapshot from now on, and the log may be
    /// cleaned at once).
    ///
    /// Errors: [`RaftError`] when registering or cleaning fails (the log
    /// failed). A failed write is only logged: the node keeps running on its
    /// log and the next trigger tries again.
    pub(super) fn on_written(
        &mut self,
        client: &mut RaftClient<'_, FileLog>,
        id: OffsetAndEpoch,
        outcome: Result<(), LogError>,
    ) -> Result<(), RaftError> {
        self.in_flight = false;
        match outcome {
            Ok(()) => {
                client.register_snapshot(id)?;
                tracing::info!(snapshot = %id, "snapshot written");
            }
            Err(e) => tracing::warn!(snapshot = %id, error = %e, "writing a snapshot failed"),
        }
        Ok(())
    }
}
