//! The planner's edge towards appliers: the only place that builds `dnsplane.v1`
//! requests to an applier and reads its answers. Everything above speaks domain types
//! (RRSets, changes, [`RecordResult`]s).
use crate::lease::{ClaimInfo, FencedBy};
use crate::pool::Member;
use dnsplane_common::convert::{duration, result_from_pb, rrset_from_pb, timestamp};
use dnsplane_common::{Change, Name, RRSet, RecordResult, pb};
use std::fmt;
use std::time::SystemTime;
use tokio::sync::mpsc;
use tracing::warn;

/// A call to an applier that failed, with the gRPC code kept (not only its text), so
/// that callers can tell "the applier is gone" from "the applier answered no".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplierCallError {
    /// The applier's address.
    pub applier: String,
    pub code: tonic::Code,
    pub message: String,
}

impl ApplierCallError {
    fn new(member: &Member, status: &tonic::Status) -> Self {
        ApplierCallError {
            applier: member.addr.clone(),
            code: status.code(),
            message: status.message().to_string(),
        }
    }

    /// The applier is gone or unreachable (it did not answer): it is taken out of the
    /// pool until it is healthy again.
    pub fn is_transport(&self) -> bool {
        matches!(
            self.code,
            tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
        )
    }
}

impl fmt::Display for ApplierCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (applier {}): {}",
            self.code, self.applier, self.message
        )
    }
}

impl std::error::Error for ApplierCallError {}

/// Names one `ListRecords` request carries at most: 1,000 names of at most 255 bytes
/// stay far below any gRPC message limit, whatever the number of names asked.
pub const LIST_NAMES_PER_REQUEST: usize = 1000;

/// Where a read hands each page of records as it arrives (see [`list_into`]).
pub type PageSink<'a> = dyn FnMut(Vec<RRSet>) + Send + 'a;

/// Reads `zone` of `account` through `member` (all pages); only `names` when not empty,
/// asked [`LIST_NAMES_PER_REQUEST`] at a time. A record the applier sends that dnsplane
/// cannot model is skipped (left alone, never "fixed"), with a warning. The serial is
/// the lowest any request saw.
pub async fn list(
    member: &Member,
    account: &str,
    zone: &Name,
    fresh: bool,
    names: &[Name],
) -> Result<(Vec<RRSet>, u64), ApplierCallError> {
    let mut out = Vec::new();
    let mut serial: Option<u64> = None;
    let chunks: Vec<&[Name]> = if names.is_empty() {
        vec![names]
    } else {
        names.chunks(LIST_NAMES_PER_REQUEST).collect()
    };
    for chunk in chunks {
        let s = list_once(member, account, zone, fresh, chunk, 0, &mut |page| {
            out.extend(page)
        })
        .await?
        .unwrap_or_default();
        serial = Some(serial.map_or(s, |known| known.min(s)));
    }
    Ok((out, serial.unwrap_or(0)))
}

/// The whole zone like [`list`], each page handed to `sink` as it arrives rather than
/// collected: a caller that keeps less than the records as received (a view sharing
/// them with the desired index) then never holds the whole zone twice. Returns the
/// serial. After an error, what `sink` was given is not the whole zone.
pub async fn list_into(
    member: &Member,
    account: &str,
    zone: &Name,
    fresh: bool,
    sink: &mut PageSink<'_>,
) -> Result<u64, ApplierCallError> {
    Ok(list_once(member, account, zone, fresh, &[], 0, sink)
        .await?
        .unwrap_or_default())
}

/// The whole zone like [`list_into`], unless its serial still equals `known` (one
/// cheap provider call): then `None`, `sink` is given nothing, and nothing moves over
/// the wire.
pub async fn list_unless(
    member: &Member,
    account: &str,
    zone: &Name,
    known: u64,
    sink: &mut PageSink<'_>,
) -> Result<Option<u64>, ApplierCallError> {
    list_once(member, account, zone, false, &[], known, sink).await
}

