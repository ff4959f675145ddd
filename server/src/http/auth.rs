//! Who is calling: the API key of a request, checked against the key file.
//!
//! A request carries its key as `Authorization: Bearer sfk_…`. Without a key
//! file the server is open (it then listens on loopback only) and every
//! caller is admin. The key file is read again when it changes on disk, so
//! `strataflow keys revoke` takes effect on the next request.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::keys::{KeyError, KeyFile, Scope};

/// The caller of a request, put in its extensions by [`authenticate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// What the caller may do.
    pub scope: Scope,
    /// The id of its key (`None` when the server has no key file).
    pub key_id: Option<String>,
}

impl Caller {
    /// The tenant a request acts on: the one it names, which the key must
    /// allow (403 otherwise), or the key's own.
    pub fn tenant(&self, requested: Option<&str>) -> Result<String, ApiError> {
        match requested {
            None => Ok(self.scope.default_tenant().to_owned()),
            Some(t) if self.scope.allows(t) => Ok(t.to_owned()),
            Some(t) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "this key is bound to {}; it may not act on tenant `{}`",
                    self.scope,
                    t.chars().take(72).collect::<String>()
                ),
            )
            .at_field("tenant")),
        }
    }
}

/// The key file as last read, and when it was written.
#[derive(Debug)]
struct Loaded {
    file: KeyFile,
    modified: Option<SystemTime>,
}

/// The server's keys: none (open, loopback only) or a key file.
#[derive(Debug)]
pub struct Keys {
    source: Option<(PathBuf, RwLock<Loaded>)>,
}

impl Keys {
    /// No key file: every caller is admin.
    pub fn open() -> Self {
        Self { source: None }
    }

    /// The key file at `path`, which must exist and be valid.
    pub fn from_file(path: PathBuf) -> Result<Self, KeyError> {
        let file = KeyFile::load(&path)?;
        let modified = modified(&path);
        Ok(Self {
            source: Some((path, RwLock::new(Loaded { file, modified }))),
        })
    }

    /// Whether requests need a key.
    pub fn required(&self) -> bool {
        self.source.is_some()
    }

    /// The caller of a request whose `Authorization` header is `header`.
    pub fn caller(&self, header: Option<&str>) -> Result<Caller, ApiError> {
        let Some((path, loaded)) = &self.source else {
            return Ok(Caller {
                scope: Scope::Admin,
                key_id: None,
            });
        };
        let unauthorized = |message: &str| {
            ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message.to_owned())
        };
        let Some(value) = header else {
            return Err(unauthorized(
                "no API key: send `Authorization: Bearer <key>` (make one with `strataflow keys add`)",
            ));
        };
        let Some(key) = value.strip_prefix("Bearer ").map(str::trim) else {
            return Err(unauthorized(
                "the Authorization header is not `Bearer <key>`",
            ));
        };
        self.reload_if_changed(path, loaded);
        let guard = match loaded.read() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        match guard.file.authenticate(key) {
            Some(entry) => Ok(Caller {
                scope: entry.scope.clone(),
                key_id: Some(entry.id.clone()),
            }),
            None => Err(unauthorized(
                "the API key is not valid (unknown or revoked)",
            )),
        }
    }

    /// Reads the key file again when its modification time changed. A file
    /// that became unreadable or invalid keeps the keys last read (and says
    /// so), so a half-written edit never opens the server.
    fn reload_if_changed(&self, path: &PathBuf, loaded: &RwLock<Loaded>) {
        let now = modified(path);
        let stale = match loaded.read() {
            Ok(g) => g.modified != now,
            Err(poisoned) => poisoned.into_inner().modified != now,
        };
        if !stale {
            return;
        }
        let mut guard = match loaded.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        match KeyFile::load(path) {
            Ok(file) => {
                tracing::info!(path = %path.display(), keys = file.entries().len(), "key file read again");
                *guard = Loaded {
                    file,
                    modified: now,
                };
            }
            Err(e) => {
                tracing::error!("{e}; keeping the keys read before");
                guard.modified = now;
            }
        }
    }
}

fn modified(path: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Middleware: refuses a request without a valid key (401) and puts its
/// [`Caller`] in the request's extensions.
pub async fn authenticate(
    State(keys): State<Arc<Keys>>,
    mut request: Request,
    next: Next,
) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match keys.caller(header) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_bind_callers_to_their_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let mut file = KeyFile::load_or_new(&path).unwrap();
        let a = file.add(Scope::Tenant("a".into()), None).unwrap();
        let admin = file.add(Scope::Admin, None).unwrap();
        file.save().unwrap();
        let keys = Keys::from_file(path.clone()).unwrap();

        let caller = keys.caller(Some(&format!("Bearer {}", a.key))).unwrap();
        assert_eq!(caller.tenant(None).unwrap(), "a");
        assert_eq!(caller.tenant(Some("a")).unwrap(), "a");
        let e = caller.tenant(Some("b")).unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);
        let e = caller.tenant(Some("")).unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);

        let root = keys.caller(Some(&format!("Bearer {}", admin.key))).unwrap();
        assert_eq!(root.tenant(Some("b")).unwrap(), "b");
        assert_eq!(root.tenant(None).unwrap(), "");

        for bad in [
            None,
            Some("Basic x"),
            Some("Bearer sfk_nope"),
            Some("Bearer "),
        ] {
            assert_eq!(
                keys.caller(bad).unwrap_err().status,
                StatusCode::UNAUTHORIZED,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_revoked_key_stops_working_without_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let mut file = KeyFile::load_or_new(&path).unwrap();
        let a = file.add(Scope::Tenant("a".into()), None).unwrap();
        file.save().unwrap();
        let keys = Keys::from_file(path.clone()).unwrap();
        let bearer = format!("Bearer {}", a.key);
        assert!(keys.caller(Some(&bearer)).is_ok());
        // A later mtime, as a rewrite a moment later would give.
        std::thread::sleep(std::time::Duration::from_millis(20));
        file.revoke(&a.entry.id).unwrap();
        file.save().unwrap();
        let later = SystemTime::now() + std::time::Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(
            keys.caller(Some(&bearer)).unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn without_a_key_file_everyone_is_admin() {
        let keys = Keys::open();
        assert!(!keys.required());
        assert_eq!(keys.caller(None).unwrap().scope, Scope::Admin);
    }
}
