#!/usr/bin/python3
"""Writes a BERT-base-shaped F32 folder (hidden 768, 12 layers, 12 heads, intermediate 3072,
512 positions, a 30522-entry vocabulary; about 438 MB) for the loading measurements of
docs/loading.md: /usr/bin/python3 benchmarks/base_folder.py DIR"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
import folder  # noqa: E402

# bert-base-uncased's vocabulary size; the test words first so that sentences tokenize.
folder.VOCAB = folder.VOCAB + [f"[unused{i}]" for i in range(30522 - len(folder.VOCAB))]

if __name__ == "__main__":
    folder.write_bert(sys.argv[1], hidden=768, layers=12, heads=12, inter=3072, positions=512)
