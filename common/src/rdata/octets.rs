//! The primitives of record data in wire form: names and character-strings written,
//! and a cursor reading them back. Apart from [`super::wire`], which encodes every
//! type, so that a type's own module (SVCB's parameters) can use them without the
//! two importing each other.
use crate::name::Name;

pub(super) fn put_name(out: &mut Vec<u8>, name: &Name) {
    for label in name.as_str().split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

pub(super) fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(s.len() as u8);
    out.extend_from_slice(s);
}

/// A cursor over one record's data.
pub(super) struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(data: &'a [u8]) -> Self {
        Reader { data, at: 0 }
    }

    pub(super) fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    pub(super) fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at + n;
        let s = self
            .data
            .get(self.at..end)
            .ok_or_else(|| format!("record data ends {} octets early", end - self.data.len()))?;
        self.at = end;
        Ok(s)
    }

    pub(super) fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16, String> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(super) fn rest(&mut self) -> &'a [u8] {
        let s = &self.data[self.at.min(self.data.len())..];
        self.at = self.data.len();
        s
    }

    pub(super) fn string(&mut self) -> Result<Vec<u8>, String> {
        let n = usize::from(self.u8()?);
        Ok(self.bytes(n)?.to_vec())
    }

    pub(super) fn name(&mut self) -> Result<Name, String> {
        let mut text = String::new();
        loop {
            let n = self.u8()?;
            if n == 0 {
                break;
            }
            if n > 63 {
                return Err("compressed or extended label in record data".into());
            }
            let label = self.bytes(usize::from(n))?;
            text.push_str(&String::from_utf8_lossy(label));
            text.push('.');
        }
        if text.is_empty() {
            text.push('.');
        }
        Name::parse(&text).map_err(|e| e.to_string())
    }
}
