//! Route 53 error answers: `<ErrorResponse><Error><Type/><Code/><Message/></Error>
//! <RequestId/></ErrorResponse>` with the status of the code, as the 2013-04-01 API
//! documents them.
use std::time::Duration;

/// One error answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
    /// `Sender` (the caller's fault) or `Receiver` (the service's).
    pub sender: bool,
    pub retry_after: Option<Duration>,
}

impl ApiError {
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.to_string(),
            message: message.into(),
            sender: status < 500,
            retry_after: None,
        }
    }

    /// 400 `InvalidInput`.
    pub fn invalid_input(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "InvalidInput", message)
    }

    /// 400 `InvalidInput` for a request body that breaks the API's XML schema.
    pub fn invalid_xml(detail: impl AsRef<str>) -> ApiError {
        ApiError::invalid_input(format!("Invalid XML ; {}", detail.as_ref()))
    }

    /// 400 `InvalidChangeBatch` joining every message: `[m1, m2]`.
    pub fn invalid_change_batch(messages: &[String]) -> ApiError {
        ApiError::new(
            400,
            "InvalidChangeBatch",
            format!("[{}]", messages.join(", ")),
        )
    }

    /// 404 `NoSuchHostedZone`.
    pub fn no_such_zone(id: &str) -> ApiError {
        ApiError::new(
            404,
            "NoSuchHostedZone",
            format!("No hosted zone found with ID: {id}"),
        )
    }

    /// 400 `Throttling` "Rate exceeded".
    pub fn throttling() -> ApiError {
        ApiError::new(400, "Throttling", "Rate exceeded")
    }

    /// 400 `PriorRequestNotComplete`.
    pub fn prior_request_not_complete() -> ApiError {
        ApiError::new(
            400,
            "PriorRequestNotComplete",
            "The request was rejected because Route 53 was still processing a prior request.",
        )
    }

    /// A 5xx in AWS's usual words.
    pub fn server(status: u16) -> ApiError {
        let (code, message) = match status {
            503 => (
                "ServiceUnavailable",
                "Service is unavailable. Please try again later.",
            ),
            _ => (
                "InternalFailure",
                "The request processing has failed because of an unknown error, exception or failure.",
            ),
        };
        ApiError::new(status, code, message)
    }

    /// The XML body.
    pub fn body(&self, request_id: &str) -> String {
        let mut x = super::wire::Xml::document("ErrorResponse");
        x.open("Error");
        x.text("Type", if self.sender { "Sender" } else { "Receiver" });
        x.text("Code", &self.code);
        x.text("Message", &self.message);
        x.close("Error");
        x.text("RequestId", request_id);
        x.finish("ErrorResponse")
    }
}
