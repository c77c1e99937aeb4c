/* Running the post-processors (tok_pipeline.h's tok_post_run), as tokenizers'
 * tokenizers/src/tokenizer/mod.rs (PostProcessor::process: each encoding's type ids set to its
 * index, process_encodings, Encoding::merge), processors/template.rs (apply_template),
 * processors/bert.rs, processors/roberta.rs, processors/sequence.rs and
 * pre_tokenizers/byte_level.rs (process_offsets) do. Offsets are bytes of the original texts
 * here where tokenizers' are characters, so offset trimming steps over characters of the text
 * the token came from. */
#include "tok_post_internal.h"
#include "tok_fields.h"
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

/* One encoding of tokenizers' process_encodings list. */
typedef struct post_part {
    size_t *starts, *ends, *lens;
    const char **strs; /* the processor's own token strings; NULL: the vocabulary's */
    int32_t *ids, *type_ids, *special, *seq;
    size_t n;
} post_part;

typedef struct post_parts {
    post_part *v;
    size_t n;
} post_parts;

/* What every processor of a run sees. */
typedef struct post_ctx {
    const err_ctx *c;
    const tok_vocab_view *vocab;
    const char *const *texts;
    int add_special;
} post_ctx;

static int part_alloc(const err_ctx *c, post_part *p, size_t n)
{
    const size_t each = 3 * sizeof(size_t) + sizeof(char *) + 4 * sizeof(int32_t);
    memset(p, 0, sizeof *p);
    char *block = n < SIZE_MAX / each ? malloc((n ? n : 1) * each) : NULL;
    if (!block) return io_fail_oom(c, "post_processor: out of memory for %zu tokens", n);
    p->starts = (size_t *)block;
    p->ends = p->starts + n;
    p->lens = p->ends + n;
    p->strs = (const char **)(p->lens + n);
    p->ids = (int32_t *)(p->strs + n);
    p->type_ids = p->ids + n;
    p->special = p->type_ids + n;
    p->seq = p->special + n;
    p->n = n;
    return 0;
}

static void part_free(post_part *p)
{
    free(p->starts);
    memset(p, 0, sizeof *p);
}

static void parts_free(post_parts *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        part_free(&ps->v[i]);
    free(ps->v);
    memset(ps, 0, sizeof *ps);
}

/* Token i of dst from token k of src. */
static void part_copy(post_part *dst, size_t i, const post_part *src, size_t k)
{
    dst->starts[i] = src->starts[k];
    dst->ends[i] = src->ends[k];
    dst->lens[i] = src->lens[k];
    dst->strs[i] = src->strs[k];
    dst->ids[i] = src->ids[k];
    dst->type_ids[i] = src->type_ids[k];
    dst->special[i] = src->special[k];
    dst->seq[i] = src->seq[k];
}

/* Token i of p as a special token the processor adds: offsets (0, 0), no text. */
static void part_special(post_part *p, size_t i, int32_t id, const char *s, size_t len,
                         int32_t type)
{
    p->starts[i] = p->ends[i] = 0;
    p->strs[i] = s;
    p->lens[i] = len;
    p->ids[i] = id;
    p->type_ids[i] = type;
    p->special[i] = 1;
    p->seq[i] = -1;
}

/* An input encoding as the trait's process hands it on: its type ids its index. */
static int part_from_enc(const err_ctx *c, const tok_enc *e, int32_t index, post_part *p)
{
    if (part_alloc(c, p, e->n) != 0) return -1;
    for (size_t i = 0; i < e->n; i++) {
        p->starts[i] = e->starts[i];
        p->ends[i] = e->ends[i];
        p->strs[i] = e->values ? e->values[i] : NULL;
        p->lens[i] = e->values ? e->value_lens[i] : 0;
        p->ids[i] = e->ids[i];
        p->type_ids[i] = index;
        p->special[i] = e->special[i];
        p->seq[i] = index;
    }
    return 0;
}

/* ------------------------------------------------------------ trimming the offsets ---- */

/* byte_level.rs's test for a space in a token: the byte-level space 'Ġ' or White_Space. */
static int is_space_char(int32_t c)
{
    return c == 0x120 || tok_is_ws(c);
}

