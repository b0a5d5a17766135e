//! The SOA of a zone file: read and checked (at the apex, seven fields, names and
//! numbers), never an entry (the provider owns it); its minimum is the default TTL
//! when it comes first without a TTL, as BIND reads it.
use super::lexer::Token;
use super::{Fatal, Reader, fields};
use dnsplane_common::Name;
use dnsplane_common::error::excerpt;
use dnsplane_common::rrset::MAX_TTL;
use fields::NameError;

impl Reader<'_> {
    pub(super) fn soa(
        &mut self,
        owner: &Name,
        line: usize,
        ttl: Option<(u32, Token<'_>)>,
        data: &[Token<'_>],
        data_at: usize,
    ) -> Result<(), Fatal> {
        let record = format!("{owner} SOA");
        let mut problems = Vec::new();
        if self.zone.as_ref().is_some_and(|z| z != owner) {
            problems.push(self.error(
                record.clone(),
                line,
                data_at,
                format!(
                    "a SOA record belongs at the zone's apex ({}), not at {owner}",
                    self.zone.as_ref().map_or("", |z| z.as_str())
                ),
            ));
        }
        let mut minimum = None;
        if data.len() != 7 {
            let at = data.get(7).or(data.last()).map_or(data_at, |t| {
                if data.len() > 7 {
                    t.at
                } else {
                    t.at + t.raw.len()
                }
            });
            problems.push(self.error(
                record.clone(),
                line,
                at,
                format!(
                    "SOA data is \"<mname> <rname> <serial> <refresh> <retry> <expire> <minimum>\" (7 fields), not {}",
                    data.len()
                ),
            ));
        } else {
            for t in &data[..2] {
                match fields::name(t.raw, self.origin.as_ref()) {
                    Ok(_) => {}
                    Err(NameError::NoOrigin) => {
                        self.fatal(
                            Some((t.line, t.at)),
                            format!(
                                "{:?} is a relative name, and there is no $ORIGIN or zone to complete it",
                                excerpt(t.raw)
                            ),
                        );
                        return Err(Fatal);
                    }
                    Err(NameError::Bad(m)) => {
                        problems.push(self.error(record.clone(), t.line, t.at, m))
                    }
                }
            }
            for (i, t) in data[2..].iter().enumerate() {
                let n = if i == 0 {
                    t.raw.parse::<u32>().ok()
                } else {
                    fields::ttl(t.raw).and_then(Result::ok)
                };
                match n {
                    Some(n) => minimum = Some(n),
                    None => problems.push(self.error(
                        record.clone(),
                        t.line,
                        t.at,
                        format!("SOA field {:?} is not a number of seconds", excerpt(t.raw)),
                    )),
                }
            }
        }
        // BIND: a SOA without a TTL, before any TTL or $TTL, takes its minimum, which
        // then serves as the $TTL.
        match ttl {
            Some((v, _)) => self.last_ttl = Some(v),
            None if self.default_ttl.is_none() && self.last_ttl.is_none() => {
                self.default_ttl = minimum.map(|m| m.min(MAX_TTL));
            }
            None => {}
        }
        self.out.errors.extend(problems);
        Ok(())
    }
}
