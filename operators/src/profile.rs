//! Profiles and the operator registry.
//!
//! A profile names one summarizer, one extractor and one projector by id
//! (`name@version`). The registry maps ids to implementations; a profile
//! naming an unknown operator is refused with the list of known ones.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::extractor::HeuristicExtractor;
use crate::operator::{Extractor, OperatorId, Projector, Summarizer};
use crate::projector::heuristic::HeuristicProjector;
use crate::summarizer::HeuristicSummarizer;

/// Name of the profile every data directory starts with.
pub const DEFAULT_PROFILE: &str = "default";

/// Summarizer of the profile a new data directory records as its default
/// ([`Profile::default_profile`]).
pub const DEFAULT_SUMMARIZER: &str = "heuristic-summarizer@2";
/// Extractor of the profile a new data directory records as its default.
pub const DEFAULT_EXTRACTOR: &str = "heuristic-extractor@5";
/// Projector of the profile a new data directory records as its default.
pub const DEFAULT_PROJECTOR: &str = "heuristic-projector@4";

/// Summarizer of the legacy default profile ([`Profile::legacy_default`]).
pub const LEGACY_SUMMARIZER: &str = "heuristic-summarizer@1";
/// Extractor of the legacy default profile.
pub const LEGACY_EXTRACTOR: &str = "heuristic-extractor@1";
/// Projector of the legacy default profile.
pub const LEGACY_PROJECTOR: &str = "heuristic-projector@1";

/// A named choice of operators.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Profile {
    /// Profile name.
    pub name: String,
    /// Summarizer id.
    pub summarizer: String,
    /// Extractor id.
    pub extractor: String,
    /// Projector id.
    pub projector: String,
    /// The model service of its model-backed operators (`llm-*`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelEndpoint>,
    /// The embedder spec of its derived embeddings (`word-hash@1:64`,
    /// `local-embeddings@1:PATH`, `openai-embeddings@1:MODEL:DIMS`), if any:
    /// with one, derivation also embeds every message, block summary and
    /// event, and search gets a dense channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
}

/// Where a profile's model-backed operators send their requests. Holds the
/// *name* of the environment variable with the API key, never the key.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct ModelEndpoint {
    /// Model name, e.g. `gpt-4o-mini` (part of each operator's config hash:
    /// another model is another derivation).
    pub model: String,
    /// Base URL of the OpenAI-compatible API, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Environment variable holding the API key (none: no key sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Requests in flight at most.
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    /// Seconds before a request times out (and is retried).
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u32,
}

fn default_concurrency() -> u32 {
    4
}

fn default_timeout_secs() -> u32 {
    120
}

/// Whether an operator id names a model-backed operator (`llm-…`).
pub fn is_model_backed(id: &str) -> bool {
    id.starts_with("llm-")
}

impl Profile {
    /// Whether any of its operators calls a model.
    pub fn uses_model(&self) -> bool {
        [&self.summarizer, &self.extractor, &self.projector]
            .iter()
            .any(|id| is_model_backed(id))
    }

    /// The profile `default` a new data directory records when it is
    /// created (the first open of an empty log): the newest embedded
    /// heuristics ([`DEFAULT_SUMMARIZER`], [`DEFAULT_EXTRACTOR`],
    /// [`DEFAULT_PROJECTOR`]).
    pub fn default_profile() -> Self {
        Self::heuristics(DEFAULT_SUMMARIZER, DEFAULT_EXTRACTOR, DEFAULT_PROJECTOR)
    }

    /// The profile `default` of a data directory written by a build that
    /// did not record it (records in the log, no stored `default`
    /// profile): the first embedded heuristics ([`LEGACY_SUMMARIZER`],
    /// [`LEGACY_EXTRACTOR`], [`LEGACY_PROJECTOR`]), which those builds
    /// derived with. Never changes: it keeps such a directory's outputs.
    pub fn legacy_default() -> Self {
        Self::heuristics(LEGACY_SUMMARIZER, LEGACY_EXTRACTOR, LEGACY_PROJECTOR)
    }

    fn heuristics(summarizer: &str, extractor: &str, projector: &str) -> Self {
        Self {
            name: DEFAULT_PROFILE.to_owned(),
            summarizer: summarizer.to_owned(),
            extractor: extractor.to_owned(),
            projector: projector.to_owned(),
            model: None,
            embedder: None,
        }
    }
}

/// Error resolving a profile.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("profile `{profile}`: unknown {role} `{id}` (known: {known})")]
pub struct ProfileError {
    /// Profile name.
    pub profile: String,
    /// summarizer / extractor / projector.
    pub role: &'static str,
    /// The unknown id.
    pub id: String,
    /// Known ids for that role.
    pub known: String,
}

