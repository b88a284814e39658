//! Errors as OpenAI shapes them: `{"error": {"message", "type", "param", "code"}}` with
//! an HTTP status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// OpenAI's error type (`invalid_request_error`, `server_error`, …).
    pub kind: &'static str,
    /// A short code (`schema_refused`, `backend_unreachable`, …).
    pub code: &'static str,
    /// The request field at fault, when there is one.
    pub param: Option<String>,
    /// What happened and how to fix it.
    pub message: String,
    /// Details (a refused schema's diagnostics with their tool, pointer and keyword).
    pub details: Option<Box<Value>>,
}

impl ApiError {
    /// HTTP 400: the request is at fault, in `param`.
    pub fn invalid(
        code: &'static str,
        param: Option<&str>,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code,
            param: param.map(str::to_string),
            message: message.into(),
            details: None,
        }
    }

    /// An error with any status.
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            kind,
            code,
            param: None,
            message: message.into(),
            details: None,
        }
    }

    /// The same error with details.
    pub fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(Box::new(details));
        self
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut error = json!({
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            error["details"] = (**details).clone();
        }
        json!({ "error": error })
    }
}

impl ApiError {
    /// Seconds a client should wait before trying again, for a 503: a full queue or a
    /// cap frees up within a second or so; a loading model or a shutdown takes longer.
    pub fn retry_after(&self) -> Option<u32> {
        (self.status == StatusCode::SERVICE_UNAVAILABLE).then_some(match self.code {
            "loading" | "shutting_down" => 5,
            _ => 1,
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after();
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} ({}): {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}
