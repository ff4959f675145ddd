//! # strataflow-operators
//!
//! Deterministic transforms over records: pure functions of their inputs,
//! with no storage and no clock. Same inputs and configuration give the same
//! outputs, byte for byte, on any machine.
//!
//! - [`operator`]: the contract (summarizer, extractor, projector traits,
//!   operator ids and configuration hashes).
//! - [`decay`]: block decay by ready-block age and expansion targets (spec §6).
//! - [`evidence_gate`]: normalizing assessments and checking recorded use
//!   against the assessed batch (spec §12).
//! - [`import`]: the external memory import format, its five decisions
//!   (model-backed or deterministic) and the events they write (spec §14).
//! - [`layers`]: the L4 readable and L3 condensed transcripts of a block (spec §4).
//! - [`llm`]: the model-backed summarizer, extractor and projector, their
//!   prompts, tool schemas and token estimate.
//! - [`model`]: the contract of model-backed operators: canonical requests,
//!   their keys, and the gateway that answers them.
//! - [`sealer`]: cuts a thread's open tail into blocks of N turns.
//! - [`summarizer`], [`extractor`], [`projector`]: the embedded heuristic
//!   operators, which need no model and no network.
//! - [`profile`]: a named choice of one summarizer, extractor and projector,
//!   and the registry of known operators.
//! - [`validate`]: the checks every operator output passes before it is stored.
//! - [`weights`]: effective memory weight with use-only reinforcement (spec §13).

pub mod decay;
pub mod embedder;
pub mod evidence_gate;
pub mod extractor;
pub mod import;
pub mod layers;
pub mod llm;
pub mod model;
pub mod operator;
pub mod profile;
pub mod projector;
pub mod sealer;
pub mod summarizer;
pub mod text;
pub mod timeline;
pub mod validate;
pub mod weights;