static size_t leading_spaces(const char *s, size_t n)
{
    size_t count = 0, len;
    for (size_t i = 0; i < n && is_space_char(tok_utf8_decode(s + i, n - i, &len)); i += len)
        count++;
    return count;
}

static size_t trailing_spaces(const char *s, size_t n)
{
    size_t count = 0, len;
    while (n > 0) {
        size_t start = n - 1;
        while (start > 0 && ((unsigned char)s[start] & 0xC0) == 0x80)
            start--;
        if (!is_space_char(tok_utf8_decode(s + start, n - start, &len))) break;
        count++;
        n = start;
    }
    return count;
}

/* pos moved on by k characters of text (bytes when there is no text), not past limit. */
static size_t chars_forward(const char *text, size_t pos, size_t k, size_t limit)
{
    for (; k > 0 && pos < limit; k--) {
        pos++;
        while (text && pos < limit && ((unsigned char)text[pos] & 0xC0) == 0x80)
            pos++;
    }
    return pos;
}

/* pos moved back by k characters of text; SIZE_MAX when fewer than k come before it. */
static size_t chars_back(const char *text, size_t pos, size_t k)
{
    for (; k > 0; k--) {
        if (pos == 0) return SIZE_MAX;
        pos--;
        while (text && pos > 0 && ((unsigned char)text[pos] & 0xC0) == 0x80)
            pos--;
    }
    return pos;
}

/* byte_level.rs's process_offsets over one encoding. */
static int trim_offsets(const post_ctx *r, post_part *p, int add_prefix_space)
{
    for (size_t i = 0; i < p->n; i++) {
        size_t len = p->lens[i];
        const char *s = p->strs[i];
        if (!s && r->vocab) s = r->vocab->token(r->vocab->ctx, p->ids[i], &len);
        if (!s) return io_fail(r->c, "post_processor: no token has the id %d", (int)p->ids[i]);
        const char *text = NULL;
        if (p->seq[i] >= 0 && !(r->texts && (text = r->texts[p->seq[i]])))
            return io_fail(r->c, "post_processor: trimming offsets needs the texts");
        size_t lead = leading_spaces(s, len), trail = trailing_spaces(s, len);
        /* a single leading space on the first token is the one add_prefix_space added */
        int first = i == 0 || p->starts[i] == 0;
        if (lead == 1 && first && add_prefix_space) lead = 0;
        if (lead) p->starts[i] = chars_forward(text, p->starts[i], lead, p->ends[i]);
        size_t back = trail ? chars_back(text, p->ends[i], trail) : SIZE_MAX;
        if (back != SIZE_MAX) p->ends[i] = back > p->starts[i] ? back : p->starts[i];
    }
    return 0;
}

static int trim_all(const post_ctx *r, post_parts *ps, int add_prefix_space)
{
    for (size_t i = 0; i < ps->n; i++)
        if (trim_offsets(r, &ps->v[i], add_prefix_space) != 0) return -1;
    return 0;
}

/* ------------------------------------------------------------------- the processors ---- */

/* Replaces ps's parts by out's (out->n of them, in out->v). */
static void parts_replace(post_parts *ps, post_parts *out)
{
    parts_free(ps);
    *ps = *out;
    memset(out, 0, sizeof *out);
}

static int parts_alloc(const err_ctx *c, post_parts *ps, size_t n)
{
    ps->n = 0;
    if (!(ps->v = calloc(n ? n : 1, sizeof *ps->v)))
        return io_fail_oom(c, "post_processor: out of memory");
    return 0;
}

/* template.rs's apply_template: a part per piece, the sequences' with the piece's type id. */
static int run_template(const post_ctx *r, const tok_post *p, post_parts *ps)
{
    if (ps->n != 1 && ps->n != 2)
        return io_fail(r->c, "post_processor: TemplateProcessing: %zu encodings", ps->n);
    const tpl_side *side = ps->n == 2 ? &p->pair : &p->single;
    post_parts out;
    if (parts_alloc(r->c, &out, side->n) != 0) return -1;
    for (size_t i = 0; i < side->n; i++) {
        const tpl_piece *pc = &side->v[i];
        if (pc->seq >= 0) {
            const post_part *src = &ps->v[pc->seq];
            if (part_alloc(r->c, &out.v[out.n], src->n) != 0) goto fail;
            for (size_t k = 0; k < src->n; k++) {
                part_copy(&out.v[out.n], k, src, k);
                out.v[out.n].type_ids[k] = pc->type_id;
            }
            out.n++;
        } else if (r->add_special) {
            const tpl_special *s = pc->special;
            if (part_alloc(r->c, &out.v[out.n], s->n) != 0) goto fail;
            for (size_t k = 0; k < s->n; k++)
                part_special(&out.v[out.n], k, s->ids[k], s->strs[k], s->lens[k], pc->type_id);
            out.n++;
        }
    }
    parts_replace(ps, &out);
    return 0;
fail:
    parts_free(&out);
    return -1;
}

