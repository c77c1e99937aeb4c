/* Tests for src/io/bert_model.c: a small random BertModel written and read back (F32, F16, BF16,
 * with and without the "bert." prefix), HF's names and shapes in the file, and every kind of
 * folder the loader must refuse with a message naming the file and the tensor or field. */
#define _POSIX_C_SOURCE 200809L

#include "support.h"
#include "io/bert_model.h"
#include "io/half.h"
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[TEST_DIR_SIZE];

static void setup(void)
{
    test_dir_make(tmpdir, "bert");
}

static void teardown(void)
{
    test_dir_remove(tmpdir);
}

TestSuite(bert_model, .init = setup, .fini = teardown);

static void tmp_path(char *out, const char *name)
{
    snprintf(out, 256, "%s/%s", tmpdir, name);
}

/* 2 layers, H 20 in 4 heads of 5, I 36: small, and no size a multiple of another by accident. */
static bert_config small_config(void)
{
    return tiny_bert_config(20, 2, 4, 36, 16, 30);
}

/* Saves a random small model into tmpdir; the caller frees *w. */
static void save_small(bert_config *c, bert_weights *w, int f16, const char *prefix)
{
    *c = small_config();
    tiny_bert_write(tmpdir, &(tiny_bert){.config = *c, .seed = 42, .f16 = f16, .prefix = prefix},
                    w);
}

/* ---- comparing every array ---- */

typedef enum rounding { EXACT, TO_F16, TO_BF16 } rounding;

static float rounded(float x, rounding r)
{
    if (r == TO_F16) return half_to_float(float_to_half(x));
    if (r != TO_BF16) return x;
    /* The rewrite below keeps the high 2 bytes. Not by masking x's bits in place: gcc 12.2 at
     * -O2 drops that mask in this function (it returns x unchanged; a 15-line reproduction
     * does the same), which made the BF16 tests fail in Release builds only. */
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bf16_to_float((uint16_t)(bits >> 16));
}

static void assert_array(const float *got, const float *want, size_t n, rounding r,
                         const char *what)
{
    cr_assert_not_null(got, "%s is NULL", what);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], rounded(want[i], r), "%s[%zu]: %g, expected %g", what, i, got[i],
                     rounded(want[i], r));
}

/* A loaded tensor read through bert_weights_rows (an F16 or BF16 matrix has no array), into a
 * poisoned scratch, then compared with the written values. */
static void assert_rows(const bert_weights *got, float *const *t, size_t rows, size_t cols,
                        const float *want, rounding r, const char *what)
{
    float *scratch = test_poisoned(rows * cols);
    const float *data = NULL;
    cr_assert(bert_weights_rows(got, t, 0, rows, scratch, &data), "%s unreadable", what);
    assert_array(data, want, rows * cols, r, what);
    free(scratch);
}

/* Spelled out field by field rather than through bert_tensor_at, so that a slip in the
 * library's tables cannot hide itself. */
static void assert_layer(const bert_weights *got, int l, const bert_layer_weights *w, size_t h,
                         size_t i, rounding r)
{
    const bert_layer_weights *g = &got->layers[l];
    assert_rows(got, &g->q_w, h, h, w->q_w, r, "q_w");
    assert_rows(got, &g->q_b, 1, h, w->q_b, r, "q_b");
    assert_rows(got, &g->k_w, h, h, w->k_w, r, "k_w");
    assert_rows(got, &g->k_b, 1, h, w->k_b, r, "k_b");
    assert_rows(got, &g->v_w, h, h, w->v_w, r, "v_w");
    assert_rows(got, &g->v_b, 1, h, w->v_b, r, "v_b");
    assert_rows(got, &g->attn_out_w, h, h, w->attn_out_w, r, "attn_out_w");
    assert_rows(got, &g->attn_out_b, 1, h, w->attn_out_b, r, "attn_out_b");
    assert_rows(got, &g->attn_ln_gamma, 1, h, w->attn_ln_gamma, r, "attn_ln_gamma");
    assert_rows(got, &g->attn_ln_beta, 1, h, w->attn_ln_beta, r, "attn_ln_beta");
    assert_rows(got, &g->inter_w, i, h, w->inter_w, r, "inter_w");
    assert_rows(got, &g->inter_b, 1, i, w->inter_b, r, "inter_b");
    assert_rows(got, &g->out_w, h, i, w->out_w, r, "out_w");
    assert_rows(got, &g->out_b, 1, h, w->out_b, r, "out_b");
    assert_rows(got, &g->out_ln_gamma, 1, h, w->out_ln_gamma, r, "out_ln_gamma");
    assert_rows(got, &g->out_ln_beta, 1, h, w->out_ln_beta, r, "out_ln_beta");
}

