//! Starting the sources that run as tasks (Kubernetes, NetBox): each is not ready,
//! and every zone's syncs held, until its first complete read; then its snapshots go
//! into the engine as they come.
use crate::engine::{Engine, LastPut};
use crate::error::PlannerError;
use crate::source::Snapshot;
use crate::{config, events, lease, source, state};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Puts a source's new snapshot (if its records changed) in force, as the patch of
/// what changed since `last` where it can ([`Engine::put_live_source`]), then its
/// readiness: entries before readiness, so that the first ready snapshot lets the
/// zones plan only once its records are in the index.
fn put_in_force(
    engine: &Engine,
    name: &str,
    snapshot: Option<Snapshot>,
    unready: Vec<String>,
    last: &mut LastPut,
) {
    if let Some(snapshot) = snapshot {
        let initial = last.is_empty();
        events::DesiredStateChanged {
            source: name,
            records: snapshot.entries.len(),
            errors: snapshot.errors.len(),
            initial,
        }
        .emit();
        let started = std::time::Instant::now();
        let put = engine.put_live_source(name, snapshot.entries, snapshot.errors, last);
        tracing::debug!(source = %name, took_ms = started.elapsed().as_millis() as u64, ?put, "Source's records put in force.");
    }
    engine.set_source_readiness(name, unready);
}

/// A NetBox source and its webhook secret, as configured: `Err` names the file or
/// setting that cannot be used.
pub(crate) fn netbox_parts(
    config: &config::NetboxSourceConfig,
    zones: &[config::ZoneConfig],
) -> Result<(source::netbox::NetboxSource, Option<Vec<u8>>), PlannerError> {
    let refuse = |e: String| PlannerError::Config(format!("[[sources]] type = \"netbox\": {e}"));
    config.check().map_err(refuse)?;
    let src = source::netbox::NetboxSource::new(config, zones).map_err(refuse)?;
    let secret = match &config.webhook_secret_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| refuse(format!("webhook_secret_file {}: {e}", path.display())))?;
            let secret = dnsplane_common::secret::trimmed(&text).ok_or_else(|| {
                refuse(format!(
                    "webhook_secret_file {}: the file holds no secret",
                    path.display()
                ))
            })?;
            Some(secret.as_bytes().to_vec())
        }
        None => None,
    };
    Ok((src, secret))
}

/// Starts a NetBox source: its webhook receiver, and the reads whose records the
/// engine takes. Zones wait for its first complete read.
pub(crate) async fn start_netbox_source(
    engine: &Arc<Engine>,
    config: &config::NetboxSourceConfig,
    work: CancellationToken,
) -> Result<(), PlannerError> {
    use source::netbox::{self, webhook};
    let (src, secret) = netbox_parts(config, &engine.config().zones)?;
    let name = src.store_key().to_string();
    engine.set_source_views(&name, config.views.clone());
    engine.await_first_load(&name);
    engine.set_source_readiness(&name, vec!["waiting for the first complete read".into()]);
    engine.set_source_parts(&name, src.parts());
    let (events_tx, events_rx) = tokio::sync::mpsc::channel(netbox::EVENT_QUEUE);
    if let (Some(addr), Some(secret)) = (config.webhook_listen, secret) {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| PlannerError::WebhookListen { addr, source })?;
        let receiver = Arc::new(webhook::Receiver::new(
            secret,
            events_tx,
            src.overflow_flag(),
            &name,
        ));
        let stop = work.clone();
        engine.spawn(async move {
            if let Err(e) = receiver.serve(listener, stop).await {
                tracing::error!(error = %e, "The NetBox webhook receiver stopped.");
            }
        });
    }
    if let Some(writer) = src.write_back() {
        let task = netbox_write_back(
            engine.clone(),
            name.clone(),
            writer,
            src.parts(),
            work.clone(),
        );
        engine.spawn(task);
    }
    // One update waiting at most: each holds every record of the source.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<netbox::Update>(1);
    engine.spawn(src.run(events_rx, tx, work));
    let engine_ = engine.clone();
    engine.spawn(async move {
        let mut last = LastPut::default();
        while let Some(update) = rx.recv().await {
            put_in_force(&engine_, &name, update.snapshot, update.unready, &mut last);
        }
    });
    Ok(())
}

