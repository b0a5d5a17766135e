//! An RRSet's values and properties packed behind one thin pointer ([`Values`]), and
//! the iterators that read them back.
use std::fmt;
use triomphe::ThinArc;

/// An RRSet's values and the TTL they were made with, in one allocation behind one
/// thin pointer: the values' text, each after its length. [`RRData`] is then one word
/// (an `Arc<[String]>` and a TTL took 24 bytes), and a set of one short value one
/// allocation of 40 bytes (it was 48 for the slice and 16 for the string). Equality
/// compares the values only; the TTL is the holder's business.
#[derive(Clone)]
pub(super) struct Values(ThinArc<Head, u8>);

/// `count` values, then `props` provider-specific properties as name and value, each
/// text after its length. (`MAX_VALUES` and `MAX_PROPERTIES` fit a `u16`.)
#[derive(Clone, Copy)]
struct Head {
    ttl: u32,
    count: u16,
    props: u16,
}

impl Values {
    #[cfg(test)]
    pub(super) fn new<S: AsRef<str>>(ttl: u32, values: &[S]) -> Values {
        Values::with_properties(ttl, values, &[])
    }

    pub(super) fn with_properties<S: AsRef<str>>(
        ttl: u32,
        values: &[S],
        properties: &[(String, String)],
    ) -> Values {
        let texts = values.iter().map(AsRef::as_ref).chain(
            properties
                .iter()
                .flat_map(|(n, v)| [n.as_str(), v.as_str()]),
        );
        let mut bytes = Vec::with_capacity(texts.clone().map(|v| v.len() + 4).sum());
        for v in texts {
            let v = v.as_bytes();
            bytes.extend_from_slice(&(v.len() as u32).to_le_bytes());
            bytes.extend_from_slice(v);
        }
        let head = Head {
            ttl,
            count: values.len() as u16,
            props: properties.len() as u16,
        };
        Values(ThinArc::from_header_and_slice(head, &bytes))
    }

    pub(super) fn iter(&self) -> ValueIter<'_> {
        ValueIter {
            rest: &self.0.slice,
            left: self.0.header.header.count as usize,
        }
    }

    /// The provider-specific properties, after the values.
    pub(super) fn properties(&self) -> PropertyIter<'_> {
        let mut skip = self.iter();
        for _ in skip.by_ref() {}
        PropertyIter(ValueIter {
            rest: skip.rest,
            left: 2 * self.0.header.header.props as usize,
        })
    }

    /// A copy with another TTL.
    pub(super) fn with_ttl(&self, ttl: u32) -> Values {
        let properties: Vec<(String, String)> = self
            .properties()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        Values::with_properties(ttl, &self.iter().collect::<Vec<_>>(), &properties)
    }

    /// The TTL these values were made with.
    pub(super) fn ttl(&self) -> u32 {
        self.0.header.header.ttl
    }
}

impl PartialEq for Values {
    fn eq(&self, other: &Values) -> bool {
        let (a, b) = (&self.0.header.header, &other.0.header.header);
        self.0.ptr() == other.0.ptr()
            || (a.count == b.count && a.props == b.props && self.0.slice == other.0.slice)
    }
}

/// An RRSet's provider-specific properties, as `(name, value)`, sorted by name.
#[derive(Clone)]
pub struct PropertyIter<'a>(ValueIter<'a>);

impl<'a> Iterator for PropertyIter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        Some((self.0.next()?, self.0.next()?))
    }
}

impl fmt::Debug for PropertyIter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

impl Eq for Values {}

impl fmt::Debug for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()?;
        if self.0.header.header.props > 0 {
            write!(f, " {:?}", self.properties())?;
        }
        Ok(())
    }
}

/// The values of an RRSet, in order, as text.
#[derive(Clone)]
pub struct ValueIter<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for ValueIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (len, rest) = self.rest.split_at(4);
        let len = u32::from_le_bytes(len.try_into().expect("a length prefix")) as usize;
        let (text, rest) = rest.split_at(len);
        self.rest = rest;
        Some(std::str::from_utf8(text).expect("values are stored from text"))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for ValueIter<'_> {}

impl PartialEq for ValueIter<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.clone().eq(other.clone())
    }
}

impl<S: AsRef<str>> PartialEq<[S]> for ValueIter<'_> {
    fn eq(&self, other: &[S]) -> bool {
        self.clone().eq(other.iter().map(AsRef::as_ref))
    }
}

impl<S: AsRef<str>> PartialEq<&[S]> for ValueIter<'_> {
    fn eq(&self, other: &&[S]) -> bool {
        *self == **other
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for ValueIter<'_> {
    fn eq(&self, other: &Vec<S>) -> bool {
        *self == **other
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for ValueIter<'_> {
    fn eq(&self, other: &[S; N]) -> bool {
        *self == other[..]
    }
}

impl fmt::Debug for ValueIter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}
