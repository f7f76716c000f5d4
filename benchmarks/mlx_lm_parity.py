"""mlx-lm (Apple's language-model package) on this build against Apple MLX for Linux CPU, with
the same weights: per architecture, the logits of a prompt and of one decoding step through
the KV cache, the same after 4- and 8-bit quantization (nn.quantize), and the losses of five
LoRA fine-tuning steps (mlx_lm.tuner's LoRA layers, Adam); and mlx-lm's generation paths
(batch, speculative, from a saved prompt cache). Prints the largest difference to Apple's
results, and which generations are identical; the weights are made by this build. Outside CI: it needs a venv with Apple's
MLX and mlx-lm, whose pure-Python mlx_lm (and its dependencies) our worker imports after our
own mlx:

    python3 -m venv /work/mlx-lm-venv && /work/mlx-lm-venv/bin/pip install "mlx[cpu]" mlx-lm
    PYTHONPATH=python .venv/bin/python benchmarks/mlx_lm_parity.py --mlx-python \\
        /work/mlx-lm-venv/bin/python
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

COMMON = dict(hidden_size=64, num_hidden_layers=2, intermediate_size=128, num_attention_heads=4,
              num_key_value_heads=2, rms_norm_eps=1e-5, vocab_size=256, rope_theta=10000.0,
              max_position_embeddings=256)
CONFIGS = {
    "llama": dict(COMMON, tie_word_embeddings=False),
    "qwen3": dict(COMMON, head_dim=16, tie_word_embeddings=True),
    "mixtral": dict(COMMON, num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(COMMON, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                      shared_expert_intermediate_size=64, decoder_sparse_step=1,
                      mlp_only_layers=[]),
    "gemma2": dict(COMMON, head_dim=16, query_pre_attn_scalar=16.0),
    "phi3": dict(COMMON),
    "gpt2": dict(n_ctx=256, n_embd=64, n_head=4, n_layer=2, n_positions=256,
                 layer_norm_epsilon=1e-5, vocab_size=256),
    "gemma3_text": dict(COMMON, num_hidden_layers=6, head_dim=16, sliding_window=8,
                        sliding_window_pattern=3, query_pre_attn_scalar=16),
    # State-space, linear-attention and convolutional mixers.
    "mamba2": dict(num_heads=8, head_dim=16, vocab_size=256, hidden_size=64,
                   intermediate_size=128, state_size=16, num_hidden_layers=2,
                   layer_norm_epsilon=1e-5, conv_kernel=4, n_groups=1, use_bias=False,
                   use_conv_bias=True, tie_word_embeddings=True,
                   time_step_limit=(0.0, float("inf")), time_step_rank="auto"),
    "qwen3_next": dict(COMMON, num_hidden_layers=4, linear_num_value_heads=4,
                       linear_num_key_heads=2, linear_key_head_dim=16, linear_value_head_dim=16,
                       linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
                       decoder_sparse_step=1, shared_expert_intermediate_size=64,
                       mlp_only_layers=[], moe_intermediate_size=32, partial_rotary_factor=0.25,
                       head_dim=16),
    "rwkv7": dict(vocab_size=256, hidden_size=64, intermediate_size=128, norm_eps=1e-5,
                  head_dim=16, num_hidden_layers=2, a_low_rank_dim=8, v_low_rank_dim=8,
                  gate_low_rank_dim=8, decay_low_rank_dim=8),
    "lfm2": dict(COMMON, num_hidden_layers=4, norm_eps=1e-5, conv_bias=False, conv_L_cache=3,
                 block_dim=64, block_multiple_of=16, block_ffn_dim_multiplier=1.0,
                 block_auto_adjust_ff_dim=False,
                 layer_types=["conv", "full_attention", "conv", "full_attention"]),
    "recurrent_gemma": dict(COMMON, num_hidden_layers=3, num_key_value_heads=1,
                            attention_bias=False, conv1d_width=4, logits_soft_cap=30.0,
                            attention_window_size=16,
                            block_types=["recurrent", "recurrent", "attention"]),
}
CHECKS = ["logits", "logits q4", "logits q8", "LoRA losses"]
# mlx-lm's RecurrentGemma Model never calls Module.__init__, so freeze() (and LoRA) fails in
# Apple MLX as here.
NO_LORA = {"recurrent_gemma"}


def make_model(name):
    import importlib

    module = importlib.import_module(f"mlx_lm.models.{name}")
    return module.Model(module.ModelArgs.from_dict(dict(CONFIGS[name], model_type=name)))


def with_lora(model):
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model.freeze()
    linear_to_lora_layers(model, 2, {"rank": 4, "scale": 10.0, "dropout": 0.0})
    return model


def save_weights(name, folder):
    """Random weights for `name`: the model's, and with LoRA layers (their B matrices nonzero)."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    mx.random.seed(0)
    model = make_model(name)
    mx.save_safetensors(os.path.join(folder, f"{name}.safetensors"),
                        dict(tree_flatten(model.parameters())))
    if name in NO_LORA:
        return
    params = dict(tree_flatten(with_lora(model).parameters()))
    params = {k: v + 0.01 * mx.random.normal(v.shape) if "lora_b" in k else v
              for k, v in params.items()}
    mx.save_safetensors(os.path.join(folder, f"{name}_lora.safetensors"), params)


