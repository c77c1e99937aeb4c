#!/usr/bin/env python3
"""vkbert against the library a user would compare it with, one row per model and precision.

For each model folder, each text (and each (first text, text) pair for a cross-encoder) goes
through `vkbert embed` / `vkbert rerank` and through sentence-transformers itself
(SentenceTransformer(folder).encode, CrossEncoder(folder).predict), and the folder's tokenizer
through `vkbert tokenize` and through HF tokenizers. A row gives the texts, the worst cosine, the
worst relative L2, the largest absolute difference and the texts whose token ids, type ids or
attention mask differ.

    .venv/bin/python bench/parity.py --cli build/vkbert --model DIR [--model DIR ...]
        [--texts FILE] [--precision fp32,fp16,int8] [--markdown]

Without --texts, a built-in set of hard cases is used (hard_texts below). A text file holds one
text a line; \\n, \\t and \\\\ in a line stand for a newline, a tab and a backslash. Needs the
environment of tests/requirements.txt (tests/python-env.sh); nothing is downloaded.

The tests import this file (tests/parity): the table and the tests run the same comparisons."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def hard_texts():
    """The hard cases: empty, one character, over the limit, accents, Chinese, emoji, mixed
    scripts, typed special tokens, runs of whitespace, control characters."""
    return [
        "",
        "a",
        "?",
        "The quick brown fox jumps over the lazy dog.",
        "What is the capital of France? Paris is the capital and largest city of France.",
        "Café, naïve, résumé, Ångström, ÀÉÎÕÜ, Straße, Œuvre",
        "北京是中华人民共和国的首都。我爱自然语言处理！",
        "Emoji: 😀👍🏽 🇫🇷 👨‍👩‍👧 and ❤️ in text",
        "Mixed scripts: Ελληνικά, русский, 日本語のテキスト, 한국어, العربية, עברית, हिन्दी",
        "[CLS] typed [SEP] special [MASK] tokens [PAD] and [UNK]",
        "runs   of \t whitespace\n\n and\u00a0no-break\u2003em spaces   ",
        "control\u0007chars\u200bzero\u200dwidth\ufeffmarks",
        "UPPER lower MiXeD CaSe, numbers 3.14159 and 1,000,000; punctuation!?…«»",
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "word " * 600,
        "東京 " * 300,
    ]


def read_texts(path):
    """One text a line, with \\n, \\t and \\\\ unescaped."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            out.append(line.replace("\\\\", "\0").replace("\\n", "\n").replace("\\t", "\t")
                       .replace("\0", "\\"))
    return out


# ---- vkbert through its command-line tool ----

def _run(cli, args, env=None):
    done = subprocess.run([cli, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} ...: exit {done.returncode}: "
                           f"{done.stderr.strip()[:2000]}")
    return done.stdout


def vkbert_embed(cli, folder, texts, precision="fp32", extra=()):
    """`vkbert embed` of every text (given as arguments, so empty texts and newlines pass)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "e.npy")
        _run(cli, ["embed", "--model", folder, "--precision", precision, "--output", out,
                   *extra, "--", *texts])
        return np.load(out)


def vkbert_rerank(cli, folder, query, docs, precision="fp32", raw=False):
    """`vkbert rerank --json` scores in the order of docs."""
    args = ["rerank", "--model", folder, "--query", query, "--json", "--precision", precision]
    rows = json.loads(_run(cli, args + (["--raw-scores"] if raw else []) + ["--", *docs]))
    scores = np.full(len(docs), np.nan, dtype=np.float32)
    for row in rows:
        scores[row["index"]] = row["score"]
    return scores


def vkbert_tokenize(cli, folder, texts, pair=None, max_length=None):
    args = ["tokenize", "--model", folder]
    if pair is not None:
        args += ["--pair", pair]
    if max_length is not None:
        args += ["--max-length", str(max_length)]
    return json.loads(_run(cli, args + ["--", *texts]))


# ---- the reference libraries ----

def is_cross_encoder(folder):
    """A sequence classifier with one label and no sentence-transformers pipeline of its own."""
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    arch = " ".join(config.get("architectures") or [])
    if "ForSequenceClassification" not in arch:
        return False
    modules = os.path.join(folder, "modules.json")
    if not os.path.exists(modules):
        return True
    with open(modules, encoding="utf-8") as f:
        return not any(m.get("type", "").endswith("Pooling") for m in json.load(f))


def reference_embed(folder, texts):
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(folder, device="cpu")
    return model.encode(texts, convert_to_numpy=True, batch_size=16), model.max_seq_length


def reference_rerank(folder, query, docs):
    from sentence_transformers import CrossEncoder
    model = CrossEncoder(folder, device="cpu")
    return np.asarray(model.predict([(query, d) for d in docs], batch_size=16)), model.max_length


def reference_tokenizer(folder, max_length):
    """HF tokenizers' own object, without its padding, truncating at the model's limit: the one
    transformers' fast tokenizer builds (as sentence-transformers does) when the folder has a
    tokenizer_config.json or no tokenizer.json, for transformers applies the config's settings
    (do_lower_case and the like) over tokenizer.json's; else tokenizer.json as saved."""
    path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(path) and not os.path.exists(os.path.join(folder, "tokenizer_config.json")):
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(path)
    else:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(folder, use_fast=True).backend_tokenizer
    tok.no_padding()
    if max_length:
        tok.enable_truncation(max_length)
    else:
        tok.no_truncation()
    return tok


