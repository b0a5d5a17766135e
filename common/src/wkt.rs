//! The two well-known types the contract uses, `google.protobuf.Timestamp` and
//! `google.protobuf.Duration`, as the generated [`crate::pb`] messages hold them: the
//! prost messages of `prost-types`, field for field, plus serde in the proto3 JSON
//! spelling so that pbjson's generated impls (`/status`) can write them.
//!
//! Why not `pbjson-types`, pbjson's own well-known types: its `Timestamp` prints
//! `2023-11-14T22:13:20.005+00:00` where the proto3 JSON mapping (and `grpcurl`)
//! print `…Z`; and `prost-types` cannot be used directly, since serde's traits cannot
//! be implemented for another crate's type. So these are our types, and every
//! conversion, the text included, is `prost-types`' (`Display`/`FromStr` are the
//! proto3 JSON spelling there). The rest of the code converts through the impls below
//! only.
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::SystemTime;

/// `google.protobuf.Timestamp`: JSON is RFC 3339 in UTC with a `Z` and 0, 3, 6 or 9
/// fractional digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Timestamp {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// `google.protobuf.Duration`: JSON is seconds with 0, 3, 6 or 9 fractional digits
/// and an `s` (`"1s"`, `"0.250s"`, `"-1.500s"`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Duration {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

impl From<Timestamp> for prost_types::Timestamp {
    fn from(Timestamp { seconds, nanos }: Timestamp) -> Self {
        Self { seconds, nanos }
    }
}

impl From<prost_types::Timestamp> for Timestamp {
    fn from(prost_types::Timestamp { seconds, nanos }: prost_types::Timestamp) -> Self {
        Self { seconds, nanos }
    }
}

impl From<Duration> for prost_types::Duration {
    fn from(Duration { seconds, nanos }: Duration) -> Self {
        Self { seconds, nanos }
    }
}

impl From<prost_types::Duration> for Duration {
    fn from(prost_types::Duration { seconds, nanos }: prost_types::Duration) -> Self {
        Self { seconds, nanos }
    }
}

impl From<SystemTime> for Timestamp {
    fn from(t: SystemTime) -> Self {
        prost_types::Timestamp::from(t).into()
    }
}

impl TryFrom<Timestamp> for SystemTime {
    type Error = prost_types::TimestampError;
    fn try_from(t: Timestamp) -> Result<Self, Self::Error> {
        SystemTime::try_from(prost_types::Timestamp::from(t))
    }
}

impl TryFrom<std::time::Duration> for Duration {
    type Error = prost_types::DurationError;
    fn try_from(d: std::time::Duration) -> Result<Self, Self::Error> {
        prost_types::Duration::try_from(d).map(Self::from)
    }
}

impl TryFrom<Duration> for std::time::Duration {
    type Error = prost_types::DurationError;
    fn try_from(d: Duration) -> Result<Self, Self::Error> {
        std::time::Duration::try_from(prost_types::Duration::from(d))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        prost_types::Timestamp::from(*self).fmt(f)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        prost_types::Duration::from(*self).fmt(f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse::<prost_types::Timestamp>()
            .map(Self::from)
            .map_err(|e| serde::de::Error::custom(format!("timestamp {text:?}: {e}")))
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse::<prost_types::Duration>()
            .map(Self::from)
            .map_err(|e| serde::de::Error::custom(format!("duration {text:?}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_use_the_proto3_json_spelling() {
        let t = |seconds, nanos| serde_json::to_value(Timestamp { seconds, nanos }).unwrap();
        assert_eq!(t(1_700_000_000, 0), "2023-11-14T22:13:20Z");
        assert_eq!(t(1_700_000_000, 5_000_000), "2023-11-14T22:13:20.005Z");
        assert_eq!(t(1_700_000_000, 5_000), "2023-11-14T22:13:20.000005Z");
        let back: Timestamp = serde_json::from_value("2023-11-14T22:13:20.005Z".into()).unwrap();
        assert_eq!(
            back,
            Timestamp {
                seconds: 1_700_000_000,
                nanos: 5_000_000
            }
        );
        let e = serde_json::from_value::<Timestamp>("yesterday".into()).unwrap_err();
        assert!(e.to_string().contains("timestamp \"yesterday\""), "{e}");
    }

    #[test]
    fn durations_use_the_proto3_json_spelling() {
        let d = |seconds, nanos| serde_json::to_value(Duration { seconds, nanos }).unwrap();
        assert_eq!(d(1, 0), "1s");
        assert_eq!(d(0, 250_000_000), "0.250s");
        assert_eq!(d(12, 34_000), "12.000034s");
        assert_eq!(d(3, 5), "3.000000005s");
        assert_eq!(d(-1, -500_000_000), "-1.500s");
        let back: Duration = serde_json::from_value("0.250s".into()).unwrap();
        assert_eq!(
            back,
            Duration {
                seconds: 0,
                nanos: 250_000_000
            }
        );
    }
}
