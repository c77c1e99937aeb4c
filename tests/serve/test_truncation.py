"""--auto-truncate (TEI's flag, default true): what a text over the model's limit does when the
request has no `truncate` field, on every route that takes one (/embed, /rerank, /predict) and
on /v1/embeddings, which has none and follows the flag; a request's own `truncate` wins either
way. A cut text embeds as `vkbert embed`, which truncates by default, embeds it."""

import json
import subprocess

import pytest

from conftest import cli_path, close, error_body, long_text, openai_error

TEXT = long_text(80)  # over the limits of the test folders: 48 tokens (st) and 64
QUERY = "the cat sat on the mat"


def cli_embed(folder, text):
    """`vkbert embed`'s embedding of one text, with its default truncation."""
    done = subprocess.run([cli_path(), "embed", "--model", folder, text], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["embeddings"]


def too_long(r):
    """TEI's Validation error for a text over the limit (core/src/tokenization.rs), 413."""
    assert r.status == 413, r
    assert "`inputs` must have less than" in error_body(r, ("Validation",)), r


def openai_rows(body):
    return [d["embedding"] for d in body["data"]]


def test_default_cuts_as_vkbert_embed(st_server, folders):
    want = cli_embed(folders["st"], TEXT)
    assert st_server.get("/info").json()["auto_truncate"] is True
    close(st_server.ok("/embed", {"inputs": TEXT}), want)
    close(st_server.ok("/embed", {"inputs": TEXT, "truncate": None}), want)
    close(openai_rows(st_server.ok("/v1/embeddings", {"input": TEXT})), want)
    # The request's own false still wins.
    too_long(st_server.post("/embed", {"inputs": TEXT, "truncate": False}))


def test_auto_truncate_false_refuses_unless_the_request_says_true(serve, folders):
    s = serve("st", "--auto-truncate", "false", "--quiet")
    assert s.get("/info").json()["auto_truncate"] is False
    too_long(s.post("/embed", {"inputs": TEXT}))
    too_long(s.post("/embed", {"inputs": [TEXT, "hello"], "truncate": None}))
    r = s.post("/v1/embeddings", {"input": TEXT})
    assert r.status == 413 and "must have less than" in openai_error(r), r
    close(s.ok("/embed", {"inputs": TEXT, "truncate": True}), cli_embed(folders["st"], TEXT))
    assert len(s.ok("/v1/embeddings", {"input": "hello"})["data"]) == 1


SCORED = {
    "/rerank": ("cross", {"query": QUERY, "texts": [TEXT, "hello"]}),
    "/predict": ("classifier", {"inputs": [[TEXT], ["hello"]]}),
}


def library_scores(models, path):
    if path == "/rerank":
        return models("cross").rerank(QUERY, [TEXT, "hello"])
    return models("classifier").classify([TEXT, "hello"])


@pytest.mark.parametrize("path", sorted(SCORED))
@pytest.mark.parametrize("flag", [None, "true", "false"])
def test_scoring_routes_follow_the_flag(serve, models, path, flag):
    key, body = SCORED[path]
    s = serve(key, "--quiet", *(["--auto-truncate", flag] if flag else []))
    cut = s.post(path, body)
    if flag == "false":
        too_long(cut)
        cut = s.post(path, dict(body, truncate=True))
    else:
        too_long(s.post(path, dict(body, truncate=False)))
    assert cut.status == 200, cut
    want = library_scores(models, path)  # the library cuts at the same limit
    if path == "/rerank":
        close(sorted((g["index"], g["score"]) for g in cut.json()), list(enumerate(want)))
    else:
        labels = models("classifier").labels
        got = [sorted(p, key=lambda g: labels.index(g["label"])) for p in cut.json()]
        close([[g["score"] for g in p] for p in got], want)


def test_environment_variable_and_the_flag_alone(serve):
    env = {"VKBERT_SERVE_AUTO_TRUNCATE": "false"}
    off = serve("st", "--quiet", env=env)
    assert off.get("/info").json()["auto_truncate"] is False
    too_long(off.post("/embed", {"inputs": TEXT}))
    # The flag alone, last or before another flag, means true and wins over the variable.
    for args in [("--quiet", "--auto-truncate"), ("--auto-truncate", "--quiet"),
                 ("--auto-truncate=true", "--quiet")]:
        on = serve("st", *args, env=env)
        assert on.get("/info").json()["auto_truncate"] is True, args
        assert len(on.ok("/embed", {"inputs": TEXT})) == 1
        on.assert_graceful_stop()
