/* The post-processors (tok_pipeline.h): TemplateProcessing, BertProcessing, RobertaProcessing,
 * ByteLevel and Sequence, as tokenizers' tokenizers/src/processors/template.rs, bert.rs,
 * roberta.rs, sequence.rs and pre_tokenizers/byte_level.rs (process_offsets) do, with the
 * trait's process in tokenizer/mod.rs (type ids set to the sequence's index first, the
 * processed encodings merged in order at the end) and PostProcessorWrapper's reading in
 * processors/mod.rs. The processors work on a list of encodings ("parts"), as tokenizers'
 * process_encodings does, so that a Sequence's later processors see what the earlier made. */
#include "tok_fields.h"
#include "tok_post_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- loading ---- */

static const tpl_special *find_special(const tok_post *p, const char *name)
{
    for (size_t i = 0; i < p->n_specials; i++)
        if (strcmp(p->specials[i].name, name) == 0) return &p->specials[i];
    return NULL;
}

static int load_special(const err_ctx *c, const cJSON *v, tpl_special *s)
{
    static const char *const known[] = {"id", "ids", "tokens", NULL};
    const char *what = "post_processor: TemplateProcessing: special_tokens";
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(v, "ids");
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(v, "tokens");
    const char *id;
    size_t idn;
    if (tok_fields_known(c, v, what, known) != 0 ||
        tok_field_string(c, v, what, "id", &id, &idn) != 0)
        return -1;
    if (!cJSON_IsArray(ids) || !cJSON_IsArray(toks))
        return io_fail(c, "%s: %s: expected lists ids and tokens", what, s->name);
    /* tokenizers' SpecialToken::new refuses lists of different lengths; its reader does not,
     * and would build an encoding whose ids and tokens disagree */
    size_t n = (size_t)cJSON_GetArraySize(ids);
    if (n != (size_t)cJSON_GetArraySize(toks))
        return io_fail(c, "%s: %s: ids and tokens differ in length", what, s->name);
    s->ids = malloc((n ? n : 1) * sizeof *s->ids);
    s->strs = calloc(n ? n : 1, sizeof *s->strs);
    s->lens = malloc((n ? n : 1) * sizeof *s->lens);
    if (!s->ids || !s->strs || !s->lens) return io_fail_oom(c, "%s: out of memory", what);
    s->n = n;
    const cJSON *i = ids->child, *t = toks->child;
    for (size_t k = 0; k < n; k++, i = i->next, t = t->next) {
        uint32_t u;
        if (tok_field_uint(c, i, "post_processor: TemplateProcessing: special_tokens: ids",
                           INT32_MAX, &u) != 0)
            return -1;
        if (!cJSON_IsString(t) || !t->valuestring)
            return io_fail(c, "%s: %s: tokens: expected strings", what, s->name);
        s->ids[k] = (int32_t)u;
        s->lens[k] = strlen(t->valuestring);
        if (tok_strdup(c, t->valuestring, &s->strs[k]) != 0) return -1;
    }
    return 0;
}

static int load_specials(const err_ctx *c, const cJSON *j, tok_post *p)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "special_tokens");
    if (!cJSON_IsObject(m))
        return io_fail(c, "post_processor: TemplateProcessing: special_tokens: expected an object");
    size_t n = (size_t)cJSON_GetArraySize(m), bytes = 0;
    for (const cJSON *v = m->child; v; v = v->next)
        bytes += strlen(v->string) + 1;
    p->specials = calloc(n ? n : 1, sizeof *p->specials);
    p->names = malloc(bytes ? bytes : 1);
    if (!p->specials || !p->names) return io_fail_oom(c, "post_processor: out of memory");
    char *name = p->names;
    for (const cJSON *v = m->child; v; v = v->next) {
        tpl_special *s = &p->specials[p->n_specials++];
        s->name = strcpy(name, v->string);
        name += strlen(name) + 1;
        if (load_special(c, v, s) != 0) return -1;
    }
    return 0;
}

/* A piece: {"Sequence": {"id": "A"|"B", "type_id": n}} or {"SpecialToken": {"id": name,
 * "type_id": n}}, the only forms tokenizers reads (its "$A:0" strings are the Python
 * constructor's, never the file's). */
