"""The tokenizer.json seeds of every family vkbert reads (make_corpus.py writes them): SentencePiece
Unigram with a real Precompiled charsmap and Metaspace, byte-level BPE (merges as strings and as
pairs), BPE with byte_fallback, BPE with a subword prefix and a word suffix, WordPiece variants,
Split and Replace with regular expressions, every post-processor and decoder, added tokens with
their flags, truncation and padding; and from them the seeds of fuzz_normalizer, fuzz_regex and
fuzz_tokenize's families. Small, and the same on every run: the vocabularies and merges are
written here, and the charsmap comes from SentencePiece's own normalization-rule compiler, so it
depends only on the rules below.

Needs the test environment (.venv: sentencepiece, transformers, tokenizers), which also checks
that tokenizers loads every file written here."""
import base64
import functools
import json
import os
import tempfile

# SentencePiece normalization rules (code points in hex, source then target): one character to
# one, one to several, several to one, one to none, a 4-byte character, and a key that is a
# prefix of another (A, A + ring), so the trie has branches, leaves and a shared pool.
CHARSMAP_RULES = [("FF21", "61"), ("FB01", "66 69"), ("A0", "20"), ("2460", "31"),
                  ("65 301", "E9"), ("212B", "C5"), ("3000", "20"), ("1E9E", "73 73"),
                  ("FDFA", "635 644 649"), ("200B", ""), ("1F600", "3A 29"), ("41 30A", "C5")]


@functools.cache
def precompiled_charsmap():
    """The base64 precompiled_charsmap of a tiny SentencePiece model trained with the rules above,
    as transformers converts it into tokenizer.json."""
    import sentencepiece
    from transformers import XLMRobertaTokenizer
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "rules.tsv"), "w") as f:
            f.write("".join(f"{a}\t{b}\n" for a, b in CHARSMAP_RULES))
        with open(os.path.join(d, "train.txt"), "w") as f:
            f.write("hello world\n" * 20)
        sentencepiece.SentencePieceTrainer.train(
            input=os.path.join(d, "train.txt"), model_prefix=os.path.join(d, "sentencepiece.bpe"),
            vocab_size=12, hard_vocab_limit=False, minloglevel=2,
            normalization_rule_tsv=os.path.join(d, "rules.tsv"))
        out = os.path.join(d, "out")
        XLMRobertaTokenizer.from_pretrained(d).save_pretrained(out)
        with open(os.path.join(out, "tokenizer.json")) as f:
            normalizer = json.load(f)["normalizer"]
    while normalizer["type"] == "Sequence":  # transformers' versions differ in the wrapping
        normalizer = next(n for n in normalizer["normalizers"] if n["type"] in ("Precompiled",
                                                                               "Sequence"))
    return normalizer["precompiled_charsmap"]


def added(tokens, **flags):
    """added_tokens entries, ids from 0, special unless said otherwise."""
    base = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
            "special": True}
    return [dict(base, id=i, content=t, **flags.get(t, {})) for i, t in enumerate(tokens)]


def document(model, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None,
             added_tokens=(), truncation=None, padding=None):
    return {"version": "1.0", "truncation": truncation, "padding": padding,
            "added_tokens": list(added_tokens), "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer, "post_processor": post_processor, "decoder": decoder,
            "model": model}


SPM_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
SPM_ADDED = added(SPM_SPECIALS + ["<mask>"], **{"<mask>": {"lstrip": True}})
METASPACE = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
             "split": True}
SPM_PIECES = ["\u2581", "\u2581the", "\u2581a", "s", "e", "t", "h", "o", "l", "\u2581he", "llo",
              "\u2581wor", "ld", "r", "d", "w", "\u2581c", "af", "\u00e9", "fi", ":)", "ss",
              "\u00c5", "1", "\u4e2d", "\u6587", ",", ".", "!", "a", "n", "i", "\u2581n"]