static void assert_model(const bert_model *m, const bert_config *c, const bert_weights *w,
                         rounding r)
{
    const bert_config *g = &m->config;
    cr_assert(g->hidden_size == c->hidden_size && g->num_hidden_layers == c->num_hidden_layers &&
              g->num_attention_heads == c->num_attention_heads &&
              g->intermediate_size == c->intermediate_size &&
              g->max_position_embeddings == c->max_position_embeddings &&
              g->type_vocab_size == c->type_vocab_size && g->vocab_size == c->vocab_size);
    cr_assert_eq(g->layer_norm_eps, c->layer_norm_eps);
    cr_assert_str_eq(g->hidden_act, "gelu");
    size_t h = (size_t)c->hidden_size, i = (size_t)c->intermediate_size;
    const bert_weights *got = &m->weights;
    assert_rows(got, &got->word, (size_t)c->vocab_size, h, w->word, r, "word");
    assert_rows(got, &got->position, (size_t)c->max_position_embeddings, h, w->position, r, "pos");
    assert_rows(got, &got->token_type, (size_t)c->type_vocab_size, h, w->token_type, r, "type");
    assert_rows(got, &got->ln_gamma, 1, h, w->ln_gamma, r, "ln_gamma");
    assert_rows(got, &got->ln_beta, 1, h, w->ln_beta, r, "ln_beta");
    cr_assert_eq(got->num_layers, c->num_hidden_layers);
    for (int l = 0; l < c->num_hidden_layers; l++)
        assert_layer(got, l, &w->layers[l], h, i, r);
    cr_assert_eq(got->has_pooler, 1);
    assert_rows(got, &got->pooler_w, h, h, w->pooler_w, r, "pooler_w");
    assert_rows(got, &got->pooler_b, 1, h, w->pooler_b, r, "pooler_b");
}

static void assert_loads_as(const bert_config *c, const bert_weights *w, rounding r)
{
    char err[512] = "";
    bert_model m;
    cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), 0, "%s", err);
    assert_model(&m, c, w, r);
    bert_model_free(&m);
}

/* Loading must fail, naming each of `needles` (NULL-terminated). */
static void assert_refused(const char *const *needles)
{
    char err[512] = "";
    bert_model m;
    cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), -1);
    cr_assert_null(m.weights.layers, "a failed load leaves the model zeroed");
    for (int k = 0; needles[k]; k++)
        cr_assert(strstr(err, needles[k]), "message \"%s\" lacks \"%s\"", err, needles[k]);
}

#define REFUSED(...) assert_refused((const char *const[]){__VA_ARGS__, NULL})

/* ---- rewriting model.safetensors by hand, for what st_save cannot write ---- */

typedef struct edit {
    const char *drop, *drop2; /* left out */
    const char *transpose;    /* its 2-D shape swapped, data unchanged */
    const char *retype;       /* marked I32 (same size as F32) */
    const char *rename_from, *rename_to;
    int to_bf16;  /* every F32 tensor truncated to BF16 */
    int misalign; /* a 2-byte tensor first, so that every F32 one is misaligned */
    int extra;    /* adds cls.predictions.bias [vocab] */
} edit;

static int matches(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

/* The tensor's data in its new form, appended at data + *used. */
static const char *rewrite_tensor(const st_tensor *t, const edit *ed, uint8_t *data, size_t *used)
{
    if (ed->to_bf16 && t->dtype == ST_F32) {
        for (size_t k = 0; k < t->count; k++)
            memcpy(data + *used + 2 * k, (const uint8_t *)t->data + 4 * k + 2, 2);
        *used += 2 * t->count;
        return "BF16";
    }
    memcpy(data + *used, t->data, t->nbytes);
    *used += t->nbytes;
    return matches(ed->retype, t->name) ? "I32" : st_dtype_name(t->dtype);
}

static void add_entry(cJSON *root, const char *name, const char *dtype, int ndim,
                      const int64_t *shape, size_t begin, size_t end)
{
    cJSON *e = cJSON_AddObjectToObject(root, name);
    cJSON_AddStringToObject(e, "dtype", dtype);
    cJSON *s = cJSON_AddArrayToObject(e, "shape");
    for (int d = 0; d < ndim; d++)
        cJSON_AddItemToArray(s, cJSON_CreateNumber((double)shape[d]));
    cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)begin));
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)end));
}

