//! What a driver can do, and how its per-call limits are counted: the batch algorithm
//! adapts to both (refusing what a driver cannot write, cutting batches to its limits).
use dnsplane_common::{Change, RRSetOp};

/// What a driver can do; the batch algorithm adapts to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// All ops of one `apply` call commit together or not at all.
    pub atomic_batches: bool,
    /// The provider itself enforces each op's precondition (`before`).
    pub conditional_writes: bool,
    /// Most RRSet ops one `apply` call may carry (with [`Measure::Values`]: record
    /// values).
    pub max_changes_per_batch: usize,
    /// Most request bytes (roughly, see `Change::approx_bytes`) one `apply` call may
    /// carry (with [`Measure::Values`] and [`Measure::Rrdata`]: characters of record
    /// values).
    pub max_bytes_per_batch: usize,
    /// What the two limits above count.
    pub measure: Measure,
    /// `serial()` is a cheap change counter, so a cached listing can be revalidated
    /// without listing the zone again.
    pub has_serial: bool,
    /// The driver writes routing-policy sets (`RecordKey::set`, external-dns's
    /// `setIdentifier`).
    pub routing_sets: bool,
    /// The provider-specific properties ([`dnsplane_common::routing`]) the driver
    /// writes; a record with any other is refused. [`ANY_PROPERTY`] lets every one
    /// through (a driver that hands them on, as external-dns does to its webhooks).
    pub properties: &'static [&'static str],
}

/// What a driver's per-call limits count, so that a batch is packed to the limits its
/// provider documents, not to a cautious proxy of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Measure {
    /// RRSet ops, and [`Change::approx_bytes`].
    #[default]
    Ops,
    /// Record values and their characters, on both sides of every op (a provider
    /// that writes an op as the DELETE of the set as it was and the CREATE of the set
    /// as it will be, and counts the values and value characters of both: Route 53's
    /// 1,000 `ResourceRecord` elements and 32,000 value characters per request). A set
    /// without values (an alias) counts as one value of its target's length.
    Values,
    /// RRSet ops, and the characters of record values on both sides of every op (a
    /// provider that takes a number of set additions and as many deletions per
    /// request, an op being at most one of each, and counts the rrdata bytes of both:
    /// Cloud DNS's 1,000 additions, 1,000 deletions and 100,000 bytes of rrdata per
    /// change).
    Rrdata,
}

impl Measure {
    /// `change` as this measure counts it: (units, bytes).
    pub fn weigh(self, change: &Change) -> (usize, usize) {
        match self {
            Measure::Ops => (change.ops.len(), change.approx_bytes()),
            Measure::Values => sides(change)
                .map(|set| {
                    let (n, chars) = set.values().fold((0, 0), |(n, c), v| (n + 1, c + v.len()));
                    (n.max(1), chars.max(1))
                })
                .fold((0, 0), |(n, c), (vn, vc)| (n + vn, c + vc)),
            Measure::Rrdata => (
                change.ops.len(),
                sides(change)
                    .flat_map(|set| set.values())
                    .map(str::len)
                    .sum(),
            ),
        }
    }

    /// The limits count exactly what the provider counts, so a change over them alone
    /// can never be written.
    fn exact(self) -> bool {
        self != Measure::Ops
    }
}

/// Every set `change` deletes or creates: both sides of each op.
fn sides(change: &Change) -> impl Iterator<Item = &dnsplane_common::RRSet> {
    change
        .ops
        .iter()
        .flat_map(|op| op.before.iter().chain(&op.after))
}

impl Capabilities {
    /// A provider that commits each write atomically and checks each op's precondition
    /// itself, in writes of at most `changes` ops and `bytes` bytes; no serial, no
    /// routing sets, no properties until a `with_*` says so. Each driver states its
    /// capabilities as one expression of these.
    pub const fn atomic(changes: usize, bytes: usize) -> Capabilities {
        Capabilities {
            atomic_batches: true,
            conditional_writes: true,
            max_changes_per_batch: changes,
            max_bytes_per_batch: bytes,
            measure: Measure::Ops,
            has_serial: false,
            routing_sets: false,
            properties: &[],
        }
    }

