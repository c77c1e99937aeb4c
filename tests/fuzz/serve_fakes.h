/* Stand-ins for what vkbert serve's routes call beyond their own files (serve_fakes.c): the
 * model's public API over the io tokenizer of a tiny vocabulary, and a queue that answers at
 * once without a device or a thread. fuzz_serve_request runs the real routes against them. */
#ifndef VKBERT_FUZZ_SERVE_FAKES_H
#define VKBERT_FUZZ_SERVE_FAKES_H

#include "serve.h"

/* What the fake queue does with the next work. */
typedef enum fake_outcome {
    FAKE_DONE,       /* finite rows */
    FAKE_NAN,        /* a NaN among the rows */
    FAKE_FAILED,     /* SERVE_FAILED, as a batch the device refused */
    FAKE_INVALID,    /* SERVE_FAILED with VKBERT_ERROR_INVALID_ARGUMENT */
    FAKE_LOST,       /* SERVE_FAILED with VKBERT_ERROR_DEVICE_LOST */
    FAKE_OVERLOADED, /* SERVE_OVERLOADED */
    FAKE_UNHEALTHY,  /* SERVE_UNHEALTHY */
    FAKE_GONE,       /* SERVE_GONE: the client left */
} fake_outcome;

/* The model's shape, set before each request. */
typedef struct fake_model_shape {
    int labels;     /* 0: embeddings; 1: a re-ranker; more: a classifier */
    int max_length; /* the tokenizer's limit */
} fake_model_shape;

/* The model and its context, and a queue; NULL when the vocabulary cannot load. */
vkbert_model *fake_model(void);
vkbert_context *fake_context(void);
serve_queue *fake_queue(void);

void fake_model_set(const fake_model_shape *shape);
void fake_queue_set(fake_outcome outcome, int healthy);

#endif
