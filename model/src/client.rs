//! The OpenAI-compatible chat client: `POST {base_url}/chat/completions`
//! with the request's messages and one forced function tool, retried on
//! 429, 5xx, timeouts, dropped connections and bodies that are not a chat
//! completion, with at most `concurrency` requests in flight. A service that
//! cannot be reached at all (connection refused, DNS failure) is tried once
//! more, then is [`ModelError::Unreachable`], which stops the job.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use serde_json::{Value, json};
use strataflow_log::record::TokenUsage;
use strataflow_operators::model::{ModelError, ModelRequest};
use tokio::sync::Semaphore;

use super::response::{check_completion, clip, usage_of};
use super::settings::ModelSettings;

/// Longest `Retry-After` honoured; a longer one is cut to this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// Characters of an error body quoted in an error.
const CLIP: usize = 300;

/// A chat completion as the service sent it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Completion {
    /// The response body, verbatim (what a `ModelCall` records).
    pub body: String,
    /// Token usage it reports.
    pub usage: TokenUsage,
    /// HTTP requests it took (1 when the first attempt answered).
    pub attempts: u32,
}

/// The HTTP client. Cheap to share (`Arc`); its requests must run on a
/// tokio runtime with I/O and time enabled.
pub struct ModelClient {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    embeddings_endpoint: reqwest::Url,
    api_key: Option<String>,
    settings: ModelSettings,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("endpoint", &self.endpoint.as_str())
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Attempts made on a connection that could not be established (refused,
/// no such host) before giving up: such a service does not come back within
/// a backoff, and every block would wait through all the retries.
const UNREACHABLE_ATTEMPTS: u32 = 2;

/// Why one attempt failed.
struct Failure {
    /// Whether another attempt may succeed.
    retry: bool,
    /// The service's `Retry-After`, when it sent one.
    retry_after: Option<Duration>,
    /// No connection could be made (refused, DNS): retried at most once.
    unreachable: bool,
    /// The HTTP status, when the service answered.
    status: Option<u16>,
    message: String,
}

impl Failure {
    fn transient(message: String) -> Self {
        Self {
            retry: true,
            retry_after: None,
            unreachable: false,
            status: None,
            message,
        }
    }

    /// A failed send: unreachable when no connection was made (a connect
    /// error that is not a timeout), else transient.
    fn of_send(error: &reqwest::Error) -> Self {
        Self {
            unreachable: error.is_connect() && !error.is_timeout(),
            ..Self::transient(describe(error))
        }
    }
}

impl ModelClient {
    /// Builds the client: checks the endpoint URL and reads the API key from
    /// `settings.api_key_env` (a [`ModelError::Config`] naming the variable
    /// when it is unset or empty; the value is never shown).
    pub fn new(settings: &ModelSettings) -> Result<Self, ModelError> {
        let endpoint =
            reqwest::Url::parse(&settings.endpoint()).map_err(|e| ModelError::Config {
                setting: ModelError::SETTING_BASE_URL,
                problem: format!("base URL `{}` is not a valid URL: {e}", settings.base_url),
            })?;
        // The same base URL, so valid when `endpoint` is.
        let embeddings_endpoint =
            reqwest::Url::parse(&settings.embeddings_endpoint()).map_err(|e| {
                ModelError::Config {
                    setting: ModelError::SETTING_BASE_URL,
                    problem: format!("base URL `{}` is not a valid URL: {e}", settings.base_url),
                }
            })?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(ModelError::Config {
                setting: ModelError::SETTING_BASE_URL,
                problem: format!(
                    "base URL `{}` must start with http:// or https://",
                    settings.base_url
                ),
            });
        }
        let api_key = match &settings.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
                Ok(_) => {
                    return Err(ModelError::Config {
                        setting: ModelError::SETTING_API_KEY_ENV,
                        problem: format!("the API key variable `{var}` is empty"),
                    });
                }
                Err(_) => {
                    return Err(ModelError::Config {
                        setting: ModelError::SETTING_API_KEY_ENV,
                        problem: format!("the API key variable `{var}` is not set (or not UTF-8)"),
                    });
                }
            },
        };
        if settings.concurrency == 0 {
            return Err(ModelError::Config {
                setting: ModelError::SETTING_CONCURRENCY,
                problem: "model concurrency must be at least 1".into(),
            });
        }
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| ModelError::Config {
                setting: ModelError::SETTING_RUNTIME,
                problem: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Self {
            http,
            endpoint,
            embeddings_endpoint,
            api_key,
            settings: settings.clone(),
            permits: Arc::new(Semaphore::new(settings.concurrency)),
        })
    }

    /// The settings it was built from.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// The JSON body sent for a request: model, messages, the tool as a
    /// function, `tool_choice` forcing it, temperature and max_tokens.
    pub fn request_body(request: &ModelRequest) -> Value {
        json!({
            "model": request.model,
            "messages": request.messages,
            "tools": [{"type": "function", "function": request.tool}],
            "tool_choice": {"type": "function", "function": {"name": request.tool.name}},
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        })
    }

    /// Sends a request, retrying transient failures up to `max_retries`
    /// times (waiting `Retry-After` seconds when the service says so, else
    /// the exponential backoff). Another 4xx, or the last transient
    /// failure, is [`ModelError::Unavailable`] naming the status and a
    /// clipped body. The API key never appears in an error.
    pub async fn complete(&self, request: &ModelRequest) -> Result<Completion, ModelError> {
        let body =
            serde_json::to_vec(&Self::request_body(request)).map_err(|e| ModelError::Config {
                setting: ModelError::SETTING_RUNTIME,
                problem: format!("cannot encode the request: {e}"),
            })?;
        let (text, attempts) = self
            .post_retrying(&self.endpoint, &body, |text| {
                check_completion(text).map(|_| ())
            })
            .await?;
        // `post_retrying` returns only bodies that passed this check.
        let usage = check_completion(&text)
            .map(|v| usage_of(&v))
            .unwrap_or_default();
        Ok(Completion {
            body: text,
            usage,
            attempts,
        })
    }

    /// Posts `body` (JSON) to `{base_url}/embeddings` with the same retries,
    /// concurrency limit and errors as [`ModelClient::complete`]; a 200 whose
    /// body is not an embeddings response (a JSON object with a `data`
    /// array) is retried like a transient failure. The body is returned
    /// verbatim with its usage and the attempts it took.
    pub async fn embeddings(&self, body: &[u8]) -> Result<Completion, ModelError> {
        let (text, attempts) = self
            .post_retrying(&self.embeddings_endpoint, body, check_embeddings)
            .await?;
        let usage = serde_json::from_str::<Value>(&text)
            .map(|v| usage_of(&v))
            .unwrap_or_default();
        Ok(Completion {
            body: text,
            usage,
            attempts,
        })
    }

    /// The retry loop shared by every endpoint: at most `concurrency`
    /// attempts in flight, `check` deciding whether a 200's body is usable.
    async fn post_retrying(
        &self,
        url: &reqwest::Url,
        body: &[u8],
        check: fn(&str) -> Result<(), String>,
    ) -> Result<(String, u32), ModelError> {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let outcome = {
                let _permit = self
                    .permits
                    .acquire()
                    .await
                    .map_err(|_| ModelError::local("the model client was shut down"))?;
                self.attempt(url, body, check).await
            };
            match outcome {
                Ok(text) => return Ok((text, attempts)),
                Err(failure)
                    if failure.unreachable
                        && attempts >= UNREACHABLE_ATTEMPTS.min(self.settings.max_retries + 1) =>
                {
                    return Err(ModelError::Unreachable {
                        endpoint: self.endpoint_text(),
                        detail: self.redact(failure.message),
                    });
                }
                Err(failure) if failure.retry && attempts <= self.settings.max_retries => {
                    let wait = failure
                        .retry_after
                        .map(|w| w.min(MAX_RETRY_AFTER))
                        .unwrap_or_else(|| self.settings.backoff(attempts));
                    tracing::warn!(
                        attempt = attempts,
                        wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        "model request failed, retrying: {}",
                        failure.message
                    );
                    tokio::time::sleep(wait).await;
                }
                Err(failure) => {
                    let message = if failure.retry {
                        format!("{} (gave up after {attempts} attempts)", failure.message)
                    } else {
                        failure.message
                    };
                    return Err(ModelError::Unavailable {
                        status: failure.status,
                        retryable: failure.retry,
                        message: self.redact(message),
                    });
                }
            }
        }
    }

    /// One HTTP request: a body that passed `check`, or why not.
    async fn attempt(
        &self,
        url: &reqwest::Url,
        body: &[u8],
        check: fn(&str) -> Result<(), String>,
    ) -> Result<String, Failure> {
        let mut builder = self
            .http
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|e| Failure::of_send(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = response
            .text()
            .await
            .map_err(|e| Failure::transient(format!("reading the response: {}", describe(&e))))?;
        if status.is_success() {
            return check(&text).map(|()| text).map_err(Failure::transient);
        }
        let message = format!("HTTP {status}: {}", clip(text.trim(), CLIP));
        let retry = status.as_u16() == 429 || status.is_server_error();
        Err(Failure {
            retry,
            retry_after,
            unreachable: false,
            status: Some(status.as_u16()),
            message,
        })
    }

    /// The endpoint as shown in errors: without user name or password.
    fn endpoint_text(&self) -> String {
        let mut url = self.endpoint.clone();
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.to_string()
    }

    /// Replaces the API key in a message (a service may echo it).
    fn redact(&self, message: String) -> String {
        match &self.api_key {
            Some(key) if message.contains(key.as_str()) => {
                message.replace(key.as_str(), "[redacted]")
            }
            _ => message,
        }
    }
}

/// Whether a 200's body is an embeddings response: a JSON object with a
/// `data` array (its vectors are checked by the embedder).
fn check_embeddings(body: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| format!("the embeddings response is not JSON: {e}"))?;
    if value.get("data").is_some_and(Value::is_array) {
        Ok(())
    } else {
        Err(format!(
            "the embeddings response has no `data` array: {}",
            clip(body.trim(), CLIP)
        ))
    }
}

/// A transport error with its causes, without the URL.
fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let mut text = kind.to_owned();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
