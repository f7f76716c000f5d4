"""The character-level corpus of the language-model examples, without any array library: the
same data feeds train_lm.py and the PyTorch twin in benchmarks/bench_lm.py."""
import os

import numpy as np

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                            "tinyshakespeare.txt")


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
