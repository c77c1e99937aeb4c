// vkbert serve against the official openai client and Node's fetch. The expected numbers are the
// library's own, computed by tests/serve/test_clients.py and passed in VKBERT_SERVE_EXPECTED (a
// JSON file), which also names the servers it started.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import OpenAI from "openai";

const want = JSON.parse(readFileSync(process.env.VKBERT_SERVE_EXPECTED, "utf8"));

function assertClose(got, expected, what) {
  assert.equal(got.length, expected.length, `${what}: length`);
  for (let i = 0; i < got.length; i++) {
    if (Array.isArray(expected[i])) {
      assertClose(Array.from(got[i]), expected[i], `${what}[${i}]`);
      continue;
    }
    const bound = want.atol + want.rtol * Math.abs(expected[i]);
    assert.ok(Math.abs(got[i] - expected[i]) <= bound,
      `${what}[${i}]: got ${got[i]}, expected ${expected[i]}`);
  }
}

const client = new OpenAI({ baseURL: `${want.embed_url}/v1`, apiKey: "unused", maxRetries: 0 });

test("openai embeddings.create, one string, the client's default encoding (base64)", async () => {
  const r = await client.embeddings.create({ model: want.model, input: want.texts[0] });
  assert.equal(r.object, "list");
  assert.equal(r.data.length, 1);
  assert.equal(r.data[0].index, 0);
  // The client decodes base64 into numbers: a string here would mean it could not.
  assert.ok(Array.isArray(r.data[0].embedding), typeof r.data[0].embedding);
  assertClose(r.data[0].embedding, want.embeddings[0], "embedding");
  assert.equal(r.model, want.model);
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.total_tokens === r.usage.prompt_tokens);
});

test("openai embeddings.create, a list of strings", async () => {
  const r = await client.embeddings.create({ model: want.model, input: want.texts });
  assert.deepEqual(r.data.map((d) => d.index), want.texts.map((_, i) => i));
  assertClose(r.data.map((d) => d.embedding), want.embeddings, "embeddings");
});

test("openai embeddings.create with dimensions", async () => {
  const r = await client.embeddings.create({
    model: want.model, input: want.texts, dimensions: want.dimensions,
  });
  assertClose(r.data.map((d) => d.embedding), want.embeddings_dim, "embeddings");
});

test("openai embeddings.create, encoding_format float", async () => {
  const r = await client.embeddings.create({
    model: want.model, input: want.texts, encoding_format: "float",
  });
  assertClose(r.data.map((d) => d.embedding), want.embeddings, "embeddings");
});

test("openai embeddings.create, base64 asked for by hand: little-endian float32", async () => {
  const r = await fetch(`${want.embed_url}/v1/embeddings`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ input: want.texts, encoding_format: "base64" }),
  });
  assert.equal(r.status, 200);
  const body = await r.json();
  const rows = body.data.map((d) => {
    const bytes = Buffer.from(d.embedding, "base64");
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return Array.from({ length: bytes.byteLength / 4 }, (_, i) => view.getFloat32(4 * i, true));
  });
  assertClose(rows, want.embeddings, "embeddings");
});

test("fetch /embed", async () => {
  const r = await fetch(`${want.embed_url}/embed`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ inputs: want.texts }),
  });
  assert.equal(r.status, 200);
  assertClose(await r.json(), want.embeddings, "embed");
});

test("fetch /rerank", async () => {
  const r = await fetch(`${want.rerank_url}/rerank`, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ query: want.query, texts: want.docs, return_text: true }),
  });
  assert.equal(r.status, 200);
  const got = await r.json();
  const order = want.rerank.map((s, i) => [s, i]).sort((a, b) => b[0] - a[0]).map((p) => p[1]);
  assert.deepEqual(got.map((g) => g.index), order);
  assertClose(got.map((g) => g.score), order.map((i) => want.rerank[i]), "scores");
  assert.deepEqual(got.map((g) => g.text), order.map((i) => want.docs[i]));
});

test("openai client sees a server error as an APIError with the status", async () => {
  await assert.rejects(
    client.embeddings.create({ model: want.model, input: [] }),
    (e) => e instanceof OpenAI.APIError && e.status === 400,
  );
});