static int load_piece(const err_ctx *c, const tok_post *p, const cJSON *v, const char *what,
                      tpl_piece *out)
{
    static const char *const known[] = {"id", "type_id", NULL};
    const cJSON *body = cJSON_IsObject(v) && v->child && !v->child->next ? v->child : NULL;
    int is_seq = body && strcmp(body->string, "Sequence") == 0;
    if (!body || (!is_seq && strcmp(body->string, "SpecialToken") != 0))
        return io_fail(c, "%s: expected {\"Sequence\": ...} or {\"SpecialToken\": ...}", what);
    const char *id;
    size_t n;
    uint32_t type_id;
    if (tok_fields_known(c, body, what, known) != 0 ||
        tok_field_string(c, body, what, "id", &id, &n) != 0 ||
        tok_field_uint(c, cJSON_GetObjectItemCaseSensitive(body, "type_id"), what, UINT32_MAX,
                       &type_id) != 0)
        return -1;
    out->type_id = (int32_t)type_id;
    out->special = NULL;
    if (is_seq) {
        if (strcmp(id, "A") != 0 && strcmp(id, "B") != 0)
            return io_fail(c, "%s: Sequence id \"%s\" (expected A or B)", what, id);
        out->seq = id[0] == 'B';
        return 0;
    }
    /* tokenizers would panic on a special token its map lacks */
    out->seq = -1;
    if (!(out->special = find_special(p, id)))
        return io_fail(c, "%s: special token \"%s\" is not in special_tokens", what, id);
    return 0;
}

static int load_side(const err_ctx *c, const cJSON *j, tok_post *p, const char *key, tpl_side *side)
{
    char what[96];
    snprintf(what, sizeof what, "post_processor: TemplateProcessing: %s", key);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsArray(list)) return io_fail(c, "%s: expected a list of pieces", what);
    size_t n = (size_t)cJSON_GetArraySize(list);
    if (!(side->v = calloc(n ? n : 1, sizeof *side->v)))
        return io_fail_oom(c, "%s: out of memory", what);
    for (const cJSON *v = list->child; v; v = v->next) {
        if (load_piece(c, p, v, what, &side->v[side->n]) != 0) return -1;
        /* one text has no $B: tokenizers would index past its one encoding */
        if (side == &p->single && side->v[side->n].seq == 1)
            return io_fail(c, "%s: $B in the template of one text", what);
        side->n++;
    }
    return 0;
}

static int load_template(const err_ctx *c, const cJSON *j, tok_post *p)
{
    static const char *const known[] = {"type", "single", "pair", "special_tokens", NULL};
    p->kind = POST_TEMPLATE;
    if (tok_fields_known(c, j, "post_processor: TemplateProcessing", known) != 0 ||
        load_specials(c, j, p) != 0 || load_side(c, j, p, "single", &p->single) != 0)
        return -1;
    return load_side(c, j, p, "pair", &p->pair);
}

static int load_named(const err_ctx *c, const cJSON *j, const char *what, const char *key,
                      post_named *t)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    uint32_t id;
    if (cJSON_GetArraySize(v) != 2 || !cJSON_IsArray(v) || !cJSON_IsString(v->child))
        return io_fail(c, "%s: %s: expected [token, id]", what, key);
    char where[96];
    snprintf(where, sizeof where, "%s: %s: id", what, key);
    if (tok_field_uint(c, v->child->next, where, INT32_MAX, &id) != 0) return -1;
    t->id = (int32_t)id;
    t->len = strlen(v->child->valuestring);
    return tok_strdup(c, v->child->valuestring, &t->s);
}

/* tokenizers reads these two by their members, not their type (an untagged enum, Roberta
 * tried first): with trim_offsets and add_prefix_space it is RobertaProcessing, else Bert. */
static int load_bert_roberta(const err_ctx *c, const cJSON *j, const char *type, tok_post *p)
{
    static const char *const known[] = {"type", "sep", "cls", "trim_offsets", "add_prefix_space",
                                        NULL};
    char what[64];
    snprintf(what, sizeof what, "post_processor: %s", type);
    int roberta = cJSON_GetObjectItemCaseSensitive(j, "trim_offsets") &&
                  cJSON_GetObjectItemCaseSensitive(j, "add_prefix_space");
    p->kind = roberta ? POST_ROBERTA : POST_BERT;
    if (tok_fields_known(c, j, what, known) != 0 || load_named(c, j, what, "sep", &p->sep) != 0 ||
        load_named(c, j, what, "cls", &p->cls) != 0)
        return -1;
    if (!roberta) return 0;
    if (tok_field_bool(c, j, what, "trim_offsets", -1, &p->trim_offsets) != 0) return -1;
    return tok_field_bool(c, j, what, "add_prefix_space", -1, &p->add_prefix_space);
}