static void write_safetensors(const char *path, cJSON *root, const uint8_t *data, size_t n)
{
    char *header = cJSON_PrintUnformatted(root);
    size_t len = strlen(header), padded = (len + 7) / 8 * 8;
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    for (int b = 0; b < 8; b++)
        fputc((int)((padded >> (8 * b)) & 0xFF), f);
    fputs(header, f);
    for (size_t k = len; k < padded; k++)
        fputc(' ', f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
    free(header);
}

static void rewrite(const edit *ed)
{
    char path[256], err[512] = "";
    tmp_path(path, "model.safetensors");
    st_file f;
    cr_assert_eq(st_load(path, &f, err, sizeof err), 0, "%s", err);
    uint8_t *data = malloc(f.size + 30 * 4 + 2);
    size_t used = 0;
    cJSON *root = cJSON_CreateObject();
    if (ed->misalign) {
        memset(data, 0, 2);
        add_entry(root, "cls.pad", "BF16", 1, (int64_t[]){1}, 0, 2);
        used = 2;
    }
    for (int i = 0; i < f.count; i++) {
        const st_tensor *t = &f.tensors[i];
        if (matches(ed->drop, t->name) || matches(ed->drop2, t->name)) continue;
        int64_t shape[2] = {t->shape[0], t->ndim == 2 ? t->shape[1] : 0};
        if (matches(ed->transpose, t->name)) shape[0] = t->shape[1], shape[1] = t->shape[0];
        size_t begin = used;
        const char *dtype = rewrite_tensor(t, ed, data, &used);
        const char *name = matches(ed->rename_from, t->name) ? ed->rename_to : t->name;
        add_entry(root, name, dtype, t->ndim, shape, begin, used);
    }
    if (ed->extra) {
        memset(data + used, 0, 30 * 4);
        add_entry(root, "cls.predictions.bias", "F32", 1, (int64_t[]){30}, used, used + 30 * 4);
        used += 30 * 4;
    }
    st_free(&f);
    write_safetensors(path, root, data, used);
    cJSON_Delete(root);
    free(data);
}

/* ---- editing config.json ---- */

/* Replaces (or, with value NULL, removes) one field of tmpdir/config.json. */
static void edit_config(const char *key, cJSON *value)
{
    char path[256], text[8192];
    tmp_path(path, "config.json");
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    cr_assert_not_null(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (value) cJSON_AddItemToObject(root, key, value);
    char *out = cJSON_Print(root);
    f = fopen(path, "wb");
    cr_assert_not_null(f);
    fputs(out, f);
    fclose(f);
    free(out);
    cJSON_Delete(root);
}

/* ---- round trips ---- */

Test(bert_model, round_trip_f32_f16_with_and_without_prefix)
{
    static const char *const prefixes[] = {NULL, "bert."};
    for (int f16 = 0; f16 < 2; f16++) {
        for (int p = 0; p < 2; p++) {
            bert_config c;
            bert_weights w;
            save_small(&c, &w, f16, prefixes[p]);
            assert_loads_as(&c, &w, f16 ? TO_F16 : EXACT);
            bert_weights_free(&w);
        }
    }
}

static int in_file(const bert_weights *w, const float *data, size_t count)
{
    uintptr_t at = (uintptr_t)data, base = (uintptr_t)w->mapping;
    return w->mapping && at >= base && at + count * sizeof *data <= base + w->mapping_size;
}

/* Where each array lives: in the mapped file for F32 data (st_save keeps it 4-byte aligned).
 * For F16, no matrix has an array (their readers convert rows from the file, so no float32
 * copy of the model is made) and each vector a copy of its own. */
static void assert_in_file(const bert_model *m, int f32)
{
    for (int i = 0; i < bert_tensor_count(&m->weights); i++) {
        bert_tensor t;
        bert_tensor_at(&m->config, &m->weights, i, &t);
        size_t n = (size_t)t.shape[0] * (size_t)(t.ndim == 2 ? t.shape[1] : 1);
        cr_assert_eq(in_file(&m->weights, t.data, n), f32, "%s", t.name);
        if (!f32) cr_assert_eq(t.data == NULL, t.ndim == 2, "%s", t.name);
    }
}

/* The loader keeps no host copy of an F32 model, and pages it releases read back the same. */
Test(bert_model, f32_read_in_place_and_released)
{
    for (int f16 = 0; f16 < 2; f16++) {
        bert_config c;
        bert_weights w;
        save_small(&c, &w, f16, NULL);
        char err[512] = "";
        bert_model m;
        cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), 0, "%s", err);
        assert_in_file(&m, !f16);
        for (int i = 0; i < bert_tensor_count(&m.weights); i++) {
            bert_tensor t;
            bert_tensor_at(&m.config, &m.weights, i, &t);
            bert_weights_release(&m.weights, t.data, (size_t)t.shape[0]);
        }
        bert_weights_release_all(&m.weights);
        assert_model(&m, &c, &w, f16 ? TO_F16 : EXACT);
        bert_model_free(&m);
        bert_weights_free(&w);
    }
}

