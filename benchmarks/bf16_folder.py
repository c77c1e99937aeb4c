#!/usr/bin/python3
"""Copies a folder of F32 safetensors (benchmarks/base_folder.py's) with every F32 tensor stored as
BF16, rounded to nearest even as torch's .to(torch.bfloat16) does, for the BF16 loading
measurements of docs/loading.md: /usr/bin/python3 benchmarks/bf16_folder.py SRC DST"""

import json
import os
import shutil
import struct
import sys

import numpy as np


def to_bf16(f32):
    bits = f32.view(np.uint32).astype(np.uint64)
    # Round to nearest even on the 16 bits dropped (NaN is not expected in these weights).
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).astype(np.uint16)


def convert(src, dst):
    with open(src, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out_header, chunks, at = {}, [], 0
    for name, t in header.items():
        if name == "__metadata__":
            out_header[name] = t
            continue
        begin, end = t["data_offsets"]
        raw = data[begin:end]
        if t["dtype"] == "F32":
            raw = to_bf16(np.frombuffer(raw, dtype="<f4")).tobytes()
            t = dict(t, dtype="BF16")
        out_header[name] = dict(t, data_offsets=[at, at + len(raw)])
        chunks.append(raw)
        at += len(raw)
    text = json.dumps(out_header).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


if __name__ == "__main__":
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name != "model.safetensors":
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    convert(os.path.join(src, "model.safetensors"), os.path.join(dst, "model.safetensors"))
