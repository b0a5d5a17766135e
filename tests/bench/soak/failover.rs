//! Failover mode (`--planners 2`): two planners share a Redis lease, each with its own
//! state dir. Every `--failover-interval` the leader (the one whose `GetStatus` says
//! `lease.role = leader`) is killed with SIGKILL and restarted `--restart-after` later,
//! as the standby. Every `--push-interval` a `PatchDesired` of the source `soak`
//! (`--push-size` changes) goes to the planner last seen leading, and to the other one
//! on any error (a standby answers `UNAVAILABLE` naming the leader; a killed one does
//! not answer), until one acknowledges it: only then does it enter the model. A
//! retried patch is the same request, so one applied but not answered changes nothing
//! more when it is sent again.
use crate::args::Args;
use crate::log;
use crate::model::Model;
use crate::report::Outcome;
use dnsplane_e2e::scaling::Cluster;
use rand::rngs::StdRng;
use std::time::{Duration, Instant};

/// The pushed source's program name (`push:soak`).
pub const SOURCE: &str = "soak";
/// How long one push is retried before the bench gives up on it (and fails).
const PUSH_GIVE_UP: Duration = Duration::from_secs(120);

#[derive(Debug)]
pub struct Failover {
    next_kill: Instant,
    /// The killed planner and when it starts again.
    restart: Option<(usize, Instant)>,
    /// When the last leader was killed, until a new one shows.
    killed_at: Option<Instant>,
    next_probe: Instant,
    next_push: Instant,
    /// Where the next push goes first.
    push_to: usize,
}

impl Failover {
    pub fn new(args: &Args, cluster: &Cluster, t0: Instant) -> Failover {
        Failover {
            next_kill: t0 + args.failover_interval,
            restart: None,
            killed_at: None,
            next_probe: t0,
            next_push: t0,
            push_to: cluster.leader().unwrap_or(0),
        }
    }

    /// One turn of the chaos loop.
    pub fn step(
        &mut self,
        args: &Args,
        cluster: &mut Cluster,
        model: &mut Model,
        rng: &mut StdRng,
        out: &mut Outcome,
        t0: Instant,
    ) {
        let now = Instant::now();
        self.restart_due(cluster, t0);
        if let Some(at) = self.killed_at
            && now >= self.next_probe
        {
            self.next_probe = now + Duration::from_millis(250);
            if let Some(j) = cluster.leader() {
                let took = at.elapsed();
                out.takeover_max = out.takeover_max.max(took);
                self.killed_at = None;
                self.push_to = j;
                log(
                    t0,
                    &format!(
                        "planner{j} leads, {:.1} s after the kill",
                        took.as_secs_f64()
                    ),
                );
            }
        }
        if now >= self.next_kill
            && self.restart.is_none()
            && self.killed_at.is_none()
            && let Some(l) = cluster.leader()
        {
            self.next_kill += args.failover_interval;
            cluster.kill_planner(l);
            out.failovers += 1;
            self.restart = Some((l, now + args.restart_after));
            self.killed_at = Some(now);
            self.push_to = 1 - l;
            log(t0, &format!("planner{l} (the leader) killed (SIGKILL)"));
        }
        if now >= self.next_push {
            self.next_push += args.push_interval;
            self.push(args, cluster, model, rng, out, t0);
        }
    }

    fn restart_due(&mut self, cluster: &mut Cluster, t0: Instant) {
        if let Some((i, at)) = self.restart
            && Instant::now() >= at
        {
            cluster.restart_planner(i);
            self.restart = None;
            log(t0, &format!("planner{i} restarted"));
        }
    }

    /// Pushes one patch until a planner acknowledges it.
    fn push(
        &mut self,
        args: &Args,
        cluster: &mut Cluster,
        model: &mut Model,
        rng: &mut StdRng,
        out: &mut Outcome,
        t0: Instant,
    ) {
        let plan = model.plan_push(rng, args.push_size);
        let req = model.push_request(SOURCE, &plan);
        let start = Instant::now();
        let mut refused = Vec::new();
        loop {
            match cluster.patch_at(self.push_to, req.clone()) {
                Ok(_) => {
                    out.pushes += 1;
                    out.pushed_changes += plan.changes();
                    if !refused.is_empty() {
                        log(
                            t0,
                            &format!(
                                "push acknowledged by planner{} after {} refusals ({:.1} s; first: {})",
                                self.push_to,
                                refused.len(),
                                start.elapsed().as_secs_f64(),
                                refused[0]
                            ),
                        );
                    }
                    model.commit_push(plan);
                    return;
                }
                Err(e) => {
                    out.push_retries += 1;
                    refused.push(format!(
                        "planner{}: {:?} {}",
                        self.push_to,
                        e.code(),
                        e.message()
                    ));
                    if start.elapsed() > PUSH_GIVE_UP {
                        out.push_unacked.push(format!(
                            "{} changes, last answer {}",
                            plan.changes(),
                            refused.last().expect("one")
                        ));
                        log(
                            t0,
                            &format!("push never acknowledged: {}", refused.last().expect("one")),
                        );
                        return;
                    }
                    self.push_to = 1 - self.push_to;
                    std::thread::sleep(Duration::from_millis(200));
                    self.restart_due(cluster, t0);
                }
            }
        }
    }

    /// Starts a killed planner again (the chaos is over).
    pub fn finish(&mut self, cluster: &mut Cluster, t0: Instant) {
        if let Some((i, _)) = self.restart.take() {
            cluster.restart_planner(i);
            log(t0, &format!("planner{i} restarted; chaos over"));
        }
    }
}