/* Rows [first, first + n) of tensor t, in pieces of 7 rows at every offset, equal the written
 * ones; a range past the end, and a conversion without scratch, are refused. */
static void assert_pieces(const bert_weights *got, float *const *t, size_t rows, size_t cols,
                          const float *want, rounding r, int in_place, const char *what)
{
    float *scratch = test_poisoned(7 * cols);
    const float *data;
    for (size_t first = 0; first < rows; first += 3) {
        size_t n = rows - first < 7 ? rows - first : 7;
        cr_assert(bert_weights_rows(got, t, first, n, scratch, &data), "%s", what);
        cr_assert_eq(data == scratch, !in_place, "%s", what);
        assert_array(data, want + first * cols, n * cols, r, what);
    }
    cr_assert(!bert_weights_rows(got, t, rows - 1, 2, scratch, &data), "%s", what);
    cr_assert_null(data);
    cr_assert(!bert_weights_rows(got, t, rows + 1, 0, scratch, &data), "%s", what);
    cr_assert_eq(bert_weights_rows(got, t, 0, 1, NULL, &data), in_place, "%s", what);
    free(scratch);
}

/* Every dtype the loader takes goes through the same hook; only aligned F32 lies in place. */
Test(bert_model, rows_in_pieces_every_dtype)
{
    static const struct {
        int f16;
        edit ed;
        rounding r;
    } kinds[] = {{0, {0}, EXACT},
                 {1, {0}, TO_F16},
                 {0, {.to_bf16 = 1}, TO_BF16},
                 {0, {.misalign = 1}, EXACT}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        bert_config c;
        bert_weights w;
        save_small(&c, &w, kinds[k].f16, NULL);
        rewrite(&kinds[k].ed);
        char err[512] = "";
        bert_model m;
        cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), 0, "%s", err);
        const bert_weights *g = &m.weights;
        int in_place = k == 0;
        assert_pieces(g, &g->word, 30, 20, w.word, kinds[k].r, in_place, "word");
        assert_pieces(g, &g->layers[1].out_w, 20, 36, w.layers[1].out_w, kinds[k].r, in_place,
                      "out_w");
        /* A vector is one row, in an array of its own when converted. */
        assert_pieces(g, &g->layers[1].inter_b, 1, 36, w.layers[1].inter_b, kinds[k].r, 1,
                      "inter_b");
        const float *data;
        cr_assert(!bert_weights_rows(g, &w.word, 0, 1, NULL, &data), "not a tensor of m");
        bert_model_free(&m);
        bert_weights_free(&w);
    }
}

Test(bert_model, bf16)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, NULL);
    rewrite(&(edit){.to_bf16 = 1});
    assert_loads_as(&c, &w, TO_BF16);
    bert_weights_free(&w);
}

Test(bert_model, layer_norm_eps_and_defaults)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, NULL);
    edit_config("layer_norm_eps", cJSON_CreateNumber(1e-5));
    c.layer_norm_eps = 1e-5;
    assert_loads_as(&c, &w, EXACT);
    /* HF's BertConfig defaults, for a config.json that leaves them out. */
    edit_config("layer_norm_eps", NULL);
    edit_config("hidden_act", NULL);
    c.layer_norm_eps = 1e-12;
    assert_loads_as(&c, &w, EXACT);
    bert_weights_free(&w);
}

