//! An endpoint's labels (external-dns's `labels`: `owner`, `resource`, `ownedRecord`,
//! …): metadata a source gives with a desired record and gets back when it reads the
//! record (`GET /records` of the webhook, `ListRecordStates`, `dnsplane records`).
//!
//! Labels are never part of a record's data: they are not planned (a change of labels
//! alone writes nothing to a provider), not compared, and not sent to providers. They
//! are kept exactly as given (keys are case-sensitive, values untrimmed), bounded like
//! provider-specific properties so that what a source sends cannot cost unbounded
//! memory. A record without labels holds none ([`Labels::NONE`] is one null pointer,
//! and the desired index keeps labels beside its records, only for those that have
//! any); a record with labels holds one allocation of their text.
use dnsplane_common::SharedStr;
use std::collections::BTreeMap;
use std::fmt;

/// The label that feeds a record to some views only (`[[zones]] view`; views
/// separated by commas). Here, beside the labels, because sources set it too.
pub const VIEW_LABEL: &str = "dnsplane.io/view";
/// Most labels one record may carry.
pub const MAX_LABELS: usize = 32;
/// Longest label key, in bytes (a Kubernetes label key with its prefix: 253 + 63).
pub const MAX_LABEL_KEY: usize = 317;
/// Longest label value, in bytes.
pub const MAX_LABEL_VALUE: usize = 1024;

/// Why labels were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LabelError {
    #[error("{count} labels, above the limit of {MAX_LABELS}")]
    TooMany { count: usize },
    #[error("a label key must not be empty")]
    EmptyKey,
    #[error("label key {key:?} is above {MAX_LABEL_KEY} bytes")]
    KeyTooLong { key: String },
    #[error("label {key:?}: the value is above {MAX_LABEL_VALUE} bytes")]
    ValueTooLong { key: String },
    #[error("label {key:?}: holds a control character")]
    Control { key: String },
}

impl LabelError {
    /// The key of the label at fault (an excerpt), when one is.
    pub fn key(&self) -> Option<&str> {
        match self {
            LabelError::TooMany { .. } | LabelError::EmptyKey => None,
            LabelError::KeyTooLong { key }
            | LabelError::ValueTooLong { key }
            | LabelError::Control { key } => Some(key),
        }
    }
}

/// A record's labels, shared (one allocation per set of labels, whatever the number of
/// copies of an entry); none is a null pointer.
///
/// Held as one string, `key NUL value NUL key NUL value`, sorted by key: labels hold
/// no control character, so NUL separates them, and two labels cost one small
/// allocation (a map of them cost a B-tree node, about 550 bytes, and one per string).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels(Option<SharedStr>);

/// What separates keys and values in [`Labels`]' text.
const SEP: char = '\0';

impl Labels {
    pub const NONE: Labels = Labels(None);

    /// Checks `map` against the bounds; an empty map is [`Labels::NONE`].
    pub fn new(map: BTreeMap<String, String>) -> Result<Labels, LabelError> {
        if map.len() > MAX_LABELS {
            return Err(LabelError::TooMany { count: map.len() });
        }
        for (key, value) in &map {
            let excerpt = || dnsplane_common::error::excerpt(key);
            if key.is_empty() {
                return Err(LabelError::EmptyKey);
            }
            if key.len() > MAX_LABEL_KEY {
                return Err(LabelError::KeyTooLong { key: excerpt() });
            }
            if value.len() > MAX_LABEL_VALUE {
                return Err(LabelError::ValueTooLong { key: excerpt() });
            }
            if key.chars().chain(value.chars()).any(char::is_control) {
                return Err(LabelError::Control { key: excerpt() });
            }
        }
        Ok(Labels::trusted(map))
    }