def token_mismatches(ours, encodings):
    """Indices of the texts whose ids, type ids or attention mask differ."""
    bad = []
    for i, e in enumerate(encodings):
        if (ours["input_ids"][i] != e.ids or ours["token_type_ids"][i] != e.type_ids
                or ours["attention_mask"][i] != e.attention_mask):
            bad.append(i)
    return bad


# ---- measures ----

def compare(ref, got):
    """Per row: cosine, relative L2 and the largest absolute difference (rows of 2-D arrays, or
    the elements of 1-D score arrays, where the cosine is 1 for equal signs)."""
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if ref.ndim == 1:
        ref, got = ref[:, None], got[:, None]
    dot = np.sum(ref * got, axis=1)
    nr, ng = np.linalg.norm(ref, axis=1), np.linalg.norm(got, axis=1)
    both_zero = (nr == 0) & (ng == 0)
    cos = np.where(both_zero, 1.0, dot / np.maximum(nr * ng, 1e-300))
    rel = np.where(both_zero, 0.0, np.linalg.norm(ref - got, axis=1) / np.maximum(nr, 1e-300))
    return cos, rel, np.max(np.abs(ref - got), axis=1)


def parity_row(cli, folder, texts, precision, reference_cache=None):
    """One row of the table, as a dict; reference_cache (a dict) keeps the reference library's
    results between precisions."""
    cache = {} if reference_cache is None else reference_cache
    cross = is_cross_encoder(folder)
    if "ref" not in cache:
        if cross:
            cache["ref"], cache["limit"] = reference_rerank(folder, texts[0], texts)
        else:
            cache["ref"], cache["limit"] = reference_embed(folder, texts)
    if cross:
        got = vkbert_rerank(cli, folder, texts[0], texts, precision)
    else:
        got = vkbert_embed(cli, folder, texts, precision)
    cos, rel, diff = compare(cache["ref"], got)
    if "tokens" not in cache:
        tok = reference_tokenizer(folder, cache["limit"])
        if cross:
            encodings = tok.encode_batch([(texts[0], t) for t in texts])
            ours = {k: [] for k in ("input_ids", "token_type_ids", "attention_mask")}
            for t in texts:  # --pair is one text for the whole command: one call a pair
                one = vkbert_tokenize(cli, folder, [texts[0]], pair=t, max_length=cache["limit"])
                for k in ours:
                    ours[k].append(one[k][0])
        else:
            encodings = tok.encode_batch(texts)
            ours = vkbert_tokenize(cli, folder, texts, max_length=cache["limit"])
        cache["tokens"] = token_mismatches(ours, encodings)
    return {
        "model": os.path.basename(os.path.normpath(folder)),
        "kind": "rerank" if cross else "embed",
        "precision": precision,
        "texts": len(texts),
        "worst_cosine": float(np.min(cos)),
        "worst_rel_l2": float(np.max(rel)),
        "max_abs_diff": float(np.max(diff)),
        "token_mismatches": len(cache["tokens"]),
        "per_text": {"cosine": cos.tolist(), "rel_l2": rel.tolist(), "abs": diff.tolist()},
        "mismatched_texts": cache["tokens"],
    }


COLUMNS = ["model", "kind", "precision", "texts", "worst cosine", "worst rel. L2",
           "max abs diff", "token mismatches"]


def row_cells(row):
    return [row["model"], row["kind"], row["precision"], str(row["texts"]),
            f"{row['worst_cosine']:.7f}", f"{row['worst_rel_l2']:.2e}",
            f"{row['max_abs_diff']:.2e}", str(row["token_mismatches"])]


def print_table(rows, markdown):
    cells = [COLUMNS] + [row_cells(r) for r in rows]
    if markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "|".join("---" for _ in COLUMNS) + "|")
        for c in cells[1:]:
            print("| " + " | ".join(c) + " |")
        return
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", default=os.environ.get("VKBERT_CLI", "build/vkbert"))
    parser.add_argument("--model", action="append", required=True, help="a model folder")
    parser.add_argument("--texts", help="one text a line (default: the built-in hard cases)")
    parser.add_argument("--precision", default="fp32,fp16,int8")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--json", help="also write the rows, with per-text figures, here")
    args = parser.parse_args(argv)
    texts = read_texts(args.texts) if args.texts else hard_texts()
    rows = []
    for folder in args.model:
        cache = {}
        for precision in args.precision.split(","):
            rows.append(parity_row(args.cli, folder, texts, precision, cache))
    print_table(rows, args.markdown)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
