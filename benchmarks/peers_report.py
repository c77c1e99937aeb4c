"""benchmarks/peers.py's report: the machine and the versions, the progress lines, peers.json and the
markdown tables (whole jobs as ratios against vkbert fp32, and where vkbert's time goes)."""

import json
import os
import platform
import subprocess

import numpy as np

BASELINE = "vkbert-fp32"


def _first_line(path, prefix):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip() if ":" in line else line.strip()
    except OSError:
        pass
    return None


def machine(cli):
    mem = _first_line("/proc/meminfo", "MemTotal")
    os_name = _first_line("/etc/os-release", "PRETTY_NAME=")
    out = {"cpu": _first_line("/proc/cpuinfo", "model name") or platform.processor(),
           "cores": os.cpu_count(),
           "memory": mem,
           "os": (os_name or "").replace("PRETTY_NAME=", "").strip('"') or platform.platform()}
    try:
        devices = subprocess.run([cli, "devices"], capture_output=True, text=True).stdout
        out["vulkan_devices"] = [line.split(": ", 1)[1] for line in devices.splitlines()
                                 if line.startswith("device ")]
        out["vulkan_driver"] = [line.split(None, 1)[1].strip() for line in devices.splitlines()
                                if line.strip().startswith("driver ")]
    except OSError as e:
        out["vulkan_devices"] = [f"cannot run {cli}: {e}"]
    try:
        import torch
        if torch.cuda.is_available():
            out["cuda_device"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return out


def versions():
    import importlib.metadata as md
    out = {"python": platform.python_version()}
    for name in ("torch", "sentence-transformers", "transformers", "tokenizers", "numpy",
                 "onnxruntime", "onnxscript", "llama-cpp-python", "gguf"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        out["vkbert_commit"] = subprocess.run(["git", "-C", root, "describe", "--always",
                                               "--dirty"], capture_output=True,
                                              text=True).stdout.strip() or None
    except OSError:
        pass
    # A GPU-check bundle has no .git: its MANIFEST.txt, beside src/, names the commit.
    manifest = os.path.join(os.path.dirname(root), "MANIFEST.txt")
    if not out.get("vkbert_commit") and os.path.exists(manifest):
        out["vkbert_commit"] = _first_line(manifest, "commit:")
    return out


def progress(record):
    head = f"[{record['repeat']}] {record['row']:9s} {record['tool']:13s}"
    if "error" in record:
        return f"{head} FAILED {record['error'][:300]}"
    extra = ""
    if "token_mismatches" in record:
        extra = f", {record['token_mismatches']} tokenized differently"
    return (f"{head} {record['wall_ms'] / 1e3:8.2f} s, cosine min "
            f"{record['cosine_min']:.6f}{extra}")


def write(out, state):
    public = dict(state)
    public["rows"] = {r: {"texts": v["texts"], "tokens": v["tokens"]}
                      for r, v in state["rows"].items()}
    with open(os.path.join(out, "peers.json"), "w") as f:
        json.dump(public, f, indent=1)
    with open(os.path.join(out, "peers.md"), "w") as f:
        f.write(markdown(state))


# ---- the tables ----

def _embed_ms(job):
    """The embedding call alone: vkbert's library phases, a worker's encode()."""
    s = job["steps"]
    if job["tool"].startswith("vkbert"):
        return s["tokenize_ms"] + s["prepare_ms"] + s["wait_ms"] + s["read_ms"]
    return s["encode_ms"]


def _spread(values, scale=1.0):
    v = np.asarray(values) * scale
    return f"{np.median(v):.2f} ({v.min():.2f}..{v.max():.2f})"


def _jobs(state, row, tool):
    return [j for j in state["jobs"] if j["row"] == row and j["tool"] == tool and "error" not in j]


def _cosine_cell(jobs):
    worst = min(j["cosine_min"] for j in jobs)
    cell = f"{worst:.6f}"
    mism = [j for j in jobs if j.get("token_mismatches")]
    if mism:
        j = mism[0]
        cell += f"; {j['token_mismatches']} tokenized differently, worst {j['cosine_min_mismatched']:.4f}"
    return cell


def job_table(state, row):
    info = state["rows"][row]
    tools = list(dict.fromkeys(j["tool"] for j in state["jobs"] if j["row"] == row))
    base = _jobs(state, row, BASELINE)
    base_wall = np.median([j["wall_ms"] for j in base]) if base else None
    base_embed = np.median([_embed_ms(j) for j in base]) if base else None
    lines = [f"**{row}**: {info['texts']} texts, {info['tokens']} tokens (HF tokenizers', "
             f"specials included, cut at {state['max_length']})", "",
             "| tool | whole job, s | texts/s | tokens/s | job time ÷ vkbert fp32's | "
             f"embed call, s | call time ÷ vkbert fp32's | cosine vs {state['reference']} (worst) |",
             "|---|---|---|---|---|---|---|---|"]
    for tool in tools:
        jobs = _jobs(state, row, tool)
        if not jobs:
            err = next(j["error"] for j in state["jobs"] if j["row"] == row and j["tool"] == tool)
            lines.append(f"| {tool} | failed: {err.splitlines()[-1][:120]} |||||||")
            continue
        wall = np.median([j["wall_ms"] for j in jobs])
        embed = np.median([_embed_ms(j) for j in jobs])
        ratio = f"{wall / base_wall:.2f}" if base_wall else "-"
        eratio = f"{embed / base_embed:.2f}" if base_embed else "-"
        lines.append(f"| {tool} | {_spread([j['wall_ms'] for j in jobs], 1e-3)} | "
                     f"{info['texts'] / wall * 1e3:.1f} | {info['tokens'] / wall * 1e3:.0f} | "
                     f"{ratio} | {_spread([_embed_ms(j) for j in jobs], 1e-3)} | {eratio} | "
                     f"{_cosine_cell(jobs)} |")
    return lines


SPLIT = [("process start and exit", None), ("device opened", "context_ms"),
         ("model loaded", "load_ms"), ("tokenized", "tokenize_ms"),
         ("passes prepared and submitted", "prepare_ms"), ("waiting for the device", "wait_ms"),
         ("read back", "read_ms"), ("model freed", "free_ms"), ("device closed", "close_ms"),
         ("output written", "write_ms")]
PHASES = ["read_texts_ms", "open_ms", "tokenize_ms", "prepare_ms", "wait_ms", "read_ms", "free_ms",
          "close_ms", "write_ms"]


def split_table(state):
    """Where vkbert's whole job goes, median ms per phase and its share of the wall time."""
    lines = ["| row | precision | wall, ms | " + " | ".join(n for n, _ in SPLIT) +
             " | not in a phase | device's own time (timestamps) |",
             "|---|---|---|" + "---|" * len(SPLIT) + "---|---|"]
    for row in state["rows"]:
        for tool in ("vkbert-fp32", "vkbert-fp16", "vkbert-int8"):
            jobs = _jobs(state, row, tool)
            if not jobs:
                continue
            wall = np.median([j["wall_ms"] for j in jobs])
            cells = []
            for _, key in SPLIT:
                v = np.median([j["wall_ms"] - j["steps"]["command_ms"] if key is None
                               else j["steps"][key] for j in jobs])
                cells.append(f"{v:.0f} ({100 * v / wall:.1f}%)")
            gpu = np.median([j["steps"]["gpu_ms"] for j in jobs])
            rest = np.median([j["steps"]["command_ms"] - sum(j["steps"][k] for k in PHASES)
                              for j in jobs])
            lines.append(f"| {row} | {tool[7:]} | {wall:.0f} | " + " | ".join(cells) +
                         f" | {rest:.0f} | {gpu:.0f} |")
    return lines


def markdown(state):
    m, v = state["machine"], state["versions"]
    out = [f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory')}, {m.get('os')}; "
           f"Vulkan: {', '.join(m.get('vulkan_devices', []))} "
           f"({', '.join(m.get('vulkan_driver', []))})"
           + (f"; CUDA: {m['cuda_device']}" if m.get("cuda_device") else ""),
           "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
           f"Model: {os.path.basename(os.path.dirname(state['model'].rstrip('/')))}/"
           f"{os.path.basename(state['model'].rstrip('/'))}, max_seq_length "
           f"{state['max_length']}; {state['repeat']} repeats, interleaved; "
           "median (min..max)", ""]
    for tool, why in state["skipped"].items():
        out.append(f"- {tool} skipped: {why}")
    out.append("")
    for row in state["rows"]:
        out += job_table(state, row) + [""]
    out += ["Where vkbert's whole job goes (median ms, share of the wall time):", ""]
    out += split_table(state) + [""]
    return "\n".join(out)
