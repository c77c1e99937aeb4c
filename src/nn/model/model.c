/* Loading a model folder's pipeline: what the folder says (sentence-transformers modules, the
 * tokenizer, the limits), the encoder, and the head it describes. */
#define _POSIX_C_SOURCE 200809L

#include "nn/model/model.h"

#include "io/json_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* The folder's pooling modes go to the encoder as they are: the two sets of bits must agree. */
_Static_assert((unsigned)ST_POOL_CLS == VKB_POOL_CLS && (unsigned)ST_POOL_MAX == VKB_POOL_MAX &&
                   (unsigned)ST_POOL_MEAN == VKB_POOL_MEAN &&
                   (unsigned)ST_POOL_MEAN_SQRT_LEN == VKB_POOL_MEAN_SQRT_LEN &&
                   (unsigned)ST_POOL_WEIGHTEDMEAN == VKB_POOL_WEIGHTED_MEAN &&
                   (unsigned)ST_POOL_LASTTOKEN == VKB_POOL_LAST_TOKEN,
               "sentence-transformers' pooling bits and the pool kernel's differ");

/* ---- the tokenizer ---- */

/* Transformer.__init__ (sentence-transformers 6.2, as v5): sentence_bert_config.json's
 * max_seq_length, when given, replaces the tokenizer's model_max_length; else that (none when
 * transformers' 1e30) capped at config.json's max_position_embeddings. Either is capped at
 * max_position_embeddings here too: no BERT takes more positions than it has. 0: none given. */
static int folder_limit(const char *dir, const tokenizer *tok, int max_seq_length)
{
    char path[4200], ignored[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    bert_config config;
    int positions = 0;
    if (bert_config_load(path, &config, ignored, sizeof ignored) == 0)
        positions = config.max_position_embeddings;
    tok_info info;
    tok_describe(tok, &info);
    int limit = max_seq_length > 0 ? max_seq_length : info.model_max_length;
    return positions > 0 && (limit == 0 || positions < limit) ? positions : limit;
}

int vkb_tokenizer_open(const char *dir, const st_model *st, vkbert_tokenizer *out, char *err,
                       size_t err_size)
{
    memset(out, 0, sizeof *out);
    st_model own;
    char ignored[256];
    if (!st && st_model_load(dir, &own, ignored, sizeof ignored) != 0)
        memset(&own, 0, sizeof own); /* unreadable modules: the folder read as a plain one */
    const st_model *s = st ? st : &own;
    /* sentence-transformers keeps the tokenizer and its config in the Transformer's folder */
    const char *bert_dir = s->has_modules ? s->transformer_dir : dir;
    int rc = tok_load_dir(bert_dir, &out->tok, err, err_size);
    if (rc == 0) {
        out->lower_text = s->do_lower_case > 0;
        out->max_length = folder_limit(bert_dir, out->tok, s->max_seq_length);
        if (out->max_length <= 0) out->max_length = 512;
    }
    if (!st) st_model_free(&own);
    return rc;
}

void vkb_tokenizer_close(vkbert_tokenizer *t)
{
    tok_free(t->tok);
    t->tok = NULL;
}

/* Python's str.lower(), which sentence-transformers applies when do_lower_case is set: every
 * code point mapped alone (utf8proc's simple mapping; Python's few one-to-many mappings,
 * such as U+0130, differ). NULL when out of memory or the text is not UTF-8. */
static char *lower_text(const char *text)
{
    size_t len = strlen(text);
    char *out = malloc(len * 2 + 4);
    if (!out) return NULL;
    size_t at = 0;
    const utf8proc_uint8_t *s = (const utf8proc_uint8_t *)text;
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate(s + i, (utf8proc_ssize_t)(len - i), &c);
        if (n < 0) return free(out), NULL;
        i += (size_t)n;
        at += (size_t)utf8proc_encode_char(utf8proc_tolower(c), (utf8proc_uint8_t *)out + at);
        if (at + 4 > len * 2 + 4) return free(out), NULL; /* cannot happen: at most 4 bytes grow */
    }
    out[at] = 0;
    return out;
}

int vkb_tokenizer_encode(const vkbert_tokenizer *t, const char *text, const char *pair, int max_len,
                         int left, tok_ids *out, char *err, size_t err_size)
{
    if (!t->lower_text)
        return tok_encode_cut(t->tok, text, pair, max_len, left, out, err, err_size);
    char *a = lower_text(text), *b = pair ? lower_text(pair) : NULL;
    int rc = -1;
    if (!a || (pair && !b))
        snprintf(err, err_size, "text: invalid UTF-8, or out of memory");
    else
        rc = tok_encode_cut(t->tok, a, b, max_len, left, out, err, err_size);
    free(a);
    free(b);
    return rc;
}

