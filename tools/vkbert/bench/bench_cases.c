/* The cases of `vkbert bench`, in the order they run and are listed (bench_case.h). */
#include "bench_case.h"
#include "bench_mixed.h"

const bench_case bench_cases[] = {
    {"matmul-1024x768x768", 1024, 768, 768, 0, 0, 0, 0, 0, 0, 0},
    {"matmul-1024x3072x768", 1024, 3072, 768, 0, 0, 0, 0, 0, 0, 0},
    {"matmul-1024x768x3072", 1024, 768, 3072, 0, 0, 0, 0, 0, 0, 0},
    {"attention-base-b1-s128", 0, 0, 0, 1, 128, 768, 12, 0, 0, 0},
    {"attention-base-b8-s128", 0, 0, 0, 8, 128, 768, 12, 0, 0, 0},
    {"attention-base-b32-s128", 0, 0, 0, 32, 128, 768, 12, 0, 0, 0},
    {"attention-base-b1-s512", 0, 0, 0, 1, 512, 768, 12, 0, 0, 0},
    {"attention-minilm-b8-s128", 0, 0, 0, 8, 128, 384, 12, 0, 0, 0},
    {"attention-base-b1-s4096", 0, 0, 0, 1, 4096, 768, 12, 0, 0, 0},
    /* BERT-base (12 layers) and MiniLM-L6 (6 layers, E 384), random weights, 30522 words */
    {"encoder-base-b1-s128", 0, 0, 0, 1, 128, 768, 12, 12, 3072, 0},
    {"encoder-base-b8-s128", 0, 0, 0, 8, 128, 768, 12, 12, 3072, 0},
    {"encoder-base-b32-s128", 0, 0, 0, 32, 128, 768, 12, 12, 3072, 0},
    {"encoder-minilm-b1-s128", 0, 0, 0, 1, 128, 384, 12, 6, 1536, 0},
    {"encoder-minilm-b8-s128", 0, 0, 0, 8, 128, 384, 12, 6, 1536, 0},
    {"encoder-minilm-b32-s128", 0, 0, 0, 32, 128, 384, 12, 6, 1536, 0},
    /* MiniLM-L6 over 256 texts of mixed lengths (bench_mixed.h), sentence embeddings in
     * batches of 32: in arrival order, longest first (sentence-transformers), or packed */
    {"encoder-minilm-mixed-padded", 0, 0, 0, BENCH_MIXED_BATCH, BENCH_MIXED_MAX, 384, 12, 6, 1536,
     BENCH_MIXED_PADDED},
    {"encoder-minilm-mixed-sorted", 0, 0, 0, BENCH_MIXED_BATCH, BENCH_MIXED_MAX, 384, 12, 6, 1536,
     BENCH_MIXED_SORTED},
    {"encoder-minilm-mixed-ragged", 0, 0, 0, BENCH_MIXED_BATCH, BENCH_MIXED_MAX, 384, 12, 6, 1536,
     BENCH_MIXED_RAGGED},
    /* No shape: a folder's load (bench_load.c), run only when named. */
    {"load-base", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};

_Static_assert(sizeof bench_cases / sizeof *bench_cases == BENCH_CASE_COUNT,
               "BENCH_CASE_COUNT must be the number of cases");
