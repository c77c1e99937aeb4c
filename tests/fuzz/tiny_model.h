/* The model fuzz_config loads its config.json against, shared with the regression tests that
 * replay its inputs (tests/fuzz/test_fuzz_regressions.c): every size different, so that a config
 * that swaps two fields fails. */
#ifndef VKBERT_FUZZ_TINY_MODEL_H
#define VKBERT_FUZZ_TINY_MODEL_H

#include "io/bert_model.h"

static const bert_config tiny = {
    .hidden_size = 4,
    .num_hidden_layers = 1,
    .num_attention_heads = 2,
    .intermediate_size = 6,
    .max_position_embeddings = 5,
    .type_vocab_size = 2,
    .vocab_size = 7,
    .layer_norm_eps = 1e-12,
    .hidden_act = "gelu",
};

#endif