/* ---- the model ---- */

static uint64_t count_parameters(const bert_config *c, const bert_weights *w, const st_model *st)
{
    uint64_t n = 0;
    for (int i = 0; i < bert_tensor_count(w); i++) {
        bert_tensor t;
        bert_tensor_at(c, w, i, &t);
        n += (uint64_t)t.shape[0] * (uint64_t)(t.ndim > 1 ? t.shape[1] : 1);
    }
    for (int i = 0; i < st->dense_count; i++)
        n += (uint64_t)st->dense[i].out_features *
             (uint64_t)(st->dense[i].in_features + (st->dense[i].has_bias != 0));
    return n;
}

static uint32_t dense_activation(int st_activation)
{
    switch (st_activation) {
    case ST_ACT_TANH:
        return VKB_ACTIVATION_TANH;
    case ST_ACT_RELU:
        return VKB_ACTIVATION_RELU;
    case ST_ACT_GELU:
        return VKB_ACTIVATION_GELU;
    case ST_ACT_SIGMOID:
        return VKB_ACTIVATION_SIGMOID;
    default:
        return VKB_ACTIVATION_NONE;
    }
}

/* "mean_tokens,cls" -> the VKB_POOL_* bits. */
static vkbert_status parse_pooling(vkbert_context *ctx, const char *list, uint32_t *modes)
{
    *modes = 0;
    char name[64];
    for (const char *s = list; *s;) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n >= sizeof name)
            return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "pooling \"%s\": bad list", list);
        memcpy(name, s, n);
        name[n] = 0;
        unsigned bit;
        if (st_pool_mode_parse(name, &bit))
            return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "unknown pooling mode \"%s\"; known: cls_token, mean_tokens, "
                            "max_tokens, mean_sqrt_len_tokens, weightedmean_tokens, lasttoken",
                            name);
        *modes |= bit;
        s += n + (s[n] == ',');
    }
    if (!*modes) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "pooling is empty");
    return VKBERT_OK;
}

static vkbert_status build_head(vkbert_model *m, const bert_weights *w)
{
    encoder_dense_spec dense[ENCODER_MAX_DENSE];
    if (m->st.dense_count > ENCODER_MAX_DENSE)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "%d Dense modules; vkbert runs at most %d", m->st.dense_count,
                        ENCODER_MAX_DENSE);
    for (int i = 0; i < m->st.dense_count; i++) {
        const st_dense *d = &m->st.dense[i];
        dense[i] =
            (encoder_dense_spec){d->in_features, d->out_features, dense_activation(d->activation),
                                 d->weight, d->has_bias ? d->bias : NULL};
    }
    /* The classifier (labels x H, small) read whole, converted when the file's is not F32. */
    size_t n = (size_t)m->labels * (size_t)m->config.hidden_size;
    float *scratch = n ? malloc(n * sizeof *scratch) : NULL;
    const float *classifier = NULL;
    if (n && (!scratch || !bert_weights_rows(w, &w->classifier_w, 0, (uint64_t)m->labels, scratch,
                                             &classifier))) {
        free(scratch);
        return vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    encoder_head_spec spec = {m->pool_modes, m->st.dense_count, dense,
                              m->labels,     classifier,        w->classifier_b};
    vkbert_status status = vkb_encoder_set_head(m->encoder, &spec);
    free(scratch);
    return status;
}

static vkbert_status copy_labels(vkbert_model *m, const bert_model *bm)
{
    m->labels = bm->weights.has_classifier ? bm->config.num_labels : 0;
    m->problem = bm->config.problem_type;
    /* CrossEncoder.get_default_activation_fn, for a CrossEncoder folder that saves none */
    m->score_activation = m->st.score_activation != ST_SCORES_DEFAULT ? m->st.score_activation
                          : m->labels == 1                            ? ST_ACT_SIGMOID
                                                                      : ST_ACT_IDENTITY;
    if (m->st.cross_encoder && !m->labels)
        return vkb_fail(m->ctx, VKBERT_ERROR_MALFORMED_FILE,
                        "%s: sentence_bert_config.json says sequence-classification, but the "
                        "model has no classifier (no classifier.weight in its safetensors)",
                        m->st.transformer_dir);
    if (!m->labels) return VKBERT_OK;
    m->label_names = calloc((size_t)m->labels, sizeof *m->label_names);
    if (!m->label_names) return vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; i < m->labels; i++) {
        char fallback[32];
        snprintf(fallback, sizeof fallback, "LABEL_%d", i);
        const char *name = bm->labels && bm->labels[i] ? bm->labels[i] : fallback;
        if (!(m->label_names[i] = strdup(name)))
            return vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    return VKBERT_OK;
}

