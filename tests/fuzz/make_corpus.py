#!/usr/bin/env python3
"""Writes the seed corpus, tests/fuzz/corpus/<harness>/: a few small valid and near-valid
inputs per harness. Run from anywhere with the test environment's Python (.venv/bin/python: the
tokenizer families of tok_corpus.py need sentencepiece, transformers and tokenizers); it
overwrites the files it writes."""
import json
import os
import struct

import tok_corpus

HERE = os.path.dirname(os.path.abspath(__file__))


def put(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy(header, data, major=1):
    text = header.encode()
    pre = 10 if major == 1 else 12
    pad = (-(pre + len(text) + 1)) % 64
    text += b" " * pad + b"\n"
    size = struct.pack("<H", len(text)) if major == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([major, 0]) + size + text + data


def st(entries, data, pad=True):
    text = json.dumps(entries, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((-len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


def npy_corpus():
    f4 = struct.pack("<6f", 1, -2, 0.5, 3e38, -0.0, 7)
    put("npy", "f4_2x3", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f4))
    put("npy", "f2_v2", npy('{"descr":"<f2","fortran_order":False,"shape":(3,)}',
                            struct.pack("<3H", 0x3C00, 0x7C00, 0x0001), 2))
    put("npy", "b1_0d", npy("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", b"\x01"))
    put("npy", "i8_long", npy("{'shape': (2L,), 'fortran_order': False, 'descr': '<i8'}",
                              struct.pack("<2q", -1, 1 << 62)))
    put("npy", "u1_v3_empty", npy("{'descr': '|u1', 'fortran_order': False, 'shape': (0, 5)}",
                                  b"", 3))
    put("npy", "f8_truncated", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4,)}",
                                   struct.pack("<2d", 1, 2)))
    put("npy", "i4_fortran", npy("{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2)}",
                                 struct.pack("<2i", 1, 2)))
    put("npy", "f4_big_endian", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}",
                                    struct.pack(">f", 1)))


def st_corpus():
    put("safetensors", "f32_two", st({
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "b": {"dtype": "F32", "shape": [1], "data_offsets": [16, 20]},
    }, struct.pack("<5f", 1, 2, 3, 4, 5)))
    put("safetensors", "mixed_dtypes", st({
        "h": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
        "bf": {"dtype": "BF16", "shape": [1], "data_offsets": [4, 6]},
        "d": {"dtype": "F64", "shape": [], "data_offsets": [6, 14]},
        "i": {"dtype": "I64", "shape": [1, 1], "data_offsets": [14, 22]},
        "m": {"dtype": "BOOL", "shape": [0, 3], "data_offsets": [22, 22]},
        "u": {"dtype": "U8", "shape": [2], "data_offsets": [22, 24]},
    }, struct.pack("<3H", 0x3C00, 0xC000, 0x3F80) + struct.pack("<d", 2.5) +
        struct.pack("<q", 7) + b"\x01\x02"))
    put("safetensors", "empty_header", st({}, b""))
    put("safetensors", "bad_offsets", st({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 8]},
    }, struct.pack("<2f", 1, 2)))
    put("safetensors", "aliased", st({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
    }, struct.pack("<3f", 1, 2, 3)))
    put("safetensors", "header_too_long", struct.pack("<Q", 1000) + b'{"a":{}}')


TINY = {"hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 6, "max_position_embeddings": 5, "type_vocab_size": 2,
        "vocab_size": 7}


def config_corpus():
    # fuzz_config picks its model folder by the input's size: even F32, odd F16 under "bert.".
    tiny = json.dumps(dict(TINY, layer_norm_eps=1e-12, hidden_act="gelu",
                           position_embedding_type="absolute"), indent=1)
    put("config", "tiny_even", tiny if len(tiny) % 2 == 0 else tiny + " ")
    put("config", "tiny_odd", tiny if len(tiny) % 2 == 1 else tiny + " ")
    put("config", "bert_base", json.dumps({
        "architectures": ["BertModel"], "model_type": "bert", "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
        "max_position_embeddings": 512, "type_vocab_size": 2, "vocab_size": 30522,
        "layer_norm_eps": 1e-12, "hidden_act": "gelu", "hidden_dropout_prob": 0.1}))
    put("config", "gelu_new", json.dumps(dict(TINY, hidden_act="gelu_new")))
    put("config", "relative", json.dumps(dict(TINY, position_embedding_type="relative_key")))
    put("config", "heads_mismatch", json.dumps(dict(TINY, num_attention_heads=3)))
    put("config", "tokenizer_config", json.dumps({"do_lower_case": False,
                                                  "tokenizer_class": "BertTokenizer"}))


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocab_corpus():
    words = ["the", "a", "un", "##aff", "##able", "##s", "hello", "world", "!", ",", "\u4e2d"]
    put("vocab", "small", "\n".join(SPECIALS + words) + "\n")
    put("vocab", "crlf_no_final_eol", "\r\n".join(SPECIALS + words))
    put("vocab", "empty_lines_dupes", "\n".join(SPECIALS + ["", "the", "the", "##", ""]) + "\n")
    put("vocab", "nul_in_token", ("\n".join(SPECIALS) + "\nab\0cd\n##\0\n").encode())
    put("vocab", "no_sep", "\n".join(["[PAD]", "[UNK]", "[CLS]", "the"]) + "\n")