def results(name, folder):
    """{check: values} for `name` with the saved weights, under whichever mlx is imported."""
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx_lm.models.cache import make_prompt_cache

    def logits(bits=None):
        model = make_model(name)
        model.load_weights(os.path.join(folder, f"{name}.safetensors"))
        if bits:
            # Layers whose rows do not split into groups of 32 stay as they are (as mlx-lm's
            # convert does).
            nn.quantize(model, group_size=32, bits=bits, class_predicate=lambda _, m: hasattr(
                m, "to_quantized") and m.weight.shape[-1] % 32 == 0)
        cache = make_prompt_cache(model)
        prompt = model(mx.array([[1, 5, 9, 14, 3, 7, 2, 11]]), cache=cache)
        step = model(mx.array([[4]]), cache=cache)
        return np.concatenate([np.array(prompt[0]), np.array(step[0])]).tolist()

    def lora_losses():
        model = with_lora(make_model(name))
        model.load_weights(os.path.join(folder, f"{name}_lora.safetensors"))
        tokens = np.arange(64).reshape(2, 32)
        x, y = mx.array(tokens % 250), mx.array((tokens * 7 + 3) % 250)
        step = nn.value_and_grad(model, lambda m: nn.losses.cross_entropy(m(x), y).mean())
        opt, losses = optim.Adam(learning_rate=1e-3), []
        for _ in range(5):
            loss, grads = step(model)
            opt.update(model, grads)
            mx.eval(model.parameters(), opt.state)
            losses.append(loss.item())
        return losses

    return {"logits": logits(), "logits q4": logits(4), "logits q8": logits(8),
            "LoRA losses": None if name in NO_LORA else lora_losses()}


def generation(folder):
    """mlx-lm's generation paths on Llama with the saved weights and a byte-level BPE tokenizer
    trained here on the bundled corpus: batch_generate's token ids, generate's text,
    speculative decoding with a one-layer draft, and generation from a prompt cache saved and
    loaded again (with its metadata)."""
    import mlx.core as mx
    from mlx_lm.generate import batch_generate, generate, stream_generate
    from mlx_lm.models import llama
    from mlx_lm.models.cache import load_prompt_cache, make_prompt_cache, save_prompt_cache
    from mlx_lm.tokenizer_utils import TokenizerWrapper
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                          "tinyshakespeare.txt")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    with open(corpus) as f:
        bpe.train_from_iterator([f.read()[:100000]], trainers.BpeTrainer(
            vocab_size=CONFIGS["llama"]["vocab_size"], special_tokens=["<eos>"]))
    hf = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>")
    tokenizer = TokenizerWrapper(hf)
    weights = os.path.join(folder, "llama.safetensors")
    model, draft = make_model("llama"), llama.Model(llama.ModelArgs.from_dict(
        dict(CONFIGS["llama"], model_type="llama", num_hidden_layers=1)))
    model.load_weights(weights)
    draft.load_weights(weights, strict=False)
    prompts = [hf.encode(p) for p in ["First Citizen:", "ROMEO: O", "To be or"]]
    batch = batch_generate(model, tokenizer, prompts, max_tokens=12, return_token_ids=True)
    speculative = "".join(r.text for r in stream_generate(
        model, tokenizer, "ROMEO: O", max_tokens=12, draft_model=draft, num_draft_tokens=3))
    cache = make_prompt_cache(model)
    model(mx.array([prompts[0]]), cache=cache)
    saved = os.path.join(folder, f"cache_{mx.__name__}_{os.getpid()}.safetensors")
    save_prompt_cache(saved, cache, {"note": "kept"})
    cache, metadata = load_prompt_cache(saved, return_metadata=True)
    return {"batch": [[int(t) for t in ids] for ids in batch.token_ids],
            "generate": generate(model, tokenizer, "First Citizen:", max_tokens=12),
            "speculative": speculative, "cache metadata": metadata,
            "from cache": generate(model, tokenizer, hf.encode(" to"), max_tokens=8,
                                   prompt_cache=cache)}