/// One `ListRecords` call, all its pages, each handed to `sink`; the serial, or `None`
/// when the applier answered that the serial is still `unless_serial`.
async fn list_once(
    member: &Member,
    account: &str,
    zone: &Name,
    fresh: bool,
    names: &[Name],
    unless_serial: u64,
    sink: &mut PageSink<'_>,
) -> Result<Option<u64>, ApplierCallError> {
    let err = |status: tonic::Status| ApplierCallError::new(member, &status);
    let mut client = member.client();
    let mut stream = client
        .list_records(pb::ListRecordsRequest {
            account: account.to_string(),
            zone: zone.to_string(),
            fresh,
            names: names.iter().map(ToString::to_string).collect(),
            unless_serial,
            ..Default::default()
        })
        .await
        .map_err(err)?
        .into_inner();
    let mut serial = 0;
    while let Some(page) = stream.message().await.map_err(err)? {
        if page.unchanged {
            return Ok(None);
        }
        serial = page.serial;
        let mut out = Vec::with_capacity(page.rrsets.len());
        for (i, r) in page.rrsets.iter().enumerate() {
            match rrset_from_pb(&format!("rrsets[{i}]"), r) {
                Ok(r) => out.push(r),
                Err(e) => {
                    warn!(zone = %zone, error = %e, "Skipping a record the provider holds that dnsplane cannot read.")
                }
            }
        }
        let last = page.last;
        drop(page);
        sink(out);
        if last {
            break;
        }
    }
    Ok(Some(serial))
}

/// The zone's serial as the provider reports it now (one cheap call); 0 when the
/// provider has none.
pub async fn serial(member: &Member, account: &str, zone: &Name) -> Result<u64, ApplierCallError> {
    let err = |status: tonic::Status| ApplierCallError::new(member, &status);
    let mut client = member.client();
    let mut stream = client
        .list_records(pb::ListRecordsRequest {
            account: account.to_string(),
            zone: zone.to_string(),
            serial_only: true,
            ..Default::default()
        })
        .await
        .map_err(err)?
        .into_inner();
    Ok(stream.message().await.map_err(err)?.map_or(0, |p| p.serial))
}

/// The sending half of an `Apply` stream: batches go out as they are handed over.
#[derive(Debug, Clone)]
pub struct BatchSender(mpsc::Sender<pb::ApplyRequest>);

/// The other end of a [`BatchSender`], given to [`apply`].
#[derive(Debug)]
pub struct BatchReceiver(mpsc::Receiver<pb::ApplyRequest>);

/// A channel for one `Apply` stream (a few batches of look-ahead).
pub fn batch_channel() -> (BatchSender, BatchReceiver) {
    let (tx, rx) = mpsc::channel(4);
    (BatchSender(tx), BatchReceiver(rx))
}

impl BatchSender {
    /// Sends one batch, fenced by `owner`'s lease `claim` (epoch 0: not fenced);
    /// `false` when the stream is gone.
    pub async fn send<'a>(
        &self,
        batch_id: String,
        account: &str,
        zone: &Name,
        changes: impl IntoIterator<Item = &'a Change>,
        deadline: SystemTime,
        (owner, claim): (&str, &ClaimInfo),
    ) -> bool {
        let req = pb::ApplyRequest {
            batch: Some(pb::Batch {
                batch_id,
                account: account.to_string(),
                zone: zone.to_string(),
                changes: changes.into_iter().map(Into::into).collect(),
                deadline: Some(timestamp(deadline)),
                owner: owner.to_string(),
                lease_epoch: claim.epoch,
                lease_holder: claim.holder.clone(),
                lease_ttl: Some(duration(claim.ttl)),
                lease_backend: claim.backend.clone(),
            }),
        };
        self.0.send(req).await.is_ok()
    }
}

/// Results an applier sent for one batch: a part of them, or the rest (`done`).
#[derive(Debug)]
pub struct BatchResults {
    pub batch_id: String,
    pub results: Vec<RecordResult>,
    /// The last message of its batch.
    pub done: bool,
    /// On the last message: the zone's serial before and after the batch, when the
    /// applier vouches that every move between them was the batch's own writes.
    pub serials: Option<(u64, u64)>,
    /// On the last message: the owner's claim at the applier refused the batch.
    pub fenced: Option<FencedBy>,
}