def tokenize_corpus():
    put("tokenize", "plain", b"\x00\x40hello world")
    put("tokenize", "lower_accents", "\x01\x40H\u00e9llo, WORLD! unaffable caf\u0065\u0301"
        .encode())
    put("tokenize", "pair_truncated", b"\x03\x06the cats, the hats\0a pair of texts here")
    put("tokenize", "cjk_emoji", "\x01\x40\u4e2d\u6587\u3053\u3093\u306b\u3061\u306f "
        "\U0001F600 \u00df \u0130\u2028x\u200bq".encode())
    put("tokenize", "max_len_too_small", b"\x02\x02a\0b")
    put("tokenize", "invalid_utf8", b"\x00\x40ok \xc3\x28 \xed\xa0\x80")
    put("tokenize", "long_word", b"\x00\x20" + b"ab" * 60 + b" a")


TOK_VOCAB = SPECIALS + ["hello", "world", "un", "##aff", "##able", "caf", "##e", "##\u00e9",
                        "na", "##ive", "\u4e2d", "\u6587", ",", "!", "-", "#", "$", "a", "b"]
ADDED = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
          "normalized": False, "special": True} for i, t in enumerate(SPECIALS)]
BERT_NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": True}


def special(token, type_id):
    return {"SpecialToken": {"id": token, "type_id": type_id}}


def sequence(seq, type_id):
    return {"Sequence": {"id": seq, "type_id": type_id}}


BERT_TEMPLATE = {
    "type": "TemplateProcessing",
    "single": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)],
    "pair": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1),
             special("[SEP]", 1)],
    "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                       "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}}


def tokenizer_json(**pieces):
    """tokenizer.json as transformers saves BERT's (tests/support/st_folder.c writes the same)."""
    model = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
             "max_input_chars_per_word": 100,
             "vocab": {t: i for i, t in enumerate(TOK_VOCAB)}}
    model.update(pieces.pop("model", {}))
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": ADDED,
           "normalizer": BERT_NORMALIZER, "pre_tokenizer": {"type": "BertPreTokenizer"},
           "post_processor": BERT_TEMPLATE, "decoder": None, "model": model}
    doc.update(pieces)
    return json.dumps(doc, indent=1, ensure_ascii=False)