def template(single, pair, specials):
    def item(x, type_id):
        if x in ("A", "B"):
            return {"Sequence": {"id": x, "type_id": type_id}}
        return {"SpecialToken": {"id": x, "type_id": type_id}}
    return {"type": "TemplateProcessing",
            "single": [item(x, 0) for x in single],
            "pair": [item(x, int(i >= len(pair) // 2)) for i, x in enumerate(pair)],
            "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in specials}}


def unigram(byte_fallback=False):
    """XLM-RoBERTa's pipeline: Precompiled and a Replace of space runs, Metaspace, Unigram."""
    pieces = SPM_SPECIALS + SPM_PIECES
    if byte_fallback:
        pieces += [f"<0x{b:02X}>" for b in range(256)]
    vocab = [[p, 0.0 if i < 4 else -1.0 - 0.25 * (i % 13) - len(p) * 0.125]
             for i, p in enumerate(pieces)]
    vocab.append(["<mask>", 0.0])
    model = {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": byte_fallback}
    normalizer = {"type": "Sequence", "normalizers": [
        {"type": "Precompiled", "precompiled_charsmap": precompiled_charsmap()},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
    decoder = METASPACE
    if byte_fallback:
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    added_tokens = [dict(a, id=len(vocab) - 1) if a["content"] == "<mask>" else a
                    for a in SPM_ADDED]
    return document(model, normalizer, METASPACE, template(
        ["<s>", "A", "</s>"], ["<s>", "A", "</s>", "</s>", "B", "</s>"],
        [("<s>", 0), ("</s>", 2)]), decoder, added_tokens)


def bytes_to_unicode():
    """GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the others for
    256 + n in byte order."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = [b for b in range(256) if b not in keep]
    table = {b: chr(b) for b in keep}
    table.update({b: chr(256 + n) for n, b in enumerate(extra)})
    return table


BYTE_MERGES = ["\u0120 t", "h e", "\u0120t he", "i n", "\u0120 a", "e r", "o n", "\u0120 w",
               "o r", "\u0120w or", "l d", "l l", "e ll", "h ell", "\u0120 hell", "\u0120hell o",
               "c a", "\u0120 ca", "\u0120ca f", "\u00c3 \u00a9", "\u0120 \u0120",
               "\u0120\u0120 \u0120\u0120", "\u00e4 \u00b8", "\u00e4\u00b8 \u0143", "a b",
               "l e", "ab le", "u n", "\u0120 un", "\u0120un a", "f f"]


def bpe_vocab(specials, alphabet, merges, suffix_tokens=()):
    tokens = list(specials) + list(alphabet) + list(suffix_tokens)
    for m in merges:
        a, b = m.split(" ") if isinstance(m, str) else m
        merged = a + b.removeprefix("##")
        if merged not in tokens:
            tokens.append(merged)
    return {t: i for i, t in enumerate(tokens)}


def bpe_model(vocab, merges, **options):
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
             "ignore_merges": False, "vocab": vocab, "merges": merges}
    model.update(options)
    return model


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
              "use_regex": True}
ROBERTA_ADDED = added(["<s>", "<pad>", "</s>", "<unk>"]) + [
    {"id": 0, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False,
     "normalized": False, "special": True}]


def byte_level_bpe(pairs=False):
    """RoBERTa's (merges as "a b" strings) or, with pairs, a Llama-3-like one: merges as pairs,
    ignore_merges, a Split regex before a ByteLevel without its own, ByteLevel processing."""
    alphabet = [bytes_to_unicode()[b] for b in range(256)]
    merges = [m.split(" ") for m in BYTE_MERGES] if pairs else BYTE_MERGES
    vocab = bpe_vocab(["<s>", "<pad>", "</s>", "<unk>"], alphabet, merges)
    vocab["<mask>"] = len(vocab)
    added_tokens = [dict(a, id=vocab[a["content"]]) for a in ROBERTA_ADDED]
    if not pairs:
        post = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                "trim_offsets": True, "add_prefix_space": False}
        return document(bpe_model(vocab, merges), None, BYTE_LEVEL, post,
                        dict(BYTE_LEVEL), added_tokens)
    split = {"type": "Split", "pattern": {"Regex": (
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}"
        "\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")}, "behavior": "Isolated",
        "invert": False}
    pre = {"type": "Sequence", "pretokenizers": [split, dict(BYTE_LEVEL, use_regex=False)]}
    post = {"type": "Sequence", "processors": [
        dict(BYTE_LEVEL, trim_offsets=False),
        template(["<s>", "A"], ["<s>", "A", "<s>", "B"], [("<s>", 0)])]}
    return document(bpe_model(vocab, merges, ignore_merges=True), None, pre, post,
                    dict(BYTE_LEVEL), added_tokens)


FALLBACK_CHARS = ["\u2581", "e", "h", "l", "o", "w", "r", "d", "t", "a", "c", "f", "\u00e9",
                  "\u4e2d", ",", "!"]
FALLBACK_MERGES = ["\u2581 t", "h e", "\u2581t he", "l l", "e ll", "h ell", "\u2581 hell",
                   "\u2581hell o", "o r", "\u2581 w", "\u2581w or", "l d", "c a", "\u2581 ca",
                   "\u2581ca f"]
LLAMA_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}


def bpe_byte_fallback():
    """Llama 2's: Prepend and Replace for the spaces, BPE with byte_fallback and fuse_unk."""
    specials = ["<unk>", "<s>", "</s>"]
    alphabet = [f"<0x{b:02X}>" for b in range(256)] + FALLBACK_CHARS
    vocab = bpe_vocab(specials, alphabet, FALLBACK_MERGES)
    normalizer = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    post = template(["<s>", "A"], ["<s>", "A", "<s>", "B"], [("<s>", 1)])
    model = bpe_model(vocab, FALLBACK_MERGES, unk_token="<unk>", fuse_unk=True,
                      byte_fallback=True)
    return document(model, normalizer, None, post, LLAMA_DECODER, added(specials))


SUFFIX_MERGES = [["t", "##h"], ["th", "##e</w>"], ["##l", "##l"], ["##ll", "##o</w>"],
                 ["h", "##e"], ["he", "##llo</w>"], ["c", "##a"], ["ca", "##f"], ["u", "##n"]]


def bpe_prefix_suffix():
    """BPE with continuing_subword_prefix and end_of_word_suffix, unk fused, NFKC, Lowercase and
    NFD + StripAccents, Whitespace, the BPE decoder; its own truncation and padding."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    alphabet = (list(letters) + ["##" + c for c in letters] + [c + "</w>" for c in letters] +
                ["##" + c + "</w>" for c in letters] + list(",.!?"))
    vocab = bpe_vocab(["<unk>", "<pad>", "<cls>", "<sep>"], alphabet, SUFFIX_MERGES)
    model = bpe_model(vocab, SUFFIX_MERGES, unk_token="<unk>", fuse_unk=True,
                      continuing_subword_prefix="##", end_of_word_suffix="</w>")
    normalizer = {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Lowercase"}, {"type": "NFD"}, {"type": "StripAccents"},
        {"type": "Strip", "strip_left": True, "strip_right": True}]}
    post = {"type": "BertProcessing", "sep": ["<sep>", 3], "cls": ["<cls>", 2]}
    truncation = {"direction": "Left", "max_length": 12, "strategy": "LongestFirst",
                  "stride": 0}
    padding = {"strategy": {"Fixed": 16}, "direction": "Right", "pad_to_multiple_of": 8,
               "pad_id": 1, "pad_type_id": 0, "pad_token": "<pad>"}
    return document(model, normalizer, {"type": "Whitespace"}, post,
                    {"type": "BPEDecoder", "suffix": "</w>"}, added(["<unk>", "<pad>", "<cls>",
                                                                    "<sep>"]),
                    truncation, padding)


def wordpiece_variant():
    """WordPiece behind Sequence[WhitespaceSplit, Punctuation, Digits], a Replace by regex and
    NFC, the WordPiece decoder, added tokens with every flag."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff",
              "##able", "1", "2", "3", "##s", ",", "!", "-", "caf", "##\u00e9", "<new>"]
    model = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
             "max_input_chars_per_word": 20, "vocab": {t: i for i, t in enumerate(tokens)}}
    normalizer = {"type": "Sequence", "normalizers": [
        {"type": "NFC"}, {"type": "Replace", "pattern": {"Regex": "\\p{Zs}+"}, "content": " "},
        {"type": "Lowercase"}]}
    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Isolated"},
        {"type": "Digits", "individual_digits": True},
        {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithNext",
         "invert": False}]}
    post = template(["[CLS]", "A", "[SEP]"], ["[CLS]", "A", "[SEP]", "B", "[SEP]", "[SEP]"],
                    [("[CLS]", 2), ("[SEP]", 3)])
    flags = {"[MASK]": {"lstrip": True}, "<new>": {"single_word": True, "rstrip": True,
                                                    "normalized": True, "special": False}}
    return document(model, normalizer, pre, post,
                    {"type": "WordPiece", "prefix": "##", "cleanup": True},
                    added(tokens[:5], **flags) + [dict(added(["<new>"], **flags)[0], id=19)])


def families():
    """name -> tokenizer.json document."""
    return {
        "unigram": unigram(),
        "unigram_byte_fallback": unigram(byte_fallback=True),
        "byte_level_bpe": byte_level_bpe(),
        "byte_level_bpe_pairs": byte_level_bpe(pairs=True),
        "bpe_byte_fallback": bpe_byte_fallback(),
        "bpe_prefix_suffix": bpe_prefix_suffix(),
        "wordpiece_variant": wordpiece_variant(),
    }


def dumps(doc):
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def check_with_tokenizers(name, text):
    from tokenizers import Tokenizer
    try:
        Tokenizer.from_str(text).encode("hello world, caf\u00e9 \u4e2d", "the pair")
    except Exception as e:
        raise SystemExit(f"tokenizers refuses the {name} seed: {e}")


# fuzz_tokenize's flags byte: bits 2-3 pick the tokenizer (tokenize_families in the harness).
TOKENIZE_FAMILIES = {"unigram": 1, "byte_level_bpe": 2, "bpe_byte_fallback": 3}


def even(text):
    """fuzz_tokenizer_json reads an even-sized input alone, without a tokenizer_config.json."""
    return text if len(text.encode()) % 2 == 0 else text + " "


def tokenizer_json_seeds(put):
    docs = families()
    for name, doc in docs.items():
        text = dumps(doc)
        check_with_tokenizers(name, text)
        put("tokenizer_json", name, even(text))
    # the added tokens' flags on a byte-level vocabulary, and merges of a BPE without any
    roberta = docs["byte_level_bpe"]
    put("tokenizer_json", "byte_level_added_flags", even(dumps(dict(roberta, added_tokens=[
        dict(a, normalized=True, rstrip=True, single_word=True) if a["content"] == "<mask>"
        else a for a in roberta["added_tokens"]]))))


def normalizer_seeds(put):
    """fuzz_normalizer's: an even first byte and a raw charsmap blob, or an odd one and a
    normalizer section."""
    blob = base64.b64decode(precompiled_charsmap())
    put("normalizer", "charsmap_real", b"\0" + blob)
    put("normalizer", "charsmap_trie_only", b"\0" + blob[:4 + int.from_bytes(blob[:4], "little")])
    put("normalizer", "charsmap_size_past_end",
        b"\0" + (len(blob) * 4).to_bytes(4, "little") + blob[4:])
    put("normalizer", "charsmap_pool_cut", b"\0" + blob[:-7])
    docs = families()
    for name in ("unigram", "bpe_byte_fallback", "bpe_prefix_suffix", "wordpiece_variant"):
        put("normalizer", "section_" + name, "\x01" + dumps(docs[name]["normalizer"]))


# fuzz_regex's input: a flags byte (bit 0: the regex crate's dialect; bits 1-3: the split
# behaviour, tok_behavior's order, 5 and up none; bit 4: invert), the pattern, a NUL, the text.
REGEX_SEEDS = {
    "gpt2": (0, "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
                "|\\s+", "Hello world's   caf\u00e9 123 \u4e2d\u6587!! \n\t x"),
    "llama3": (2, byte_level_bpe(pairs=True)["pre_tokenizer"]["pretokenizers"][0]["pattern"]
               ["Regex"], "I'VE 12345 apples\r\n\r\n  and\u00a0more\u2028 \U0001F600\u200d"),
    "space_runs": (4, " {2,}", "a  b   c \u3000 d    "),
    "zs": (6, "\\p{Zs}+", "x\u00a0\u2003y\u3000z"),
    "whitespace": (1, "\\w+|[^\\w\\s]+", "hello, world! \u0130stanbul \u0663\u0664 _x_"),
    "invert": (16 | 2, "\\p{P}", "a.b,c!!d"),
    "catastrophic": (10, "(a+)+$", "a" * 40 + "b"),
    "lookbehind": (8, "(?<=\\d)(?=(\\d{3})+$)", "1234567"),
    "anchors": (0, "^\\s*|\\s*$", "  line\n  next  \n"),
    "empty": (0, "", "ab\u00e9"),
    "flags": (0, "(?im-x)^A.B$", "a\nb\naXb"),
    "classes": (0, "[\\p{L}\\p{M}[:digit:]][^\\s\\p{^N}]\\h\\H", "e\u0301 9x f0"),
    "bad_utf8": (0, "\\S+", b"ok \xc3\x28 \xed\xa0\x80"),
}


def regex_seeds(put):
    for name, (flags, pattern, text) in REGEX_SEEDS.items():
        text = text if isinstance(text, bytes) else text.encode()
        put("regex", name, bytes([flags]) + pattern.encode() + b"\0" + text)


def tokenize_family_seeds(put):
    """fuzz_tokenize's inputs for the tokenizer.json families: a few texts of the shared text
    set (tests/parity/tok_texts.py), each alone and as a pair, at several max_len values."""
    import random
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))
    import tok_texts
    rng = random.Random(27)
    for name, family in TOKENIZE_FAMILIES.items():
        for k in range(4):
            text = tok_texts.text(rng, tok_texts.WORDS, 8, tok_texts.SENTENCEPIECE_SPECIALS)
            pair = tok_texts.text(rng, tok_texts.WORDS, 4, tok_texts.SENTENCEPIECE_SPECIALS)
            flags, max_len = family << 2 | (k & 1) | (k & 2), (255, 0, 9, 4)[k]
            data = bytes([flags, max_len]) + text.encode()
            if flags & 2:
                data += b"\0" + pair.encode()
            put("tokenize", f"{name}_{k}", data)


def write(put):
    tokenizer_json_seeds(put)
    normalizer_seeds(put)
    regex_seeds(put)
    tokenize_family_seeds(put)