def worker(args):
    if args.mlx_lm_path:
        sys.path.append(args.mlx_lm_path)  # after our mlx: mlx_lm and its dependencies
    if args.worker == "save":
        for name in CONFIGS:
            save_weights(name, args.folder)
        return {}
    return {"generation": generation(args.folder),
            **{name: results(name, args.folder) for name in CONFIGS}}


def run(python, role, folder, mlx_lm_path=None):
    """A worker's results; Apple's (no mlx_lm_path) without our PYTHONPATH."""
    env = dict(os.environ)
    if mlx_lm_path is None:
        env.pop("PYTHONPATH", None)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [python, os.path.abspath(__file__), "--worker", role, "--folder", folder,
               "--worker-out", out.name] + (["--mlx-lm-path", mlx_lm_path] if mlx_lm_path else [])
        subprocess.run(cmd, check=True, env=env)
        with open(out.name) as f:
            return json.load(f)


def difference(ours, theirs):
    """The largest absolute difference; NaN where both are NaN counts as equal (RWKV-7's LoRA
    steps diverge to NaN from these random weights in both), NaN in one only as infinite."""
    a, b = np.array(ours, dtype=np.float64), np.array(theirs, dtype=np.float64)
    both = np.isnan(a) & np.isnan(b)
    if (np.isnan(a) != np.isnan(b)).any():
        return np.inf
    return np.abs(a[~both] - b[~both]).max(initial=0.0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mlx-python", help="interpreter with Apple MLX and mlx-lm")
    p.add_argument("--worker", choices=["save", "run"], help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    p.add_argument("--folder", help=argparse.SUPPRESS)
    p.add_argument("--mlx-lm-path", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        with open(args.worker_out, "w") as f:
            json.dump(worker(args), f)
        return
    if not args.mlx_python:
        p.error("--mlx-python is required")
    site = subprocess.run([args.mlx_python, "-c", "import mlx_lm, os; print(os.path.dirname("
                           "os.path.dirname(mlx_lm.__file__)))"], check=True, capture_output=True,
                          text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        run(sys.executable, "save", folder, site)
        ours = run(sys.executable, "run", folder, site)
        apple = run(args.mlx_python, "run", folder)
    print("| architecture | " + " | ".join(f"{c}: max abs diff" for c in CHECKS) + " |")
    print("|---|" + "---:|" * len(CHECKS))
    for name in CONFIGS:
        diffs = [None if ours[name][c] is None else difference(ours[name][c], apple[name][c])
                 for c in CHECKS]
        print(f"| {name} | " + " | ".join("n/a" if d is None else f"{d:.1e}" for d in diffs)
              + " |")
    same = [k for k in ours["generation"] if ours["generation"][k] == apple["generation"][k]]
    print(f"\nLlama generation, the same as Apple MLX's: {len(same)} of "
          f"{len(ours['generation'])} ({', '.join(same)})")


if __name__ == "__main__":
    main()
