#!/usr/bin/env python3
"""One whole embedding job of one peer tool, as a user would run it: a fresh process that imports
the library, loads the checkpoint, embeds the texts and saves them. benchmarks/peers.py starts it once
per tool, row and repeat, and times it from the outside; this file times its own steps inside.

    python benchmarks/peer_workers.py TOOL --model DIR --texts ROW.json --output E.npy --timings T.json
        [--artifacts DIR]

TOOL is one of WORKERS below. The texts file is a JSON list of strings. --artifacts holds what
benchmarks/peers.py prepared once (the ONNX export, the GGUF files). The timings are JSON:
import_ms, load_ms, encode_ms, save_ms and, for llama.cpp, the token ids it used per text (its
tokenizer is its own)."""

import argparse
import json
import os
import sys
import time

T0 = time.perf_counter()


def ms_since(start):
    return (time.perf_counter() - start) * 1e3


# ---- sentence-transformers on torch ----

def st_job(model_dir, texts, device, half=False):
    start = time.perf_counter()
    import torch
    from sentence_transformers import SentenceTransformer
    steps = {"import_ms": ms_since(start)}
    start = time.perf_counter()
    model = SentenceTransformer(model_dir, device=device)
    # The checkpoint may be stored as fp16 (the GPU bundle's): run in the precision named.
    model = model.half() if half else model.float()
    steps["load_ms"] = ms_since(start)
    start = time.perf_counter()
    out = model.encode(texts, batch_size=32, convert_to_numpy=True)
    if device == "cuda":
        torch.cuda.synchronize()
    steps["encode_ms"] = ms_since(start)
    return out.astype("float32"), steps


def st_cpu(args, texts):
    return st_job(args.model, texts, "cpu")


def st_cuda_fp32(args, texts):
    return st_job(args.model, texts, "cuda")


def st_cuda_fp16(args, texts):
    return st_job(args.model, texts, "cuda", half=True)


# ---- ONNX Runtime ----

def ort_cpu(args, texts):
    """ONNX Runtime's CPU provider on the model benchmarks/peers.py exported with torch.onnx, in
    sentence-transformers' pipeline: the folder's tokenizer (HF tokenizers), texts sorted by
    length in batches of 32, padded, mean pooling over the mask, L2 normalization."""
    start = time.perf_counter()
    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer
    steps = {"import_ms": ms_since(start)}
    start = time.perf_counter()
    session = onnxruntime.InferenceSession(os.path.join(args.artifacts, "model.onnx"),
                                           providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(os.path.join(args.artifacts, "tokenizer.json"))
    tok.enable_truncation(args.max_length)
    tok.enable_padding()
    steps["load_ms"] = ms_since(start)
    start = time.perf_counter()
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    out = np.zeros((len(texts), 0), dtype=np.float32)
    for first in range(0, len(texts), 32):
        idx = order[first:first + 32]
        enc = tok.encode_batch([texts[i] for i in idx])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                    "token_type_ids": types})[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        if out.shape[1] == 0:
            out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
        out[idx] = pooled
    steps["encode_ms"] = ms_since(start)
    return out, steps


# ---- llama.cpp's embedding path ----

def llama_job(args, texts, gpu):
    """llama.cpp's embedding path through llama-cpp-python, with its own tokenizer. Its embed()
    cuts a long text at n_batch tokens and drops the final [SEP]; sentence-transformers keeps
    [SEP] at max_seq_length. So each text is tokenized here, cut as sentence-transformers cuts,
    and run through the same steps embed() takes (sequences packed into one decode until
    n_batch tokens), so that every tool sees the same length."""
    start = time.perf_counter()
    import llama_cpp
    import numpy as np
    steps = {"import_ms": ms_since(start)}
    start = time.perf_counter()
    # 512 tokens a decode: the encoder needs n_ubatch >= n_batch, and attention over a bigger
    # packed batch costs more than it saves.
    model = llama_cpp.Llama(model_path=os.path.join(args.artifacts, "model-f32.gguf"),
                            embedding=True, n_gpu_layers=-1 if gpu else 0, n_ctx=512,
                            n_batch=512, n_ubatch=512,
                            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, verbose=False)
    steps["load_ms"] = ms_since(start)
    # The first decode compiles the backend's pipelines: timed apart, as vkbert's are in load.
    start = time.perf_counter()
    embed_ids(model, [cut(model.tokenize(t.encode("utf-8")), args.max_length)
                      for t in texts[:2]])
    steps["warmup_ms"] = ms_since(start)
    start = time.perf_counter()
    ids = [cut(model.tokenize(t.encode("utf-8")), args.max_length) for t in texts]
    rows = embed_ids(model, ids)
    steps["encode_ms"] = ms_since(start)
    steps["token_ids"] = ids
    return np.asarray(rows, dtype="float32"), steps


def cut(ids, limit):
    """The first limit - 1 ids and the last ([SEP]), as HF tokenizers truncate."""
    return ids if len(ids) <= limit else ids[:limit - 1] + ids[-1:]


def embed_ids(model, ids):
    """Mean-pooled, L2-normalized embeddings of token id lists: Llama.embed()'s own steps
    (llama-cpp-python 0.3.36) from its tokens on."""
    import llama_cpp
    import numpy as np
    n_embd, n_batch = model.n_embd(), model.n_batch
    n_seq_max = model.context_params.n_seq_max
    out, sizes = [], []

    def decode():
        model._ctx.kv_cache_clear()
        model._ctx.decode(model._batch)
        model._batch.reset()
        for i in range(len(sizes)):
            out.append(llama_cpp.llama_get_embeddings_seq(model._ctx.ctx, i)[:n_embd])
        sizes.clear()

    model._batch.reset()
    for tokens in ids:
        if sum(sizes) + len(tokens) > n_batch or len(sizes) >= n_seq_max:
            decode()
        model._batch.add_sequence(tokens, len(sizes), True)
        sizes.append(len(tokens))
    if sizes:
        decode()
    rows = np.asarray(out, dtype=np.float64)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def llama_vulkan(args, texts):
    return llama_job(args, texts, gpu=True)


def llama_cpu(args, texts):
    return llama_job(args, texts, gpu=False)


WORKERS = {
    "st-cpu": st_cpu,
    "st-cuda-fp32": st_cuda_fp32,
    "st-cuda-fp16": st_cuda_fp16,
    "ort-cpu": ort_cpu,
    "llama-vulkan": llama_vulkan,
    "llama-cpu": llama_cpu,
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tool", choices=sorted(WORKERS))
    p.add_argument("--model", required=True)
    p.add_argument("--texts", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--timings", required=True)
    p.add_argument("--artifacts")
    p.add_argument("--max-length", type=int, default=256)
    args = p.parse_args()
    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    rows, steps = WORKERS[args.tool](args, texts)
    start = time.perf_counter()
    import numpy as np
    np.save(args.output, rows)
    steps["save_ms"] = ms_since(start)
    steps["command_ms"] = ms_since(T0)
    with open(args.timings, "w") as f:
        json.dump(steps, f)


if __name__ == "__main__":
    sys.exit(main())