/// Writes each record's outcome back to NetBox, a round a second (see
/// [`write_back_pause`]), while this planner leads; status shows how it goes as the
/// source's second part.
async fn netbox_write_back(
    engine: Arc<Engine>,
    source: String,
    mut writer: source::netbox::write_back::WriteBack,
    parts: source::SourceParts,
    stop: CancellationToken,
) {
    let ui = format!("{}/", writer.base());
    let mut pause = write_back_pause(Duration::ZERO);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        let leads = engine.lease().status().role == lease::Role::Leader;
        let detail = if leads {
            let started = std::time::Instant::now();
            let want = Engine::cpu(|| netbox_statuses(&engine, &source, &ui));
            pause = write_back_pause(started.elapsed());
            match want {
                Some(want) => {
                    let (_, left) = writer.round(&want).await;
                    format!(
                        "{} objects written since start; {left} waiting",
                        writer.written
                    )
                }
                None => continue,
            }
        } else {
            "the leader writes; this planner stands by".to_string()
        };
        let part = source::SourcePart {
            name: "write-back (dnsplane_status)".into(),
            ready: writer.problem.is_none(),
            reason: writer.problem.clone().unwrap_or_default(),
            detail,
        };
        let mut held = parts.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() < 2 {
            held.push(part);
        } else {
            held[1] = part;
        }
    }
}

/// How long the write-back waits before its next round, after working out every
/// object's status took `took`: a second, or ten times `took`, so that the work takes
/// at most a tenth of a core however large the source; 30 s at most.
fn write_back_pause(took: Duration) -> Duration {
    (took * 10).clamp(Duration::from_secs(1), Duration::from_secs(30))
}

/// What each NetBox object's `dnsplane_status` should say, from the engine's read
/// model: its records' outcomes, and the errors of the objects that give none (`None`
/// while an index is busy with a large update: that round writes nothing, rather than
/// tell an object with an error only of its converged records).
fn netbox_statuses(
    engine: &Engine,
    source: &str,
    ui: &str,
) -> Option<std::collections::BTreeMap<source::netbox::write_back::Object, String>> {
    let errors = engine.errors_located(ui)?;
    Some(source::netbox::write_back::statuses(
        &record_outcomes(engine, source),
        &errors,
    ))
}