/* The writer's names, shapes and contents, checked against HF's names and the struct's fields,
 * not against the loader (which shares the writer's tables). */
Test(bert_model, hf_names_shapes_and_data)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, "bert.");
    const bert_layer_weights *l = &w.layers[1];
#define L1 "bert.encoder.layer.1."
    const struct {
        const char *name;
        int64_t rows, cols;
        const float *data;
    } want[] = {
        {"bert.embeddings.word_embeddings.weight", 30, 20, w.word},
        {"bert.embeddings.position_embeddings.weight", 16, 20, w.position},
        {"bert.embeddings.token_type_embeddings.weight", 2, 20, w.token_type},
        {"bert.embeddings.LayerNorm.weight", 20, 0, w.ln_gamma},
        {"bert.embeddings.LayerNorm.bias", 20, 0, w.ln_beta},
        {L1 "attention.self.query.weight", 20, 20, l->q_w},
        {L1 "attention.self.query.bias", 20, 0, l->q_b},
        {L1 "attention.self.key.weight", 20, 20, l->k_w},
        {L1 "attention.self.key.bias", 20, 0, l->k_b},
        {L1 "attention.self.value.weight", 20, 20, l->v_w},
        {L1 "attention.self.value.bias", 20, 0, l->v_b},
        {L1 "attention.output.dense.weight", 20, 20, l->attn_out_w},
        {L1 "attention.output.dense.bias", 20, 0, l->attn_out_b},
        {L1 "attention.output.LayerNorm.weight", 20, 0, l->attn_ln_gamma},
        {L1 "attention.output.LayerNorm.bias", 20, 0, l->attn_ln_beta},
        {L1 "intermediate.dense.weight", 36, 20, l->inter_w},
        {L1 "intermediate.dense.bias", 36, 0, l->inter_b},
        {L1 "output.dense.weight", 20, 36, l->out_w},
        {L1 "output.dense.bias", 20, 0, l->out_b},
        {L1 "output.LayerNorm.weight", 20, 0, l->out_ln_gamma},
        {L1 "output.LayerNorm.bias", 20, 0, l->out_ln_beta},
        {"bert.pooler.dense.weight", 20, 20, w.pooler_w},
        {"bert.pooler.dense.bias", 20, 0, w.pooler_b},
    };
    char path[256], err[512] = "";
    tmp_path(path, "model.safetensors");
    st_file f;
    cr_assert_eq(st_load(path, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.count, 5 + 2 * 16 + 2);
    float got[36 * 20]; /* the largest tensor */
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const st_tensor *t = st_find(&f, want[k].name);
        cr_assert_not_null(t, "%s not written", want[k].name);
        cr_assert_eq(t->ndim, want[k].cols ? 2 : 1, "%s", want[k].name);
        cr_assert(t->shape[0] == want[k].rows && (!want[k].cols || t->shape[1] == want[k].cols),
                  "%s", want[k].name);
        cr_assert(t->count <= sizeof got / sizeof got[0]);
        cr_assert_eq(st_to_f32(t, got), 0);
        assert_array(got, want[k].data, t->count, EXACT, want[k].name);
    }
    cr_assert_eq(bert_tensor_count(&w), f.count);
    st_free(&f);
    bert_weights_free(&w);
}

/* ---- what the loader accepts beyond the plain layout ---- */

Test(bert_model, extra_tensors_ignored)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, "bert.");
    rewrite(&(edit){.extra = 1});
    assert_loads_as(&c, &w, EXACT);
    bert_weights_free(&w);
}

Test(bert_model, old_layer_norm_names)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, NULL);
    rewrite(&(edit){.rename_from = "embeddings.LayerNorm.weight",
                    .rename_to = "embeddings.LayerNorm.gamma"});
    rewrite(&(edit){.rename_from = "encoder.layer.1.output.LayerNorm.bias",
                    .rename_to = "encoder.layer.1.output.LayerNorm.beta"});
    assert_loads_as(&c, &w, EXACT);
    bert_weights_free(&w);
}