/// The operators a profile resolves to.
#[derive(Clone)]
pub struct Operators {
    /// Summarizer.
    pub summarizer: Arc<dyn Summarizer>,
    /// Extractor.
    pub extractor: Arc<dyn Extractor>,
    /// Projector.
    pub projector: Arc<dyn Projector>,
}

impl std::fmt::Debug for Operators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operators")
            .field("summarizer", &self.summarizer.id().to_string())
            .field("extractor", &self.extractor.id().to_string())
            .field("projector", &self.projector.id().to_string())
            .finish()
    }
}

/// Known operators by id.
#[derive(Clone, Default)]
pub struct Registry {
    summarizers: BTreeMap<OperatorId, Arc<dyn Summarizer>>,
    extractors: BTreeMap<OperatorId, Arc<dyn Extractor>>,
    projectors: BTreeMap<OperatorId, Arc<dyn Projector>>,
}

impl Registry {
    /// The embedded operators.
    pub fn builtin() -> Self {
        let mut r = Self::default();
        r.add_summarizer(Arc::new(HeuristicSummarizer));
        r.add_summarizer(Arc::new(
            crate::summarizer::heuristic::HeuristicSummarizerV2,
        ));
        r.add_extractor(Arc::new(HeuristicExtractor));
        r.add_extractor(Arc::new(crate::extractor::heuristic::HeuristicExtractorV2));
        r.add_extractor(Arc::new(crate::extractor::heuristic::HeuristicExtractorV3));
        r.add_extractor(Arc::new(crate::extractor::heuristic::HeuristicExtractorV4));
        r.add_extractor(Arc::new(crate::extractor::heuristic::HeuristicExtractorV5));
        r.add_projector(Arc::new(HeuristicProjector));
        r.add_projector(Arc::new(crate::projector::heuristic::HeuristicProjectorV2));
        r.add_projector(Arc::new(crate::projector::heuristic::HeuristicProjectorV3));
        r.add_projector(Arc::new(crate::projector::heuristic::HeuristicProjectorV4));
        r
    }

    /// Registers a summarizer under its id.
    pub fn add_summarizer(&mut self, op: Arc<dyn Summarizer>) {
        self.summarizers.insert(op.id(), op);
    }

    /// Registers an extractor under its id.
    pub fn add_extractor(&mut self, op: Arc<dyn Extractor>) {
        self.extractors.insert(op.id(), op);
    }

    /// Registers a projector under its id.
    pub fn add_projector(&mut self, op: Arc<dyn Projector>) {
        self.projectors.insert(op.id(), op);
    }

    /// The operators of a profile.
    pub fn resolve(&self, profile: &Profile) -> Result<Operators, ProfileError> {
        Ok(Operators {
            summarizer: find(
                &self.summarizers,
                profile,
                "summarizer",
                &profile.summarizer,
            )?,
            extractor: find(&self.extractors, profile, "extractor", &profile.extractor)?,
            projector: find(&self.projectors, profile, "projector", &profile.projector)?,
        })
    }
}

fn find<T: ?Sized>(
    map: &BTreeMap<OperatorId, Arc<T>>,
    profile: &Profile,
    role: &'static str,
    id: &str,
) -> Result<Arc<T>, ProfileError> {
    OperatorId::parse(id)
        .and_then(|op| map.get(&op).cloned())
        .ok_or_else(|| ProfileError {
            profile: profile.name.clone(),
            role,
            id: id.to_owned(),
            known: map
                .keys()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_default_and_legacy_profiles_resolve_to_builtin_operators() {
        let registry = Registry::builtin();
        for profile in [Profile::default_profile(), Profile::legacy_default()] {
            let ops = registry.resolve(&profile).unwrap();
            assert_eq!(ops.summarizer.id().to_string(), profile.summarizer);
            assert_eq!(ops.extractor.id().to_string(), profile.extractor);
            assert_eq!(ops.projector.id().to_string(), profile.projector);
            assert_eq!(profile.name, DEFAULT_PROFILE);
            assert!(!profile.uses_model());
        }
    }

    #[test]
    fn the_legacy_profile_is_the_first_heuristics() {
        let legacy = Profile::legacy_default();
        assert_eq!(
            legacy.summarizer,
            crate::summarizer::heuristic::id().to_string()
        );
        assert_eq!(
            legacy.extractor,
            crate::extractor::heuristic::id().to_string()
        );
        assert_eq!(legacy.projector, HeuristicProjector.id().to_string());
        assert_eq!(
            (
                legacy.summarizer.as_str(),
                legacy.extractor.as_str(),
                legacy.projector.as_str()
            ),
            (
                "heuristic-summarizer@1",
                "heuristic-extractor@1",
                "heuristic-projector@1"
            )
        );
    }
}