/// Starts a Kubernetes source: not ready, and every zone's syncs held, until its first
/// complete list; its snapshots into the engine; and, unless turned off, the status
/// writer that reports each object's records back to it.
pub(crate) async fn start_kubernetes_source(
    engine: &Arc<Engine>,
    config: &config::KubernetesSourceConfig,
    kube_metrics: Option<source::kubernetes::metrics::KubeMetrics>,
    work: CancellationToken,
) -> Result<(), PlannerError> {
    use source::kubernetes::{self, notify, status};
    let client = kubernetes::client(config)
        .await
        .map_err(|e| PlannerError::SourceNotReady(e.to_string()))?;
    let src = kubernetes::KubernetesSource::new(config.clone()).with_zones(
        source::zones::ZoneCheck::new(&engine.config().zones, config.outside_zones),
    );
    let name = src.store_key();
    engine.set_source_views(&name, config.views.clone());
    let initial = src.initial();
    engine.await_first_load(&name);
    engine.set_source_readiness(&name, initial.unready);
    let objects = src.objects();
    let translated = src.translated();
    engine.set_source_parts(&name, src.parts());
    // One snapshot waiting at most: each holds every record of the source, and the
    // source folds what arrives meanwhile into the next.
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let watcher = src.watch(client.clone(), tx, work.clone());
    let engine_ = engine.clone();
    let source_name = name.clone();
    engine.spawn(async move {
        let mut last = LastPut::default();
        while let Some(mut snapshot) = rx.recv().await {
            let unready = std::mem::take(&mut snapshot.unready);
            put_in_force(&engine_, &source_name, Some(snapshot), unready, &mut last);
        }
        let _ = watcher.await;
    });
    let kinds = kubernetes::settings::kinds(config);
    if config.write_events
        && kinds
            .iter()
            .any(|k| *k != kubernetes::kinds::Kind::DnsEndpoint)
    {
        let engine_ = engine.clone();
        let source_name = name.clone();
        let mut writer = notify::EventWriter::new(client.clone(), engine.lease().status().identity);
        if let Some(m) = &kube_metrics {
            writer = writer.with_metrics(m.clone());
        }
        let m = kube_metrics.clone();
        let task = notify::run_events(
            writer,
            translated,
            move || {
                (engine_.lease().status().role == lease::Role::Leader)
                    .then(|| record_outcomes(&engine_, &source_name))
            },
            move |tally| {
                if let Some(m) = &m {
                    m.set_objects(&kinds, tally);
                }
            },
            work.clone(),
        );
        engine.spawn(async move {
            let _ = task.await;
        });
    }
    if config.write_status {
        let engine_ = engine.clone();
        let writer = status::StatusWriter::new(client, config.status_interval);
        let task = status::run_status(
            writer,
            objects,
            move || {
                (engine_.lease().status().role == lease::Role::Leader)
                    .then(|| record_outcomes(&engine_, &name))
            },
            work,
        );
        engine.spawn(async move {
            let _ = task.await;
        });
    }
    Ok(())
}

/// The records of `source` as the sources that report back (a DNSEndpoint's status,
/// a Kubernetes event, a NetBox custom field) see them, from the engine's read model.
fn record_outcomes(engine: &Engine, source: &str) -> Vec<source::outcomes::RecordOutcome> {
    use source::outcomes::{Phase, RecordName, RecordOutcome};
    use state::RecordStateKind as K;
    Engine::cpu(|| {
        engine.source_record_states(source, |resource, key, state| {
            let phase = match state.kind {
                K::Converged => Phase::Converged,
                K::Pending | K::InFlight | K::Deferred => Phase::Pending,
                K::Held => Phase::Held,
                K::Conflict => Phase::Conflict,
                // Not published there, and the detail says why.
                K::Invalid | K::NotForTarget => Phase::Invalid,
                K::Failed | K::Rejected => Phase::Failed,
            };
            let detail = [&state.reason, &state.last_error]
                .into_iter()
                .find(|s| !s.is_empty())
                .map(|s| s.to_string())
                .or_else(|| {
                    let owner = state.observed_owner.as_ref()?;
                    (phase == Phase::Conflict).then(|| format!("owned by {owner:?}"))
                })
                .unwrap_or_default();
            RecordOutcome {
                resource: resource.clone(),
                record: RecordName(key.clone()),
                phase,
                detail,
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::write_back_pause;
    use std::time::Duration;

    /// A round a second while working out the statuses is cheap; spaced by ten times
    /// its cost when it is not (a tenth of a core); never more than 30 s apart.
    #[test]
    fn the_write_back_takes_at_most_a_tenth_of_a_core() {
        assert_eq!(write_back_pause(Duration::ZERO), Duration::from_secs(1));
        assert_eq!(
            write_back_pause(Duration::from_millis(40)),
            Duration::from_secs(1)
        );
        assert_eq!(
            write_back_pause(Duration::from_millis(250)),
            Duration::from_millis(2500)
        );
        assert_eq!(
            write_back_pause(Duration::from_secs(9)),
            Duration::from_secs(30)
        );
    }
}