    /// [`Labels::new`] of `(key, value)` pairs; a key given twice keeps its last value
    /// (as Go's JSON and protobuf's maps do).
    pub fn of<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Labels, LabelError> {
        Labels::new(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// Labels this planner checked before it stored them (its own state files); a key
    /// or value with a NUL in it (never written by this planner) is left out.
    fn trusted(map: BTreeMap<String, String>) -> Labels {
        let mut text = String::new();
        for (k, v) in map
            .iter()
            .filter(|(k, v)| !k.contains(SEP) && !v.contains(SEP))
        {
            if !text.is_empty() {
                text.push(SEP);
            }
            text.push_str(k);
            text.push(SEP);
            text.push_str(v);
        }
        match text.is_empty() {
            true => Labels::NONE,
            false => Labels(Some(SharedStr::new(&text))),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// By key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut parts = self.0.as_deref().into_iter().flat_map(|t| t.split(SEP));
        std::iter::from_fn(move || Some((parts.next()?, parts.next()?)))
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// A copy, for the edges that speak maps (the webhook's JSON, protobuf).
    pub fn to_map<M: FromIterator<(String, String)>>(&self) -> M {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Labels {
    /// Read back from this planner's own state, which only ever held checked labels.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
        BTreeMap::<String, String>::deserialize(d).map(Labels::trusted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_costs_one_word_and_empty_is_none() {
        assert_eq!(std::mem::size_of::<Labels>(), 8);
        assert_eq!(Labels::new(BTreeMap::new()).unwrap(), Labels::NONE);
        assert!(Labels::NONE.is_empty());
        assert_eq!(Labels::NONE.len(), 0);
        assert_eq!(Labels::NONE.iter().count(), 0);
    }

    /// Empty values and one-label sets read back as given.
    #[test]
    fn empty_values_and_single_labels_read_back() {
        let l = Labels::of([("a", ""), ("b", ""), ("c", "3")]).unwrap();
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            [("a", ""), ("b", ""), ("c", "3")]
        );
        assert_eq!(l.len(), 3);
        assert_eq!(l.get("b"), Some(""));
        assert_eq!(l.get("d"), None);
        let one = Labels::of([("owner", "")]).unwrap();
        assert_eq!(one.iter().collect::<Vec<_>>(), [("owner", "")]);
        assert_ne!(one, Labels::NONE);
    }

    #[test]
    fn kept_exactly_as_given() {
        let l = Labels::of([("resource", " ingress/default/Web "), ("Owner", "c1")]).unwrap();
        assert_eq!(l.get("resource"), Some(" ingress/default/Web "));
        assert_eq!(l.get("owner"), None, "keys are case-sensitive");
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            [("Owner", "c1"), ("resource", " ingress/default/Web ")]
        );
        assert_eq!(Labels::of([("k", "")]).unwrap().get("k"), Some(""));
    }

    #[test]
    fn bounds_are_enforced_with_the_key_named() {
        let many = (0..=MAX_LABELS).map(|i| (format!("k{i}"), String::new()));
        assert_eq!(
            Labels::of(many).unwrap_err().to_string(),
            format!("{} labels, above the limit of {MAX_LABELS}", MAX_LABELS + 1)
        );
        assert_eq!(Labels::of([("", "v")]), Err(LabelError::EmptyKey));
        let long_key = "k".repeat(MAX_LABEL_KEY + 1);
        assert!(matches!(
            Labels::of([(long_key.as_str(), "v")]),
            Err(LabelError::KeyTooLong { .. })
        ));
        let e = Labels::of([("owner", "v".repeat(MAX_LABEL_VALUE + 1))]).unwrap_err();
        assert_eq!(e.key(), Some("owner"));
        assert!(e.to_string().contains("\"owner\""), "{e}");
        let e = Labels::of([("owner", "a\nb")]).unwrap_err();
        assert_eq!(
            e,
            LabelError::Control {
                key: "owner".into()
            }
        );
        assert!(Labels::of([("k".repeat(MAX_LABEL_KEY), "v".repeat(MAX_LABEL_VALUE))]).is_ok());
    }

    proptest::proptest! {
        /// Any map within the bounds reads back exactly as given.
        #[test]
        fn any_valid_map_reads_back_as_given(
            map in proptest::collection::btree_map("[^\\p{Cc}]{1,8}", "[^\\p{Cc}]{0,8}", 0..8)
        ) {
            let labels = Labels::new(map.clone()).unwrap();
            proptest::prop_assert_eq!(labels.len(), map.len());
            proptest::prop_assert_eq!(labels.to_map::<BTreeMap<String, String>>(), map);
        }
    }

    #[test]
    fn serialised_as_a_map_and_read_back() {
        let l = Labels::of([("owner", "c1"), ("resource", "ingress/default/web")]).unwrap();
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(json, r#"{"owner":"c1","resource":"ingress/default/web"}"#);
        assert_eq!(serde_json::from_str::<Labels>(&json).unwrap(), l);
        assert_eq!(serde_json::from_str::<Labels>("{}").unwrap(), Labels::NONE);
    }
}