/// The receiving half of an `Apply` stream.
#[derive(Debug)]
pub struct ResultStream<'a> {
    member: &'a Member,
    inner: tonic::Streaming<pb::ApplyResponse>,
}

impl ResultStream<'_> {
    /// The next message; `None` when the applier ended the stream.
    pub async fn next(&mut self) -> Result<Option<BatchResults>, ApplierCallError> {
        let msg = self
            .inner
            .message()
            .await
            .map_err(|s| ApplierCallError::new(self.member, &s))?;
        Ok(msg.map(|m| BatchResults {
            batch_id: m.batch_id,
            results: m.results.iter().map(result_from_pb).collect(),
            done: m.done,
            serials: (m.serial_after != 0).then_some((m.serial_before, m.serial_after)),
            fenced: m.fenced.as_ref().map(fenced_from_pb),
        }))
    }
}

fn fenced_from_pb(f: &pb::Fenced) -> FencedBy {
    FencedBy {
        epoch: f.epoch,
        holder: f.holder.clone(),
        shared_backend: f.shared_backend,
        message: f.message.clone(),
    }
}

/// Claims `owner`'s writer claim at `member` under `claim`: `None` when granted, else
/// who holds it.
pub async fn claim(
    member: &Member,
    owner: &str,
    claim: &ClaimInfo,
) -> Result<Option<FencedBy>, ApplierCallError> {
    let answer = member
        .client()
        .claim(pb::ClaimRequest {
            owner: owner.to_string(),
            lease_epoch: claim.epoch,
            lease_holder: claim.holder.clone(),
            lease_ttl: Some(duration(claim.ttl)),
            lease_backend: claim.backend.clone(),
        })
        .await
        .map_err(|s| ApplierCallError::new(member, &s))?
        .into_inner();
    Ok((!answer.granted).then(|| {
        answer.fenced.as_ref().map_or_else(
            || FencedBy {
                epoch: 0,
                holder: String::new(),
                shared_backend: false,
                message: "the applier refused the claim without saying who holds it".into(),
            },
            fenced_from_pb,
        )
    }))
}

/// Opens an `Apply` stream on `member` carrying what is sent into `batches`.
pub async fn apply(
    member: &Member,
    batches: BatchReceiver,
) -> Result<ResultStream<'_>, ApplierCallError> {
    let mut client = member.client();
    let inner = client
        .apply(tokio_stream::wrappers::ReceiverStream::new(batches.0))
        .await
        .map_err(|s| ApplierCallError::new(member, &s))?
        .into_inner();
    Ok(ResultStream { member, inner })
}

/// What an applier says of one of its provider accounts.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplierAccount {
    pub name: String,
    /// `closed`, `open` or `half_open`.
    pub circuit: String,
    /// The account's quota, when it has one (kept in the applier's wire form: the
    /// planner only passes it on to its own status).
    pub quota: Option<pb::QuotaStatus>,
    /// Its pacing after the provider's 429 answers (`reason` set: throttled for long).
    pub pacing: Option<pb::PacingStatus>,
    /// What its driver can hold beyond plain record sets.
    pub holds: Holds,
}

/// What an account's driver writes beyond plain record sets (the applier's
/// `AccountStatus`): a record needing more is not for a target at that account.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holds {
    pub driver: String,
    pub routing_sets: bool,
    pub properties: Vec<String>,
}

/// The accounts of `member`, asked with a deadline so a stuck applier cannot stall a
/// status call; empty when it does not answer in time.
pub async fn accounts(member: &Member, within: std::time::Duration) -> Vec<ApplierAccount> {
    let mut client = member.client();
    let answer =
        tokio::time::timeout(within, client.get_status(pb::GetApplierStatusRequest {})).await;
    match answer {
        Ok(Ok(st)) => st
            .into_inner()
            .accounts
            .into_iter()
            .map(|a| ApplierAccount {
                name: a.name,
                circuit: a.circuit,
                quota: a.quota,
                pacing: a.pacing,
                holds: Holds {
                    driver: a.driver,
                    routing_sets: a.routing_sets,
                    properties: a.properties,
                },
            })
            .collect(),
        _ => Vec::new(),
    }
}
