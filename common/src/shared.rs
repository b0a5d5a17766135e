//! Text shared by many holders behind one thin pointer: a name, the source and the
//! resource of a million desired records.
use std::borrow::Borrow;
use std::fmt;
use triomphe::ThinArc;

/// An immutable string behind one thin pointer: one allocation holds the count, the
/// length and the bytes. `Arc<str>` is a pointer and a length (16 bytes); the
/// planner holds several of these per record, so the half saved adds up.
#[derive(Clone)]
pub struct SharedStr(ThinArc<(), u8>);

impl SharedStr {
    pub fn new(text: &str) -> SharedStr {
        SharedStr(ThinArc::from_header_and_slice((), text.as_bytes()))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0.slice).expect("a SharedStr is built from a str")
    }

    fn bytes(&self) -> &[u8] {
        &self.0.slice
    }

    /// Whether both are one allocation (shared), not merely equal.
    pub fn same_allocation(&self, other: &SharedStr) -> bool {
        self.0.ptr() == other.0.ptr()
    }
}

impl std::ops::Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

// As `str` hashes, so that a set of these can be asked with a `&str`.
impl std::hash::Hash for SharedStr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

// Equality and order compare the text (byte order is `str`'s order), with a fast path
// for the shared case.
impl PartialEq for SharedStr {
    fn eq(&self, other: &Self) -> bool {
        self.same_allocation(other) || self.bytes() == other.bytes()
    }
}

impl Eq for SharedStr {}

impl PartialOrd for SharedStr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedStr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self.same_allocation(other) {
            std::cmp::Ordering::Equal
        } else {
            self.bytes().cmp(other.bytes())
        }
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for SharedStr {
    fn from(text: &str) -> Self {
        SharedStr::new(text)
    }
}

impl From<String> for SharedStr {
    fn from(text: String) -> Self {
        SharedStr::new(&text)
    }
}

impl serde::Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for SharedStr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(SharedStr::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashSet};

    #[test]
    fn one_word_compared_and_found_as_its_text() {
        assert_eq!(std::mem::size_of::<SharedStr>(), 8);
        assert_eq!(std::mem::size_of::<Option<SharedStr>>(), 8);
        let a = SharedStr::new("push:app");
        let b = SharedStr::new("push:app");
        assert!(a == b && !a.same_allocation(&b) && a.same_allocation(&a.clone()));
        assert!(SharedStr::new("a") < SharedStr::new("b"));
        assert!(SharedStr::new("ab") > SharedStr::new("a"));
        let set: HashSet<SharedStr> = [a.clone()].into();
        assert!(set.contains("push:app"));
        let map: BTreeMap<SharedStr, u8> = [(a, 1)].into();
        assert_eq!(map.get("push:app"), Some(&1));
        assert_eq!(format!("{b} {b:?}"), "push:app \"push:app\"");
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<SharedStr>(&json).unwrap(), b);
    }
}
