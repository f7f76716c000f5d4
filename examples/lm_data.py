"""The character-level corpus of the language-model examples and the main job's
configurations, without any array library: the same data and models feed train_lm.py and the
PyTorch twin in benchmarks/bench_lm.py."""
import os

import numpy as np

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                            "tinyshakespeare.txt")

# Model, schedule and precision per train_lm --config. "cpu" is the CI-tested default; "gpu" is
# nanoGPT-sized for a character model (6 x 384, context 256, batch 64) and computes in bf16 for
# the tensor cores. Without dropout it overfits early: on the H200 a 2000-step run had its best
# validation loss at step 750 (1.528; 1.606 at 1000, 2.610 at 2000; "cpu" ends near 1.79), so
# the schedule stops there (about 30 s at 454k tokens/s).
PRESETS = {
    "cpu": dict(dims=128, layers=4, heads=4, context=128, batch=32, steps=600, lr=3e-3,
                warmup=50, eval_every=200, compute_dtype="float32", time_limit=None),
    "gpu": dict(dims=384, layers=6, heads=6, context=256, batch=64, steps=750, lr=1e-3,
                warmup=100, eval_every=250, compute_dtype="bfloat16", time_limit=5.0),
}


def load_corpus(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = np.array([index[c] for c in text], dtype=np.int32)
    split = int(0.9 * len(data))
    return chars, data[:split], data[split:]


def sample_windows(data, batch, context, rng):
    """`batch` random windows of the corpus (NumPy) and the same windows one character on."""
    starts = rng.integers(0, len(data) - context - 1, size=batch)
    x = np.stack([data[s : s + context] for s in starts])
    y = np.stack([data[s + 1 : s + context + 1] for s in starts])
    return x, y


def unigram_loss(train, val, vocab):
    counts = np.bincount(train, minlength=vocab).astype(np.float64) + 1
    p = counts / counts.sum()
    return float(-np.log(p[val]).mean())