/* bert.rs's and roberta.rs's [head] tokens tail, the tokens no longer special. */
static int wrap(const post_ctx *r, const post_part *in, const post_named *head,
                const post_named *tail, int32_t tail_type, post_part *out)
{
    size_t h = head != NULL;
    if (part_alloc(r->c, out, in->n + h + 1) != 0) return -1;
    if (head) part_special(out, 0, head->id, head->s, head->len, 0);
    for (size_t k = 0; k < in->n; k++) {
        part_copy(out, h + k, in, k);
        out->special[h + k] = 0;
    }
    part_special(out, h + in->n, tail->id, tail->s, tail->len, tail_type);
    return 0;
}

/* Bert: [CLS] A [SEP] then B [SEP] (type 1); Roberta: <s> A </s> then </s> B </s>, all type 0. */
static int run_bert_roberta(const post_ctx *r, const tok_post *p, post_parts *ps)
{
    int roberta = p->kind == POST_ROBERTA;
    if (roberta && p->trim_offsets && trim_all(r, ps, p->add_prefix_space) != 0) return -1;
    if (roberta)
        for (size_t i = 0; i < ps->n; i++)
            memset(ps->v[i].type_ids, 0, ps->v[i].n * sizeof *ps->v[i].type_ids);
    if (!r->add_special) return 0;
    post_parts out;
    if (parts_alloc(r->c, &out, ps->n) != 0) return -1;
    for (size_t i = 0; i < ps->n; i++, out.n++) {
        const post_named *head = i == 0 ? &p->cls : roberta ? &p->sep : NULL;
        if (wrap(r, &ps->v[i], head, &p->sep, i > 0 && !roberta, &out.v[i]) != 0) {
            parts_free(&out);
            return -1;
        }
    }
    parts_replace(ps, &out);
    return 0;
}

static int process(const post_ctx *r, const tok_post *p, post_parts *ps)
{
    switch (p->kind) {
    case POST_TEMPLATE:
        return run_template(r, p, ps);
    case POST_BERT:
    case POST_ROBERTA:
        return run_bert_roberta(r, p, ps);
    case POST_BYTE_LEVEL:
        return p->trim_offsets ? trim_all(r, ps, p->add_prefix_space) : 0;
    case POST_SEQUENCE:
        break;
    }
    for (size_t i = 0; i < p->n_procs; i++)
        if (process(r, p->procs[i], ps) != 0) return -1;
    return 0;
}

/* Encoding::merge: the parts one after the other. */
static int merge(const err_ctx *c, const post_parts *ps, tok_enc *out)
{
    for (size_t i = 0; i < ps->n; i++) {
        const post_part *p = &ps->v[i];
        for (size_t k = 0; k < p->n; k++)
            if (tok_enc_push(c, out, p->ids[k], p->type_ids[k], p->special[k], p->starts[k],
                             p->ends[k], p->seq[k]) != 0)
                return -1;
    }
    return 0;
}

int tok_post_run(const err_ctx *c, const tok_post *p, const tok_vocab_view *v, const tok_enc *a,
                 const tok_enc *b, const char *const texts[2], int add_special, tok_enc *out)
{
    const post_ctx r = {c, v, texts, add_special};
    post_parts ps;
    if (parts_alloc(c, &ps, 2) != 0) return -1;
    int rc = part_from_enc(c, a, 0, &ps.v[ps.n]);
    if (rc == 0) ps.n++;
    if (rc == 0 && b && (rc = part_from_enc(c, b, 1, &ps.v[ps.n])) == 0) ps.n++;
    if (rc == 0) rc = process(&r, p, &ps);
    if (rc == 0) rc = merge(c, &ps, out);
    parts_free(&ps);
    return rc;
}
