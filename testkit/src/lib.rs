//! # strataflow-testkit
//!
//! Tooling for benchmarks, trials and tests, kept out of the library floors:
//! the deterministic synthetic conversation archive ([`synthetic`]) behind
//! `strataflow gen` and the benches, and the same messages as a ChatGPT
//! export ([`chatgpt`]). Depends on nothing of the workspace.

pub mod chatgpt;
pub mod synthetic;
