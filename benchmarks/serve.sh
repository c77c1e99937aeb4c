#!/usr/bin/env bash
# What dynamic batching buys `vkbert serve` under concurrent load (docs/benchmarks.md):
# the same load (benchmarks/serve_load.c: CLIENTS keep-alive clients posting /embed for SECONDS) against
# the server as it is and against `--max-batch-requests 1` (one input a forward pass), REPS times
# interleaved (batched, unbatched, batched, ...) so that the noise of a shared machine hits both
# alike; medians, the spread (min..max) and the ratio of throughputs, batched / unbatched.
#
#   benchmarks/serve.sh MODEL_DIR [BUILD=build]
#   environment: CLIENTS=16 DURATION=20 (seconds a run) REPS=3 BATCH=1 (texts a request)
#   WARMUP=5 (seconds after each start: plans and pipelines of the shapes the load makes)
#   SERVE_ARGS (more flags for both servers) TEXTS (a file, one text a line: serve_load --texts)
#
# MODEL_DIR is made when it does not exist: a MiniLM-L6-shaped BERT (hidden 384, 6 layers, 12
# heads, intermediate 1536, 512 positions; `vkbert bench`'s encoder-minilm shape) with random
# weights, written by python/tests/folder.py (the Python tests' folders), its vocabulary the
# words of serve_load's texts (so each word is one token, as in a real English WordPiece
# vocabulary) padded with made-up words to BERT's 30522. Each server start is a new process,
# warmed up before it is measured, and stopped with SIGTERM, which must exit 0.
set -euo pipefail
model=${1:?usage: benchmarks/serve.sh MODEL_DIR [BUILD]}
build=${2:-build}
clients=${CLIENTS:-16} seconds=${DURATION:-20} reps=${REPS:-3} batch=${BATCH:-1}
warmup=${WARMUP:-5}
load=(--clients "$clients" --batch "$batch" ${TEXTS:+--texts "$TEXTS"})
here=$(cd "$(dirname "$0")/.." && pwd)
for tool in "$build/vkbert" "$build/serve_load"; do
    [[ -x $tool ]] && continue
    echo "benchmarks/serve.sh: $tool not built (no libmicrohttpd?)" >&2
    exit 1