/* The folder's choices, then the caller's overrides. */
static vkbert_status apply_config(vkbert_model *m, const vkbert_model_config *config)
{
    m->pool_modes = m->st.has_pooling ? m->st.pool_modes : VKB_POOL_MEAN;
    m->normalize = m->st.normalize;
    m->max_length = m->tokenizer.max_length;
    m->truncate = 1;
    m->precision = VKBERT_PRECISION_FP32;
    if (!config) return VKBERT_OK;
    if ((unsigned)config->precision > VKBERT_PRECISION_INT8)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "unknown precision");
    m->precision = config->precision;
    if (config->pooling) {
        vkbert_status status = parse_pooling(m->ctx, config->pooling, &m->pool_modes);
        if (status) return status;
    }
    if (config->normalize) m->normalize = config->normalize > 0;
    if (config->max_length < 0 || config->max_length == 1)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "max_length %d: it must be 0 (the folder's) or at least 2",
                        config->max_length);
    if (config->max_length) m->max_length = config->max_length;
    m->truncate = !config->no_truncate;
    return VKBERT_OK;
}

/* The folder's files, read without the context's lock so that a load does not hold up other
 * calls on the context. 0, or which part failed (1 the modules or the tokenizer,
 * 2 the BERT folder) with its message in err. */
static int read_folder(vkbert_model *m, const char *dir, bert_model *bm, char *err, size_t size)
{
    if (st_model_load(dir, &m->st, err, size)) return 1;
    const char *bert_dir = m->st.has_modules ? m->st.transformer_dir : dir;
    char *config = io_path_join(bert_dir, "config.json");
    int other_family = config && bert_config_check_type(config, err, size) != 0;
    free(config);
    if (other_family) return 2;
    if (vkb_tokenizer_open(dir, &m->st, &m->tokenizer, err, size)) return 1;
    return bert_model_load(bert_dir, bm, err, size) ? 2 : 0;
}

/* Called with the lock held, as the other internal calls. */
static vkbert_status load_parts(vkbert_model *m, const char *dir, const vkbert_model_config *config)
{
    char err[VKB_ERROR_SIZE];
    bert_model bm = {0};
    vkb_unlock(m->ctx);
    int failed = read_folder(m, dir, &bm, err, sizeof err);
    vkb_lock(m->ctx);
    vkbert_status file = failed ? vkb_io_status(VKBERT_ERROR_MALFORMED_FILE) : VKBERT_OK;
    /* The same order of failures as before: the modules and tokenizer, the config, the model. */
    vkbert_status status = failed == 1 ? vkb_fail(m->ctx, file, "%s", err) : VKBERT_OK;
    if (!status) status = apply_config(m, config);
    if (!status && failed) status = vkb_fail(m->ctx, file, "%s", err);
    if (status) {
        bert_model_free(&bm); /* zeroed unless read */
        return status;
    }
    m->config = bm.config;
    m->has_pooler = bm.weights.has_pooler;
    snprintf(m->architecture, sizeof m->architecture, "%s",
             bm.config.architecture[0] ? bm.config.architecture : "BertModel");
    m->parameters = count_parameters(&bm.config, &bm.weights, &m->st);
    if (m->max_length > bm.config.max_position_embeddings)
        m->max_length = bm.config.max_position_embeddings;
    status = copy_labels(m, &bm);
    if (!status) { /* vkb_encoder_new takes the lock for its device steps only */
        vkb_unlock(m->ctx);
        status = vkb_encoder_new(m->ctx, &bm.config, &bm.weights, m->precision, &m->encoder);
        vkb_lock(m->ctx);
    }
    if (!status) status = build_head(m, &bm.weights);
    bert_model_free(&bm);
    return status;
}

vkbert_status vkb_model_load(vkbert_context *ctx, const char *dir,
                             const vkbert_model_config *config, vkbert_model **out)
{
    *out = NULL;
    vkbert_model *m = calloc(1, sizeof *m);
    if (!m) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    m->ctx = ctx;
    double start = plat_now_ms();
    vkbert_status status = load_parts(m, dir, config);
    m->clock.load_ms = plat_now_ms() - start;
    if (status) {
        vkb_model_free(m);
        return status;
    }
    *out = m;
    return VKBERT_OK;
}

void vkb_model_free(vkbert_model *m)
{
    if (!m) return;
    vkb_encoder_free(m->encoder);
    vkb_tokenizer_close(&m->tokenizer);
    st_model_free(&m->st);
    for (int i = 0; m->label_names && i < m->labels; i++)
        free(m->label_names[i]);
    free(m->label_names);
    free(m);
}
