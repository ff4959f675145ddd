//! Where and how to reach the model service.

use std::time::Duration;

/// Settings of the model client. Holds the *name* of the variable with the
/// API key, never the key: the key is read when the client is built and is
/// never stored in a record, a setting or a message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ModelSettings {
    /// Base URL of an OpenAI-compatible API, e.g. `https://api.openai.com/v1`
    /// or `http://127.0.0.1:11434/v1`; `/chat/completions` is appended.
    pub base_url: String,
    /// Model the operators put in their requests (the gateway sends each
    /// request's own `model`).
    pub model: String,
    /// Environment variable holding the API key (sent as a bearer token);
    /// `None` for a service that needs none.
    pub api_key_env: Option<String>,
    /// Longest one HTTP request may take, body included.
    pub timeout: Duration,
    /// Retries after the first attempt on 429, 5xx, timeouts, connection
    /// errors and bodies that are not a chat completion.
    pub max_retries: u32,
    /// Most requests in flight at once, across all callers of one client.
    pub concurrency: usize,
    /// Wait before the first retry; doubled on each further retry. A
    /// `Retry-After` header (seconds) overrides it.
    pub initial_backoff: Duration,
    /// Longest computed wait between retries.
    pub max_backoff: Duration,
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: Some("OPENAI_API_KEY".into()),
            timeout: Duration::from_secs(120),
            max_retries: 4,
            concurrency: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl ModelSettings {
    /// The chat completions endpoint: the base URL without trailing slashes
    /// followed by `/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The embeddings endpoint: the base URL without trailing slashes
    /// followed by `/embeddings`.
    pub fn embeddings_endpoint(&self) -> String {
        format!("{}/embeddings", self.base_url.trim_end_matches('/'))
    }

    /// Wait before retry number `retry` (1-based) when the service gave no
    /// `Retry-After`: `initial_backoff · 2^(retry-1)`, at most `max_backoff`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32 << retry.saturating_sub(1).min(20);
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_appends_the_path_once() {
        let mut s = ModelSettings {
            base_url: "http://h/v1/".into(),
            ..ModelSettings::default()
        };
        assert_eq!(s.endpoint(), "http://h/v1/chat/completions");
        s.base_url = "http://h/v1".into();
        assert_eq!(s.endpoint(), "http://h/v1/chat/completions");
        assert_eq!(s.embeddings_endpoint(), "http://h/v1/embeddings");
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let s = ModelSettings {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..ModelSettings::default()
        };
        assert_eq!(s.backoff(1), Duration::from_millis(100));
        assert_eq!(s.backoff(2), Duration::from_millis(200));
        assert_eq!(s.backoff(3), Duration::from_millis(350));
        assert_eq!(s.backoff(40), Duration::from_millis(350));
    }
}