Test(bert_model, without_pooler)
{
    bert_config c;
    bert_weights w;
    char err[512] = "";
    save_small(&c, &w, 0, NULL);
    rewrite(&(edit){.drop = "pooler.dense.weight", .drop2 = "pooler.dense.bias"});
    bert_model m;
    cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(m.weights.has_pooler, 0);
    cr_assert(!m.weights.pooler_w && !m.weights.pooler_b);
    assert_array(m.weights.layers[1].out_ln_beta, w.layers[1].out_ln_beta, 20, EXACT, "beta");
    cr_assert_eq(bert_tensor_count(&m.weights), 5 + 2 * 16);
    bert_model_free(&m);
    bert_weights_free(&w);
}

/* ---- model.safetensors refused ---- */

Test(bert_model, missing_tensor)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, NULL);
    rewrite(&(edit){.drop = "encoder.layer.1.intermediate.dense.bias"});
    REFUSED("model.safetensors", "'encoder.layer.1.intermediate.dense.bias'", "[36]");
    bert_weights_free(&w);
}

Test(bert_model, missing_tensor_with_prefix)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 1, "bert.");
    rewrite(&(edit){.drop = "bert.encoder.layer.0.attention.self.key.weight"});
    REFUSED("model.safetensors", "'bert.encoder.layer.0.attention.self.key.weight'", "[20, 20]");
    bert_weights_free(&w);
}

Test(bert_model, missing_pooler_bias)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, NULL);
    rewrite(&(edit){.drop = "pooler.dense.bias"});
    REFUSED("model.safetensors", "'pooler.dense.bias'");
    bert_weights_free(&w);
}

Test(bert_model, wrong_shape)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, NULL);
    rewrite(&(edit){.transpose = "encoder.layer.0.intermediate.dense.weight"});
    REFUSED("model.safetensors", "'encoder.layer.0.intermediate.dense.weight'", "[20, 36]",
            "expected [36, 20]");
    bert_weights_free(&w);
}

Test(bert_model, unsupported_dtype)
{
    bert_config c;
    bert_weights w;
    save_small(&c, &w, 0, NULL);
    rewrite(&(edit){.retype = "embeddings.position_embeddings.weight"});
    REFUSED("model.safetensors", "'embeddings.position_embeddings.weight'", "I32");
    bert_weights_free(&w);
}

/* A checkpoint of 4 layers with num_hidden_layers 2: layers 2 and 3 would go unused. */
Test(bert_model, more_layers_than_the_config)
{
    bert_config c = small_config();
    c.num_hidden_layers = 4;
    tiny_bert_write(tmpdir, &(tiny_bert){.config = c, .seed = 7, .prefix = "bert."}, NULL);
    edit_config("num_hidden_layers", cJSON_CreateNumber(2));
    REFUSED("model.safetensors", "'bert.encoder.layer.2.", "num_hidden_layers is 2");
}

/* ---- config.json refused ---- */

static void save_with(bert_config c)
{
    tiny_bert_write(tmpdir, &(tiny_bert){.config = c, .seed = 7}, NULL);
}

Test(bert_model, hidden_act_not_gelu)
{
    static const char *const acts[] = {"relu", "gelu_new", "gelu_python", "gelu_pytorch_tanh"};
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
        bert_config c = small_config();
        strcpy(c.hidden_act, acts[k]);
        save_with(c);
        REFUSED("config.json", "hidden_act", acts[k], "only \"gelu\"");
    }
    edit_config("hidden_act", cJSON_CreateNumber(1));
    REFUSED("config.json", "hidden_act");
}

Test(bert_model, missing_config_fields)
{
    static const char *const keys[] = {
        "hidden_size",       "num_hidden_layers",       "num_attention_heads",
        "intermediate_size", "max_position_embeddings", "type_vocab_size",
        "vocab_size"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        save_with(small_config());
        edit_config(keys[k], NULL);
        REFUSED("config.json", keys[k], "missing");
    }
}