static int load_byte_level(const err_ctx *c, const cJSON *j, tok_post *p)
{
    static const char *const known[] = {"type", "add_prefix_space", "trim_offsets", "use_regex",
                                        NULL};
    const char *what = "post_processor: ByteLevel";
    int use_regex;
    p->kind = POST_BYTE_LEVEL;
    if (tok_fields_known(c, j, what, known) != 0 ||
        tok_field_bool(c, j, what, "add_prefix_space", -1, &p->add_prefix_space) != 0 ||
        tok_field_bool(c, j, what, "trim_offsets", -1, &p->trim_offsets) != 0)
        return -1;
    return tok_field_bool(c, j, what, "use_regex", 1, &use_regex); /* the pre-tokenizer's */
}

static int load_sequence(const err_ctx *c, const cJSON *j, tok_post *p)
{
    static const char *const known[] = {"type", "processors", NULL};
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "processors");
    p->kind = POST_SEQUENCE;
    if (tok_fields_known(c, j, "post_processor: Sequence", known) != 0) return -1;
    if (!cJSON_IsArray(list))
        return io_fail(c, "post_processor: Sequence: processors: expected a list");
    size_t n = (size_t)cJSON_GetArraySize(list);
    if (!(p->procs = calloc(n ? n : 1, sizeof *p->procs)))
        return io_fail_oom(c, "post_processor: out of memory");
    for (const cJSON *v = list->child; v; v = v->next)
        if (tok_post_load(c, v, &p->procs[p->n_procs++]) != 0) return -1;
    return 0;
}

int tok_post_load(const err_ctx *c, const cJSON *j, tok_post **out)
{
    *out = NULL;
    const char *type = NULL;
    if (tok_field_type(c, j, "post_processor", &type) != 0) return -1;
    tok_post *p = calloc(1, sizeof *p);
    if (!p) return io_fail_oom(c, "post_processor: out of memory");
    int rc;
    if (strcmp(type, "TemplateProcessing") == 0)
        rc = load_template(c, j, p);
    else if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0)
        rc = load_bert_roberta(c, j, type, p);
    else if (strcmp(type, "ByteLevel") == 0)
        rc = load_byte_level(c, j, p);
    else if (strcmp(type, "Sequence") == 0)
        rc = load_sequence(c, j, p);
    else
        rc = io_fail(c, "post_processor: type \"%s\" is not supported", type);
    if (rc != 0) {
        tok_post_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void tok_post_free(tok_post *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n_specials; i++) {
        tpl_special *s = &p->specials[i];
        for (size_t k = 0; k < s->n; k++)
            free(s->strs[k]);
        free(s->ids);
        free(s->strs);
        free(s->lens);
    }
    free(p->specials);
    free(p->names);
    free(p->single.v);
    free(p->pair.v);
    free(p->sep.s);
    free(p->cls.s);
    for (size_t i = 0; i < p->n_procs; i++)
        tok_post_free(p->procs[i]);
    free(p->procs);
    free(p);
}

static size_t template_added(const tpl_side *side)
{
    size_t n = 0;
    for (size_t i = 0; i < side->n; i++)
        if (side->v[i].special) n += side->v[i].special->n;
    return n;
}

size_t tok_post_added(const tok_post *p, int pair)
{
    switch (p->kind) {
    case POST_TEMPLATE:
        return template_added(pair ? &p->pair : &p->single);
    case POST_BERT:
        return pair ? 3 : 2;
    case POST_ROBERTA:
        return pair ? 4 : 2;
    case POST_BYTE_LEVEL:
        return 0;
    case POST_SEQUENCE:
        break;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->n_procs; i++)
        n += tok_post_added(p->procs[i], pair);
    return n;
}

static const char *kind_name(const tok_post *p)
{
    static const char *const names[] = {"TemplateProcessing", "BertProcessing", "RobertaProcessing",
                                        "ByteLevel", "Sequence"};
    return names[p->kind];
}

void tok_post_describe(const tok_post *p, char *out, size_t size)
{
    if (!size) return;
    snprintf(out, size, "%s%s", kind_name(p), p->kind == POST_SEQUENCE ? "[" : "");
    if (p->kind != POST_SEQUENCE) return;
    size_t used = strlen(out);
    for (size_t i = 0; i < p->n_procs && used + 1 < size; i++) {
        if (i) snprintf(out + used, size - used, ", ");
        used += strlen(out + used);
        tok_post_describe(p->procs[i], out + used, size - used);
        used += strlen(out + used);
    }
    snprintf(out + used, size - used, "]");
}
