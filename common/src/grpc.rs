//! gRPC plumbing both services share: reflection (v1 and v1alpha, since grpcurl 1.8
//! only speaks v1alpha), health, and the one place where a [`FieldError`] becomes a
//! `tonic::Status`.
use crate::convert::FieldError;
use tonic_types::{ErrorDetails, StatusExt};

/// `INVALID_ARGUMENT` with a `BadRequest` detail listing every bad field.
pub fn invalid_argument(errors: &[FieldError]) -> tonic::Status {
    let mut details = ErrorDetails::new();
    for e in errors {
        details.add_bad_request_violation(e.field.clone(), e.message.clone());
    }
    let summary = errors
        .iter()
        .take(5)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let more = if errors.len() > 5 {
        format!(" (and {} more)", errors.len() - 5)
    } else {
        String::new()
    };
    tonic::Status::with_error_details(
        tonic::Code::InvalidArgument,
        format!("{summary}{more}"),
        details,
    )
}

impl From<FieldError> for tonic::Status {
    fn from(e: FieldError) -> Self {
        invalid_argument(&[e])
    }
}

/// Reflection services for dnsplane's descriptors and grpc.health.v1, in both versions.
pub fn reflection_services() -> Result<
    (
        tonic_reflection::server::v1::ServerReflectionServer<
            impl tonic_reflection::server::v1::ServerReflection,
        >,
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
    ),
    tonic_reflection::server::Error,
> {
    let v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    Ok((v1, v1alpha))
}
