//! Whether an object is for this source at all: `--annotation-filter` and the
//! `controller` annotation, as external-dns's informer indexers apply them
//! (`IndexSelectorWithAnnotationFilter`, `IsControllerMismatch`).
//!
//! An annotation filter that cannot be parsed is a problem, where external-dns
//! (`parseAnnotationFilterOrNil`) drops the filter and publishes every object: a
//! mistyped filter must not widen what is published.
use super::annotations::{Annotations, Selector};
use super::{Options, Problem};
use serde_json::Value;

/// Where an annotation filter problem stands: the source's option.
pub const ANNOTATION_FILTER_FIELD: &str = "annotation_filter";

/// `Ok(Some(why))` when `object` is not for this source; `Ok(None)` when it is.
pub fn skip_reason(object: &Value, options: &Options) -> Result<Option<String>, Problem> {
    let annotations = Annotations::of(object);
    if let Some(filter) = options.annotation_filter.as_deref() {
        let selector = Selector::parse(filter).map_err(|e| Problem {
            field: ANNOTATION_FILTER_FIELD.to_string(),
            message: format!("{filter:?} is not a selector: {e}"),
        })?;
        if !selector.matches(|k| annotations.raw(k)) {
            return Ok(Some(format!(
                "its annotations do not match the annotation filter {filter:?}"
            )));
        }
    }
    Ok(annotations.controller_mismatch())
}
