"""vkbert's tokenizer against HuggingFace tokenizers, one thread each, in the same run, per family:
WordPiece (all-MiniLM-L6-v2's tokenizer.json, or a trained one without the package), Unigram
with the Precompiled normalizer (XLM-R's shape), byte-level BPE (RoBERTa's) and BPE with byte
fallback (Llama's), the files made as tests/parity/tok_zoo.py makes them. The same texts
(tests/parity/tok_texts.py's set: many scripts, two of 10,000 characters) go through

- tokenizers: Tokenizer.from_file(...).encode_batch(texts), no truncation, with
  RAYON_NUM_THREADS=1 so that the loop runs in Rust on one thread (the process's CPU time over
  the wall time of the call is printed: about 1.0 when one thread works);
- vkbert: the build's tokenize_speed program (benchmarks/tokenize_speed.c), a C loop over
  vkbert_tokenizer_encode with no truncation: no Python, no printing in the timed passes.

Each side: a warm-up pass, then REPEATS timed passes; MB/s (UTF-8 bytes of the texts) and
texts/s as median (min..max), on the CPU time of the process (one thread works on each side;
the CPU time stays honest on a machine shared with other work, where the wall time does not),
and the median on the wall time. Both sides produce ids, type ids, masks and offsets.

    .venv/bin/python benchmarks/tokenizer_speed.py build [--repeats 7] [--texts 3000]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its thread pool
os.environ["TOKENIZERS_PARALLELISM"] = "true"  # the pool, of one thread, not a serial fallback
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))

import tok_zoo  # noqa: E402
from tok_texts import (ACCENTED, BERT_SPECIALS, SENTENCEPIECE_SPECIALS, WORDS,  # noqa: E402
                       make_texts)
from tokenizers import Tokenizer  # noqa: E402

FAMILIES = {  # the table's name -> (tok_zoo family, or None for the real WordPiece; specials)
    "WordPiece (all-MiniLM-L6-v2)": (None, BERT_SPECIALS),
    "Unigram + Precompiled (XLM-R)": ("unigram-xlmr-hub", SENTENCEPIECE_SPECIALS),
    "byte-level BPE (RoBERTa)": ("roberta-trim1-prefix1", SENTENCEPIECE_SPECIALS),
    "BPE byte_fallback (Llama)": ("bpe-byte-fallback", SENTENCEPIECE_SPECIALS),
}


def wordpiece_folder(root):
    """all-MiniLM-L6-v2's own tokenizer.json alone, or a trained WordPiece without it."""
    import shutil
    sys.path.insert(0, os.path.dirname(__file__))
    import parity
    source = parity.minilm_folder()
    if not source:
        return tok_zoo.build("wordpiece-whitespace-nfd", root), "trained WordPiece"
    folder = os.path.join(root, "minilm")
    os.makedirs(folder, exist_ok=True)
    shutil.copy(os.path.join(source, "tokenizer.json"), folder)
    return folder, None


def _threads():
    """The process's threads now (Linux), or None."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def time_tokenizers(folder, texts, repeats):
    """Wall and CPU seconds of each pass, and the process's threads before the first call and
    after the passes (RAYON_NUM_THREADS=1: one worker of rayon's beside Python's own)."""
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    before = _threads()
    tok.encode_batch(texts)
    wall, cpu = [], []
    for _ in range(repeats):
        c, start = time.process_time(), time.perf_counter()
        tok.encode_batch(texts)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - c)
    return wall, cpu, (before, _threads())


def time_vkbert(program, folder, texts, repeats):
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(b"".join(t.encode("utf-8") + b"\0" for t in texts))
        f.flush()
        done = subprocess.run([program, folder, f.name, str(repeats)], capture_output=True,
                              text=True)
    if done.returncode != 0:
        raise SystemExit(f"tokenize_speed on {folder}: {done.stderr.strip()}")
    result = json.loads(done.stdout)
    return result["seconds"], result["cpu_seconds"]


def spread(values):
    return statistics.median(values), min(values), max(values)


def row(name, who, wall, cpu, size, count):
    mb = spread([size / s / 1e6 for s in cpu])
    per = spread([count / s for s in cpu])
    return (f"| {name} | {who} | {mb[0]:.2f} ({mb[1]:.2f}..{mb[2]:.2f}) "
            f"| {per[0]:,.0f} ({per[1]:,.0f}..{per[2]:,.0f}) "
            f"| {statistics.median([size / s / 1e6 for s in wall]):.2f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build", help="the build folder holding tokenize_speed")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--texts", type=int, default=3000, help="generated texts of the set")
    a = p.parse_args()
    program = os.path.join(a.build, "tokenize_speed")
    print("| family | tokenizer | MB/s, CPU time: median (min..max) | texts/s, CPU time | "
          "MB/s, wall: median |")
    print("|---|---|---|---|---|")
    notes = []
    with tempfile.TemporaryDirectory() as root:
        for name, (family, specials) in FAMILIES.items():
            if family:
                folder = tok_zoo.build(family, root)
            else:
                folder, note = wordpiece_folder(root)
                name = f"WordPiece ({note})" if note else name
            texts = make_texts(5, WORDS + ACCENTED, a.texts, specials=specials)
            size = sum(len(t.encode("utf-8")) for t in texts)
            ours = time_vkbert(program, folder, texts, a.repeats)
            wall, cpu, threads = time_tokenizers(folder, texts, a.repeats)
            print(row(name, "vkbert", *ours, size, len(texts)))
            print(row(name, "tokenizers", wall, cpu, size, len(texts)))
            notes.append(f"{name}: {len(texts)} texts, {size / 1e6:.2f} MB; tokenizers: threads "
                         f"before / after {threads[0]} / {threads[1]}, CPU / wall time "
                         f"{sum(cpu) / sum(wall):.2f}")
    print()
    print("\n".join(notes))


if __name__ == "__main__":
    main()