done
work=$(mktemp -d)
server=
cleanup() {
    [[ -n $server ]] && kill -TERM "$server" 2> /dev/null && wait "$server" 2> /dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# A Python that has numpy (folder.py needs it): the first of PYTHON, python3, /usr/bin/python3.
python_with_numpy() {
    for p in ${PYTHON:-} python3 /usr/bin/python3; do
        "$p" -c "import numpy" 2> /dev/null && { echo "$p"; return; }
    done
    echo "benchmarks/serve.sh: no python3 with numpy to write $model" >&2
    exit 1
}

write_model() {
    local py
    py=$(python_with_numpy)
    "$build/serve_load" --print-texts > "$work/texts.txt"
    "$py" - "$model" "$work/texts.txt" "$here/python/tests" << 'EOF'
import re, sys
sys.path.insert(0, sys.argv[3])
import folder
words = set()
for line in open(sys.argv[2]):
    words.update(re.findall(r"\w+|[^\w\s]", line.lower()))
vocab = folder.VOCAB[:5] + sorted(words)
vocab += ["w%05d" % i for i in range(30522 - len(vocab))]
folder.VOCAB[:] = vocab  # write_bert sizes the embedding table and vocab.txt from it
folder.write_bert(sys.argv[1], seed=12, hidden=384, layers=6, heads=12, inter=1536,
                  positions=512)
EOF
    echo "wrote $model: a MiniLM-L6-shaped BERT, random weights, 30522 words"
}

# Starts the server with extra flags; sets server (its pid) and url.
start() {
    # shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
    "$build/vkbert" serve --model "$model" --port 0 --quiet ${SERVE_ARGS:-} "$@" \
        2> "$work/serve.log" &
    server=$!
    local line=
    for _ in $(seq 600); do
        line=$(grep -m1 '^vkbert serve: listening on http://' "$work/serve.log" || true)
        [[ -n $line ]] && break
        kill -0 "$server" 2> /dev/null || break
        sleep 0.2
    done
    if [[ -z $line ]]; then
        echo "benchmarks/serve.sh: the server did not start:" >&2
        cat "$work/serve.log" >&2
        exit 1
    fi
    url=$(sed -E 's|^vkbert serve: listening on (http://[^ ]+) .*|\1|' <<< "$line")
    started_line=$line
}

# SIGTERM: the server finishes what is queued and must exit 0, "vkbert serve: stopped" last.
stop() {
    local rc=0
    kill -TERM "$server"
    wait "$server" || rc=$?
    server=
    if [[ $rc != 0 || $(tail -n 1 "$work/serve.log") != "vkbert serve: stopped" ]]; then
        echo "benchmarks/serve.sh: the server exited $rc after SIGTERM:" >&2
        tail -n 20 "$work/serve.log" >&2
        exit 1
    fi
}

# One measured run: start, warm up, load, stop; the JSON result into $1.
measure() {
    local out=$1
    shift
    start "$@"
    "$build/serve_load" --url "$url" --seconds "$warmup" "${load[@]}" > /dev/null
    "$build/serve_load" --url "$url" --seconds "$seconds" "${load[@]}" --json > "$out" 2> /dev/null
    stop
}

[[ -d $model ]] || write_model
echo "device: $("$build/vkbert" devices 2> /dev/null | head -n 3 | tr -s ' \n' ' ')"
echo "host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load: $clients clients, $batch text(s) a request from ${TEXTS:-the built-in texts}," \
    "${seconds} s a run after ${warmup} s of warm-up, $reps repetitions interleaved"
for r in $(seq "$reps"); do
    measure "$work/batched-$r.json"
    [[ $r == 1 ]] && echo "server: $started_line"
    measure "$work/unbatched-$r.json" --max-batch-requests 1
    echo "repetition $r: batched $(cat "$work/batched-$r.json")"
    echo "repetition $r: unbatched $(cat "$work/unbatched-$r.json")"
done

# Medians and spreads of each figure, and the ratio of the median throughputs.
python3 - "$work" "$reps" << 'EOF'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
runs = {m: [json.load(open(f"{work}/{m}-{r}.json")) for r in range(1, reps + 1)]
        for m in ("batched", "unbatched")}
figures = [("requests/s", lambda j: j["requests_per_s"], 1),
           ("tokens/s", lambda j: j["tokens_per_s"], 0),
           ("p50 ms", lambda j: j["latency_ms"]["p50"], 1),
           ("p95 ms", lambda j: j["latency_ms"]["p95"], 1),
           ("p99 ms", lambda j: j["latency_ms"]["p99"], 1),
           ("inputs a forward pass", lambda j: j["mean_batch_inputs"], 2),
           ("padding %", lambda j: None if j["padding"] is None else 100 * j["padding"], 0),
           ("errors", lambda j: j["errors"], 0)]
def cell(values, digits):
    if any(v is None for v in values):
        return "-"
    f = lambda v: f"{v:.{digits}f}"
    return f"{f(statistics.median(values))} ({f(min(values))}..{f(max(values))})"
print(f"\nmedians over {reps} runs (min..max)")
print("| server | " + " | ".join(name for name, _, _ in figures) + " |")
print("|---" * (len(figures) + 1) + "|")
for mode, label in (("batched", "batched (defaults)"),
                    ("unbatched", "--max-batch-requests 1")):
    print(f"| {label} | " + " | ".join(cell([get(j) for j in runs[mode]], d)
                                       for _, get, d in figures) + " |")
rps = {m: [j["requests_per_s"] for j in runs[m]] for m in runs}
pairs = [b / u for b, u in zip(rps["batched"], rps["unbatched"]) if u > 0]
ratio = statistics.median(rps["batched"]) / statistics.median(rps["unbatched"])
print(f"\nthroughput batched / unbatched: {ratio:.2f}x (each repetition's pair: "
      f"{min(pairs):.2f}..{max(pairs):.2f})")
EOF