Test(bert_model, bad_config_values)
{
    save_with(small_config());
    edit_config("intermediate_size", cJSON_CreateNumber(0));
    REFUSED("config.json", "intermediate_size", "positive integer");
    edit_config("intermediate_size", cJSON_CreateNumber(36.5));
    REFUSED("config.json", "intermediate_size", "positive integer");
    edit_config("intermediate_size", cJSON_CreateString("36"));
    REFUSED("config.json", "intermediate_size");
    edit_config("intermediate_size", cJSON_CreateNumber(36));
    edit_config("layer_norm_eps", cJSON_CreateNumber(-1));
    REFUSED("config.json", "layer_norm_eps");
    edit_config("layer_norm_eps", cJSON_CreateNumber(1e-12));
    edit_config("position_embedding_type", cJSON_CreateString("relative_key"));
    REFUSED("config.json", "position_embedding_type", "absolute");
}

/* Another family's folder is named as such, not read as BERT; absent, model_type is no error. */
Test(bert_model, other_model_type)
{
    save_with(small_config());
    edit_config("model_type", cJSON_CreateString("mpnet"));
    REFUSED("config.json", "model_type", "mpnet", "BERT");
    edit_config("model_type", cJSON_CreateNumber(1));
    REFUSED("config.json", "model_type", "not a string");
    edit_config("model_type", NULL);
    char err[512] = "";
    bert_model m;
    cr_assert_eq(bert_model_load(tmpdir, &m, err, sizeof err), 0, "%s", err);
    bert_model_free(&m);
}

Test(bert_model, hidden_size_not_divisible_by_heads)
{
    bert_config c = small_config();
    c.num_attention_heads = 3;
    save_with(c);
    REFUSED("config.json", "hidden_size", "num_attention_heads");
}

Test(bert_model, config_not_json)
{
    save_with(small_config());
    char path[256];
    tmp_path(path, "config.json");
    FILE *f = fopen(path, "wb");
    fputs("{\"hidden_size\": 20,", f);
    fclose(f);
    REFUSED("config.json", "JSON");
}

Test(bert_model, missing_files)
{
    REFUSED("config.json", "cannot open");
    save_with(small_config());
    char path[256];
    tmp_path(path, "model.safetensors");
    cr_assert_eq(unlink(path), 0);
    REFUSED("model.safetensors", "cannot open");
    char err[512] = "";
    bert_model m;
    cr_assert_eq(bert_model_load("/nonexistent/vkbert", &m, err, sizeof err), -1);
    cr_assert(strstr(err, "/nonexistent/vkbert/config.json"), "%s", err);
}

/* ---- random weights ---- */

static void assert_within(const float *a, size_t n, double lo, double hi, const char *what)
{
    for (size_t k = 0; k < n; k++)
        cr_assert(a[k] >= lo && a[k] <= hi, "%s[%zu] = %g outside [%g, %g]", what, k, a[k], lo, hi);
}

Test(bert_model, random_is_deterministic_and_scaled)
{
    bert_config c = small_config();
    bert_weights a, b, d;
    cr_assert_eq(bert_weights_random(&c, 5, &a), 0);
    cr_assert_eq(bert_weights_random(&c, 5, &b), 0);
    cr_assert_eq(bert_weights_random(&c, 6, &d), 0);
    cr_assert_eq(memcmp(a.layers[1].out_w, b.layers[1].out_w, 20 * 36 * sizeof(float)), 0);
    cr_assert_neq(memcmp(a.layers[1].out_w, d.layers[1].out_w, 20 * 36 * sizeof(float)), 0);
    assert_within(a.word, 30 * 20, -1, 1, "word");
    assert_within(a.ln_gamma, 20, 0.9, 1.1, "ln_gamma");
    assert_within(a.layers[0].attn_ln_beta, 20, -0.1, 0.1, "attn_ln_beta");
    assert_within(a.layers[0].q_w, 20 * 20, -1 / sqrt(20), 1 / sqrt(20), "q_w");
    assert_within(a.layers[0].out_w, 20 * 36, -1 / sqrt(36), 1 / sqrt(36), "out_w");
    assert_within(a.layers[0].out_b, 20, -1 / sqrt(36), 1 / sqrt(36), "out_b");
    /* And it fills its range: a bound far below 1/sqrt(fan_in) would pass the check above. */
    double top = 0;
    for (int k = 0; k < 20 * 36; k++)
        top = fmax(top, fabs(a.layers[0].out_w[k]));
    cr_assert(top > 0.8 / sqrt(36), "out_w is scaled too small: max %g", top);
    bert_weights_free(&a);
    bert_weights_free(&b);
    bert_weights_free(&d);
}