    /// The limits count record values and their characters ([`Measure::Values`]).
    #[must_use]
    pub const fn measured_by_values(mut self) -> Capabilities {
        self.measure = Measure::Values;
        self
    }

    /// The limits count ops and the characters of their values ([`Measure::Rrdata`]).
    #[must_use]
    pub const fn measured_by_rrdata(mut self) -> Capabilities {
        self.measure = Measure::Rrdata;
        self
    }

    /// The provider does not commit a write's ops together.
    #[must_use]
    pub const fn not_atomic(mut self) -> Capabilities {
        self.atomic_batches = false;
        self
    }

    /// The provider's writes are not conditional: the driver checks preconditions by
    /// its own read under a zone lock.
    #[must_use]
    pub const fn checked_by_read(mut self) -> Capabilities {
        self.conditional_writes = false;
        self
    }

    /// `serial()` is a cheap change counter.
    #[must_use]
    pub const fn with_serial(mut self) -> Capabilities {
        self.has_serial = true;
        self
    }

    /// The driver writes routing-policy sets.
    #[must_use]
    pub const fn with_sets(mut self) -> Capabilities {
        self.routing_sets = true;
        self
    }

    /// The provider-specific properties the driver writes.
    #[must_use]
    pub const fn with_properties(mut self, properties: &'static [&'static str]) -> Capabilities {
        self.properties = properties;
        self
    }

    /// Why a driver with these capabilities cannot write `change` (`driver` names it
    /// in the message): a set or a property it does not support. Such a record is
    /// refused (INVALID) before any call, never written without them: that would be
    /// another record, planned again on every sync.
    pub fn refusal(&self, driver: &str, change: &Change) -> Option<String> {
        change
            .ops
            .iter()
            .find_map(|op| self.op_refusal(driver, op))
            .or_else(|| self.size_refusal(driver, change))
    }

    /// Why `change` cannot go in one request of a driver whose limits are exact
    /// ([`Measure::Values`], [`Measure::Rrdata`]): it alone carries more than a
    /// request takes. Refused before any call, naming it, rather than sent to be
    /// refused by the provider.
    fn size_refusal(&self, driver: &str, change: &Change) -> Option<String> {
        if !self.measure.exact() {
            return None;
        }
        let (units, chars) = self.measure.weigh(change);
        if units <= self.max_changes_per_batch && chars <= self.max_bytes_per_batch {
            return None;
        }
        let key = change.ops.first().map(|op| op.key.to_string())?;
        let what = if self.measure == Measure::Values {
            "values"
        } else {
            "record set changes"
        };
        Some(format!(
            "{key} is too large for {driver}: the change carries {units} {what} and {chars} value characters (counting what it deletes and what it creates), and one request takes at most {} {what} and {} characters",
            self.max_changes_per_batch, self.max_bytes_per_batch
        ))
    }

    /// [`refusal`](Self::refusal) for one op: the same rule the planner keeps a
    /// target by ([`dnsplane_common::routing::cannot_hold`]).
    pub fn op_refusal(&self, driver: &str, op: &RRSetOp) -> Option<String> {
        if !op.key.set.is_none() && !self.routing_sets {
            return Some(format!(
                "{driver} has no routing-policy sets (setIdentifier): cannot write {}",
                op.key
            ));
        }
        op.before.iter().chain(&op.after).find_map(|set| {
            dnsplane_common::routing::cannot_hold(driver, self.routing_sets, self.properties, set)
        })
    }
}

/// In [`Capabilities::properties`]: every property is written.
pub const ANY_PROPERTY: &str = dnsplane_common::routing::ANY_PROPERTY;
