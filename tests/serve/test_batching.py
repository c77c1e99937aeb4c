"""Dynamic batching under concurrent clients: results equal to each text alone, batches of more
than one request (the vkbert_batch_size histogram of /metrics), --max-batch-requests, the 429 of
overload, /metrics as Prometheus text whose counters move, and a request dropped while queued
once its client is gone."""

import threading
import time

import numpy as np

import rawhttp
from conftest import TEXTS, close, histogram_count, long_text, metric, unit

BATCH = "vkbert_batch_size"  # inputs of one forward pass


def hammer(server, clients, rounds, body_of):
    """`clients` threads, started together, each sending `rounds` /embed requests; the
    responses by (client, round)."""
    start = threading.Barrier(clients)
    results, lock = {}, threading.Lock()

    def client(c):
        start.wait()
        for i in range(rounds):
            r = server.post("/embed", body_of(c, i))
            with lock:
                results[c, i] = r

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return results


def text_of(c, i):
    return long_text(4 + (c * 7 + i * 3) % 30, offset=c + i)


def passes_since(before, after):
    """Forward passes between two /metrics readings: (passes, passes of one input, inputs)."""
    return (histogram_count(after, BATCH) - histogram_count(before, BATCH),
            histogram_count(after, BATCH, le=1) - histogram_count(before, BATCH, le=1),
            metric(after, BATCH + "_sum") - metric(before, BATCH + "_sum"))


def check_alone(results, model):
    for (c, i), r in results.items():
        assert r.status == 200, r
        close(r.json(), model.embed([text_of(c, i)], normalize=True))


def test_prometheus_text_and_counters_move(st_server):
    before = st_server.metrics()
    assert before["types"].get(BATCH) == "histogram", before["types"]
    st_server.ok("/embed", {"inputs": TEXTS[:3]})
    st_server.ok("/embed", {"inputs": TEXTS[0]})
    after = st_server.metrics()

    def embeds(parsed, name):  # a counter's samples may carry _total beyond its TYPE name
        return metric(parsed, name, route="/embed") + metric(parsed, name + "_total",
                                                             route="/embed")

    counters = [name for name, kind in after["types"].items() if kind == "counter"]
    assert [n for n in counters if embeds(after, n) - embeds(before, n) == 2], \
        "no counter by route counted the 2 requests to /embed"
    passes, _, inputs = passes_since(before, after)
    assert passes >= 1 and inputs == 4


def test_concurrent_clients_get_results_alone_in_shared_batches(serve, models):
    s = serve("st", "--quiet")
    model = models("st")
    shared = 0
    for attempt in range(4):
        before = s.metrics()
        results = hammer(s, clients=8, rounds=3, body_of=lambda c, i: {"inputs": text_of(c, i)})
        check_alone(results, model)
        batches, ones, inputs = passes_since(before, s.metrics())
        assert inputs == 24
        shared += batches - ones
        if shared:
            break
    assert shared > 0, "8 clients at once never shared a forward pass"


def test_max_batch_requests_1_gives_batches_of_one(serve, models):
    s = serve("st", "--max-batch-requests", "1", "--quiet")
    before = s.metrics()
    results = hammer(s, clients=6, rounds=2,
                     body_of=lambda c, i: {"inputs": [text_of(c, i), text_of(c + 9, i)]})
    for (c, i), r in results.items():
        assert r.status == 200, r
        close(r.json(), unit(models("st").embed([text_of(c, i), text_of(c + 9, i)],
                                                normalize=False)))
    batches, ones, _ = passes_since(before, s.metrics())
    assert batches == ones == 24


def test_overload_gives_429_at_once_and_the_accepted_complete(serve, models):
    """--max-concurrent-requests 2: of many requests at once, some get TEI's Overloaded 429
    and every one accepted completes with the right rows."""
    s = serve("st", "--max-concurrent-requests", "2", "--max-batch-requests", "1", "--quiet")
    texts = [long_text(40, offset=k) for k in range(32)]
    raw = rawhttp.request_bytes("POST", "/embed", {"inputs": texts})
    want = unit(np.stack([models("st").embed([t], normalize=False)[0] for t in texts]))
    socks = [rawhttp.connect(s) for _ in range(16)]
    go = threading.Barrier(len(socks))
    out = [None] * len(socks)

    def client(k):
        go.wait()
        socks[k].sendall(raw)
        out[k] = rawhttp.read_response(socks[k])
        socks[k].close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(len(socks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    statuses = [r.status if r else None for r in out]
    assert 429 in statuses and 200 in statuses, statuses
    assert set(statuses) <= {200, 429}, statuses
    for r in out:
        if r.status == 429:
            assert r.json()["error_type"] == "Overloaded", r
        else:
            close(r.json(), want)


def test_request_dropped_while_queued_when_its_client_is_gone(serve, models):
    """Blockers of 32 inputs a request, one input a pass, keep the scheduler busy; a request
    queued behind them whose client hangs up never runs: the batch histogram's inputs count
    the blockers' only, and the server serves on."""
    s = serve("st", "--max-batch-requests", "1", "--quiet")
    blocker = {"inputs": [long_text(44, offset=k) for k in range(32)]}
    before = s.metrics()
    results, lock = [], threading.Lock()

    def block():
        r = s.post("/embed", blocker)
        with lock:
            results.append((r, time.monotonic()))

    threads = [threading.Thread(target=block) for _ in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # the blockers are read and queued (6 x 32 passes, one input each)
    sock = rawhttp.connect(s)
    sock.sendall(rawhttp.request_bytes("POST", "/embed", {"inputs": ["hello world"]}))
    sock.close()
    gone_at = time.monotonic()
    for t in threads:
        t.join(300)
    assert [r.status for r, _ in results] == [200] * 6, results
    assert max(end for _, end in results) > gone_at, "the blockers were done too soon to tell"
    _, _, ran = passes_since(before, s.metrics())
    assert ran == 6 * 32, f"{ran} inputs ran: the gone client's request ran too"
    close(s.ok("/embed", {"inputs": "hello world"}),
          models("st").embed(["hello world"], normalize=True))


def test_two_schedulers_share_the_queue(serve, models, st_server):
    """--device given twice: two contexts on the one device, a scheduler each, one queue; the
    startup line names both, and concurrent clients still get their texts' rows."""
    s = serve("st", "--device", "0", "--device", "0", "--quiet")
    one = st_server.devices  # the default device, the first
    assert s.devices == f"{one}, {one}", s.devices
    results = hammer(s, clients=6, rounds=2, body_of=lambda c, i: {"inputs": text_of(c, i)})
    check_alone(results, models("st"))


def test_max_batch_tokens_bounds_padded_tokens(serve, models):
    """--max-batch-tokens 48, the model's own limit: inputs of 26 tokens or more never share a
    pass (2 x 26 > 48), however many clients send at once."""
    s = serve("st", "--max-batch-tokens", "48", "--quiet")
    before = s.metrics()
    results = hammer(s, clients=6, rounds=2,
                     body_of=lambda c, i: {"inputs": long_text(24 + (c + i) % 20, c)})
    for (c, i), r in results.items():
        assert r.status == 200, r
        close(r.json(), models("st").embed([long_text(24 + (c + i) % 20, c)], normalize=True))
    batches, ones, _ = passes_since(before, s.metrics())
    assert batches == ones == 12
