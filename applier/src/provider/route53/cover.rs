//! Reading a set of names from Route 53 in few requests.
//!
//! `ListResourceRecordSets` has no "these names" filter: it lists from a start name on,
//! in Route 53's order (the name with its labels reversed, compared byte by byte with
//! its trailing dot: `com.example.www.`), up to 300 sets a page. So a read of names
//! starts a sweep at the first name not yet known, and every wanted name that sorts
//! before where the sweep stopped is known: present if the sweep saw it, absent if
//! not. Names that lie together (a batch's names usually do) cost one request; names
//! far apart one each.
//!
//! Absence is only inferred from a gap when the order is certain: the sweep's names
//! must come back in the order computed here, and the name must hold nothing but
//! letters, digits, `-` and `_` (Route 53 escapes the rest, e.g. `*` as `\052`, and
//! its docs leave their order open). Otherwise a name is known only by being seen, or
//! by being a sweep's start (the first set of a sweep from `n` is at `n` if `n` holds
//! anything).
use dnsplane_common::Name;
use std::collections::BTreeSet;

/// A name's place in Route 53's listing order.
pub fn order_key(name: &Name) -> Vec<u8> {
    let body = name.as_str().trim_end_matches('.');
    let mut out = Vec::with_capacity(body.len() + 1);
    for (i, label) in body.rsplit('.').enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        out.extend_from_slice(label.as_bytes());
    }
    out.push(b'.');
    out
}

/// Whether a name's order is certain (see the module docs).
fn plain(name: &Name) -> bool {
    name.as_str()
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The wanted names, in Route 53's order, and which are known.
#[derive(Debug)]
pub struct Cover {
    pending: Vec<(Vec<u8>, Name, bool)>,
    known: Vec<bool>,
}

impl Cover {
    pub fn new(names: &BTreeSet<Name>) -> Self {
        let mut pending: Vec<(Vec<u8>, Name, bool)> = names
            .iter()
            .map(|n| (order_key(n), n.clone(), plain(n)))
            .collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        let known = vec![false; pending.len()];
        Cover { pending, known }
    }

    /// Where the next sweep starts: the first name not yet known.
    pub fn next_start(&self) -> Option<Name> {
        self.known
            .iter()
            .position(|k| !k)
            .map(|i| self.pending[i].1.clone())
    }

    /// Whether `name` is wanted and not known yet (a sweep that stops inside it
    /// continues).
    pub fn wants(&self, name: &Name) -> bool {
        self.pending
            .iter()
            .zip(&self.known)
            .any(|((_, n, _), known)| !known && n == name)
    }

    /// A sweep from `start` saw `seen` (in the order returned) and stopped before
    /// `boundary` (`None`: it reached the end of the zone). Without `gaps` the place
    /// it stopped is unknown, and only what it saw is known.
    pub fn swept(&mut self, start: &Name, seen: &[Name], boundary: Option<&Name>, gaps: bool) {
        let start_key = order_key(start);
        let mut keys: Vec<Vec<u8>> = seen.iter().map(order_key).collect();
        let boundary_key = boundary.map(order_key);
        if let Some(b) = &boundary_key {
            keys.push(b.clone());
        }
        let ordered = gaps
            && keys.first().is_none_or(|k| *k >= start_key)
            && keys.windows(2).all(|w| w[0] <= w[1]);
        if !ordered && gaps {
            tracing::warn!(start = %start, "Route 53 listed names in an order dnsplane did not expect; reading the rest of the names one by one.");
        }
        let seen: BTreeSet<&Name> = seen.iter().collect();
        for (i, (key, name, plain)) in self.pending.iter().enumerate() {
            if self.known[i] || boundary == Some(name) {
                continue;
            }
            let before_boundary = boundary_key.as_ref().is_none_or(|b| key < b);
            let in_gap = ordered && *plain && *key >= start_key && before_boundary;
            if name == start || seen.contains(name) || in_gap {
                self.known[i] = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    fn names(v: &[&str]) -> BTreeSet<Name> {
        v.iter().map(|s| n(s)).collect()
    }

    #[test]
    fn the_order_is_route53s() {
        let mut v = [
            n("www.example.com"),
            n("example.com"),
            n("a.b.example.com"),
            n("b.example.com"),
            n("example-x.com"),
        ];
        v.sort_by_key(order_key);
        let got: Vec<&str> = v.iter().map(Name::as_str).collect();
        // "com.example-x." < "com.example." because '-' sorts before '.'.
        assert_eq!(
            got,
            [
                "example-x.com.",
                "example.com.",
                "b.example.com.",
                "a.b.example.com.",
                "www.example.com."
            ]
        );
    }

    #[test]
    fn one_sweep_knows_every_name_before_where_it_stopped() {
        let mut c = Cover::new(&names(&[
            "a.ex.test",
            "b.ex.test",
            "c.ex.test",
            "z.ex.test",
        ]));
        let start = c.next_start().unwrap();
        assert_eq!(start.as_str(), "a.ex.test.");
        // The zone holds a and c; the page stopped before m.
        c.swept(
            &start,
            &[n("a.ex.test"), n("c.ex.test")],
            Some(&n("m.ex.test")),
            true,
        );
        assert_eq!(c.next_start().unwrap().as_str(), "z.ex.test.");
        c.swept(&n("z.ex.test"), &[], None, true);
        assert!(c.next_start().is_none());
    }

    #[test]
    fn a_name_the_page_stopped_inside_is_not_known() {
        let mut c = Cover::new(&names(&["a.ex.test", "b.ex.test"]));
        assert!(c.wants(&n("b.ex.test")));
        c.swept(
            &n("a.ex.test"),
            &[n("a.ex.test"), n("b.ex.test")],
            Some(&n("b.ex.test")),
            true,
        );
        assert_eq!(c.next_start().unwrap().as_str(), "b.ex.test.");
    }

    #[test]
    fn escaped_names_and_an_unexpected_order_are_not_inferred() {
        let mut c = Cover::new(&names(&["a.ex.test", "*.b.ex.test", "c.ex.test"]));
        c.swept(
            &n("a.ex.test"),
            &[n("a.ex.test")],
            Some(&n("d.ex.test")),
            true,
        );
        // c is known from the gap, the wildcard only by being seen.
        assert_eq!(c.next_start().unwrap().as_str(), "*.b.ex.test.");
        let mut c = Cover::new(&names(&["a.ex.test", "b.ex.test", "c.ex.test"]));
        // Out of order: only the start and what was seen count.
        c.swept(
            &n("a.ex.test"),
            &[n("c.ex.test"), n("a.ex.test")],
            Some(&n("d.ex.test")),
            true,
        );
        assert_eq!(c.next_start().unwrap().as_str(), "b.ex.test.");
    }
}