def tokenizer_json_corpus():
    # fuzz_tokenizer_json picks its folder by the input's size: even tokenizer.json alone,
    # odd with a tokenizer_config.json beside it.
    bert = tokenizer_json()
    put("tokenizer_json", "bert_even", bert if len(bert.encode()) % 2 == 0 else bert + " ")
    put("tokenizer_json", "bert_odd", bert if len(bert.encode()) % 2 == 1 else bert + " ")
    put("tokenizer_json", "bert_processing", tokenizer_json(post_processor={
        "type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}))
    put("tokenizer_json", "null_normalizer", tokenizer_json(normalizer=None, post_processor=None))
    put("tokenizer_json", "sequences_of_one", tokenizer_json(
        normalizer={"type": "Sequence", "normalizers": [dict(BERT_NORMALIZER, lowercase=False,
                                                             strip_accents=True)]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": []},
        post_processor={"type": "Sequence", "processors": [BERT_TEMPLATE]}))
    put("tokenizer_json", "added_flags", tokenizer_json(added_tokens=ADDED + [
        {"id": 24, "content": "<new>", "single_word": True, "lstrip": True, "rstrip": True,
         "normalized": False, "special": False},
        {"id": 25, "content": "Hello", "single_word": False, "lstrip": False, "rstrip": True,
         "normalized": True, "special": False},
        {"id": 26, "content": "\u00e9", "single_word": True, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False},
        {"id": 4, "content": "[MASK]", "lstrip": True, "special": True}]))
    put("tokenizer_json", "template_multi_ids", tokenizer_json(post_processor=dict(
        BERT_TEMPLATE, single=[special("[CLS]", 0), sequence("A", 0), special("[X]", 2)],
        special_tokens=dict(BERT_TEMPLATE["special_tokens"],
                            **{"[X]": {"id": "[X]", "ids": [3, 4, 0], "tokens": ["a", "b", "c"]}}))))
    put("tokenizer_json", "vocab_holes", tokenizer_json(model={
        "unk_token": "[UNK]", "continuing_subword_prefix": "@@", "max_input_chars_per_word": 5,
        "vocab": {"[PAD]": 0, "[UNK]": 3, "[CLS]": 7, "[SEP]": 9, "hello": 40, "@@s": 12}}))
    put("tokenizer_json", "bpe_model", tokenizer_json(model={"type": "BPE"}))


ST_FILES = {  # the harness's order: the input's first byte picks the file
    "modules": 0, "pooling": 1, "dense": 2, "sbert": 3, "prompts": 4}


def st_module(idx, path, kind):
    return {"idx": idx, "name": str(idx), "path": path,
            "type": "sentence_transformers.models." + kind}


def st_model_corpus():
    def put_st(which, name, doc):
        text = doc if isinstance(doc, str) else json.dumps(doc, indent=2)
        put("st_model", which + "_" + name, bytes([ST_FILES[which]]) + text.encode())

    modules = [st_module(0, "", "Transformer"), st_module(1, "1_Pooling", "Pooling"),
               st_module(2, "2_Dense", "Dense"), st_module(3, "3_Normalize", "Normalize")]
    put_st("modules", "full", modules)
    put_st("modules", "no_dense", [modules[0], modules[1], modules[3]])
    put_st("modules", "class_paths", [dict(m, type=m["type"] + "." + m["type"].split(".")[-1])
                                      for m in modules])
    put_st("modules", "dense_twice", modules[:3] + [dict(modules[2], idx=3)])
    put_st("modules", "wrong_order", [modules[1], modules[0]])
    put_st("modules", "missing_folder", [st_module(0, "0_Transformer", "Transformer")])
    pooling = {"word_embedding_dimension": 4, "pooling_mode_cls_token": False,
               "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False,
               "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": False,
               "include_prompt": True}
    put_st("pooling", "mean", pooling)
    put_st("pooling", "mode_string", dict(pooling, pooling_mode="LastToken"))
    put_st("pooling", "all_modes", dict(pooling, pooling_mode_cls_token=True,
                                        pooling_mode_max_tokens=True, include_prompt=False))
    put_st("pooling", "none", dict(pooling, pooling_mode_mean_tokens=False))
    dense = {"in_features": 4, "out_features": 3, "bias": True,
             "activation_function": "torch.nn.modules.activation.Tanh",
             "module_input_name": "sentence_embedding",
             "module_output_name": "sentence_embedding"}
    put_st("dense", "tanh", dense)
    put_st("dense", "gelu_alias", dict(dense, activation_function="torch.nn.GELU"))
    put_st("dense", "no_bias", dict(dense, bias=False))
    put_st("dense", "wrong_shape", dict(dense, in_features=3, out_features=4))
    put_st("dense", "token_embeddings", dict(dense, module_input_name="token_embeddings"))
    put_st("sbert", "full", {"max_seq_length": 128, "do_lower_case": False})
    put_st("sbert", "nulls", {"max_seq_length": None, "do_lower_case": None})
    put_st("sbert", "bad_length", {"max_seq_length": 0.5})
    prompts = {"__version__": {"sentence_transformers": "5.1.0"},
               "model_type": "SentenceTransformer",
               "prompts": {"query": "query: ", "document": ""}, "default_prompt_name": None,
               "similarity_fn_name": "cosine"}
    put_st("prompts", "full", prompts)
    put_st("prompts", "default", dict(prompts, default_prompt_name="query"))
    put_st("prompts", "null_prompt", dict(prompts, prompts={"q": None, "r": "\u00e9"},
                                          default_prompt_name="q"))
    put_st("prompts", "unknown_default", dict(prompts, default_prompt_name="passage"))
    put_st("prompts", "not_string", dict(prompts, prompts={"q": 1}))


# fuzz_serve_request: a route byte (serve_routes' order), a flags byte (fuzz_serve_request.c),
# then the body.
ROUTES = {"openai": 0, "embeddings": 1, "embed": 2, "rerank": 3, "predict": 4, "tokenize": 5,
          "health": 6, "info": 7, "metrics": 8}
EMBEDDER, RERANKER, CLASSIFIER = 0, 1, 2


def serve(name, route, flags, body):
    body = body if isinstance(body, bytes) else body.encode()
    put("serve_request", name, bytes([ROUTES[route], flags]) + body)


def serve_corpus():
    deep = "[" * 2000 + "]" * 2000
    many = json.dumps({"inputs": ["hello"] * 40})
    serve("openai_float", "openai", EMBEDDER,
          '{"input":"hello world","model":"m","encoding_format":"float","dimensions":2}')
    serve("openai_base64", "embeddings", EMBEDDER,
          '{"input":["hello","the world"],"encoding_format":"base64","user":null}')
    serve("openai_ids", "openai", EMBEDDER, '{"input":[[2,9,3],[5,6]]}')
    serve("openai_bad_format", "openai", EMBEDDER, '{"input":"a","encoding_format":"hex"}')
    serve("embed", "embed", EMBEDDER,
          '{"inputs":"hello","normalize":false,"truncate":true,"truncation_direction":"Left"}')
    serve("embed_prompt", "embed", EMBEDDER, r'{"inputs":["caf\u00e9 !"],"prompt_name":"query"}')
    serve("embed_no_prompt", "embed", EMBEDDER, '{"inputs":"a","prompt_name":"passage"}')
    serve("embed_long", "embed", 64, '{"inputs":"the the the the the the the","truncate":false}')
    serve("embed_ids_long", "embed", 64 | 4, '{"inputs":[2,5,5,5,5,5,5,3]}')
    serve("embed_bad_id", "embed", EMBEDDER, '{"inputs":[4294967296,-1,1.5]}')
    serve("embed_dup", "embed", EMBEDDER, '{"inputs":"a","inputs":"b"}')
    serve("embed_nul_escape", "embed", EMBEDDER, r'{"inputs":"a\u0000b"}')
    serve("embed_nul_byte", "embed", EMBEDDER, b'{"inputs":"a\x00b"}')
    serve("embed_bad_utf8", "embed", EMBEDDER, b'{"inputs":"\xc3\x28\xed\xa0\x80"}')
    serve("embed_surrogate", "embed", EMBEDDER, r'{"inputs":"\ud800\udc00\udfff"}')
    serve("embed_deep", "embed", EMBEDDER, '{"inputs":' + deep + "}")
    serve("embed_many", "embed", EMBEDDER, many)
    serve("embed_empty", "embed", EMBEDDER, '{"inputs":[]}')
    serve("embed_nan", "embed", 8, '{"inputs":"hello"}')
    serve("embed_classifier", "embed", CLASSIFIER, '{"inputs":"hello"}')
    serve("not_object", "embed", EMBEDDER, '["inputs"]')
    serve("not_json", "embed", EMBEDDER, '{"inputs":')
    serve("rerank", "rerank", RERANKER,
          '{"query":"hello","texts":["world","the world"],"return_text":true,"raw_scores":true}')
    serve("rerank_many", "rerank", RERANKER | 64, json.dumps({"query": "a", "texts": ["b"] * 3}))
    serve("rerank_mixed", "rerank", RERANKER, '{"query":"a","texts":["b",1]}')
    serve("predict", "predict", CLASSIFIER, '{"inputs":"hello world","raw_scores":false}')
    serve("predict_pair", "predict", CLASSIFIER, '{"inputs":["hello","world"]}')
    serve("predict_batch", "predict", CLASSIFIER, '{"inputs":[["hello"],["a","b"]]}')
    serve("predict_bad", "predict", CLASSIFIER, '{"inputs":[["a","b","c"]]}')
    serve("tokenize", "tokenize", EMBEDDER, '{"inputs":["hello world","[SEP] a"]}')
    serve("tokenize_plain", "tokenize", EMBEDDER, '{"inputs":"hello","add_special_tokens":false}')
    for code, name in ((16, "failed"), (24, "invalid"), (32, "lost"), (40, "overloaded"),
                       (48, "unhealthy"), (56, "gone")):
        serve("queue_" + name, "embed", code, '{"inputs":"hello"}')
    serve("loading", "embed", 128, '{"inputs":"hello"}')
    serve("stopping", "tokenize", 129, '{"inputs":"hello"}')
    serve("health", "health", EMBEDDER, "")
    serve("info", "info", CLASSIFIER, "")
    serve("metrics", "metrics", EMBEDDER, "")


if __name__ == "__main__":
    npy_corpus()
    st_corpus()
    config_corpus()
    vocab_corpus()
    tokenize_corpus()
    tokenizer_json_corpus()
    st_model_corpus()
    serve_corpus()
    tok_corpus.write(put)
