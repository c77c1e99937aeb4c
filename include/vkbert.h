/*
 * vkbert: BERT-style transformer attention on any GPU through Vulkan compute.
 *
 * What an application needs (vkbert_bench.h adds the benchmarks and tuning, vkbert_vulkan.h
 * the interop with a caller's Vulkan). Every call returns a vkbert_status; on failure the
 * context keeps a message (vkbert_last_error). The library never aborts and never prints.
 *
 * The calls come in the order a newcomer needs them: the version and statuses; a context; a
 * model folder, from texts to embeddings, rerank scores and labels; its tokenizer; the same
 * model fed token ids (servers); then the lower layers: the BERT encoder, the attention layer,
 * device tensors and asynchronous jobs. Sentence embeddings in four calls:
 *     vkbert_context *ctx;  vkbert_model *model;
 *     vkbert_context_create(NULL, &ctx);
 *     vkbert_model_load(ctx, "path/to/all-MiniLM-L6-v2", NULL, &model);
 *     vkbert_model_embed(model, texts, count, NULL, embeddings); // [count][dimension]
 * (docs/c-api.md has the whole guide.)
 *
 * Threads: every call is thread-safe. Calls on a context, and on the tensors, layers and
 * encoders made from it, hold the context's lock and run one at a time; separate contexts run
 * in parallel. The encoder's calls and jobs let go of the lock while the device runs their
 * pass, so other calls on the context proceed meanwhile (vkbert_job_wait). vkbert_last_error
 * gives each thread the message of its own last failure. Destroy layers, encoders and tensors
 * before their context, and nothing while another thread is using it.
 *
 * Faults: out of memory leaves the context usable; VKBERT_ERROR_DEVICE_LOST (a lost device or
 * a timeout) makes every later call on the context fail the same way.
 *
 * Layout conventions: tensors are float32 (token ids int32), row-major, shapes outermost
 * first. Weights use PyTorch's nn.Linear layout, W[out][in], so a linear layer is
 * y = x * W^T + b.
 *
 * Structs that may grow: each starts with `struct_size`, set by its _INIT macro
 *     vkbert_context_options o = VKBERT_CONTEXT_OPTIONS_INIT;
 * which leaves every other field 0, and 0 is always the default. The library reads only the
 * struct_size bytes the caller's header knew (a struct_size of 0, or below the struct's size in
 * the version that introduced it, is VKBERT_ERROR_INVALID_ARGUMENT; one larger than this
 * library's struct is accepted when the bytes it does not know are all 0), and writes only
 * struct_size bytes of the structs it fills in (vkbert_device_info, vkbert_encoding, the
 * benchmark results). A NULL options or config pointer means all defaults. Enum values are
 * explicit and never renumbered (docs/c-api.md, "ABI").
 */
#ifndef VKBERT_H
#define VKBERT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports: on Windows, dllexport while building the DLL and dllimport for
 * its users (VKBERT_STATIC for the static library's); elsewhere, default visibility while
 * building (everything else is hidden). */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(VKBERT_BUILDING_LIBRARY)
#define VKBERT_API __declspec(dllexport)
#elif defined(VKBERT_STATIC)
#define VKBERT_API
#else
#define VKBERT_API __declspec(dllimport)
#endif
#elif defined(VKBERT_BUILDING_LIBRARY) && defined(__GNUC__)
#define VKBERT_API __attribute__((visibility("default")))
#else
#define VKBERT_API
#endif

/* What every _INIT macro expands to: struct_size set, every other field 0. Designated in C,
 * so that -Wextra's -Wmissing-field-initializers stays quiet; in C++, where designators need
 * C++20 and a partial brace list warns, a value-initialised copy (C++11). */
#ifdef __cplusplus
#define VKBERT_STRUCT_INIT_(type)                                                                  \
    ([] {                                                                                          \
        type s_ = type();                                                                          \
        s_.struct_size = sizeof(type);                                                             \
        return s_;                                                                                 \
    }())
#else
#define VKBERT_STRUCT_INIT_(type)                                                                  \
    {                                                                                              \
        .struct_size = sizeof(type)                                                                \
    }
#endif

/* The version of this header. CMakeLists.txt reads it from here. */
#define VKBERT_VERSION_MAJOR 0
#define VKBERT_VERSION_MINOR 4
#define VKBERT_VERSION_PATCH 0
#define VKBERT_VERSION_NUMBER                                                                      \
    (VKBERT_VERSION_MAJOR * 10000 + VKBERT_VERSION_MINOR * 100 + VKBERT_VERSION_PATCH)

/* The version of the library loaded: VKBERT_VERSION_NUMBER as it was built, and "0.4.0".
 * Before 1.0 a library runs programs built against a header of the same major and minor
 * version; from 1.0, of the same major version (docs/c-api.md, "ABI"). */
VKBERT_API unsigned vkbert_version(void);
VKBERT_API const char *vkbert_version_string(void);

typedef enum vkbert_status {
    VKBERT_OK = 0,
    VKBERT_ERROR_INVALID_ARGUMENT = 1, /* a NULL pointer, a bad shape, an inconsistent option */
    VKBERT_ERROR_NO_VULKAN = 2,        /* no Vulkan loader, or no driver behind it */
    VKBERT_ERROR_NO_DEVICE = 3,        /* no device matches, or none is usable (needs Vulkan 1.1) */
    /* The shape needs more than the device allows; or a model call's result is not finite (inf
     * or NaN: weights or activations beyond the range of float32, or fp16's), its outputs
     * written all the same. */
    VKBERT_ERROR_DEVICE_LIMIT = 4,
    VKBERT_ERROR_OUT_OF_MEMORY = 5, /* host or device memory ran out */
    VKBERT_ERROR_VULKAN = 6,        /* a Vulkan call failed; the message names it */
    VKBERT_ERROR_VALIDATION = 7,    /* the validation layer reported a message (tests only) */
    /* The device was lost, or did not finish within the context's timeout: the context
     * refuses every later call with this status; destroy it and make a new one. */
    VKBERT_ERROR_DEVICE_LOST = 8,
    /* A file that exists but is not what it claims: bad JSON, a bad safetensors or .npy
     * header, a missing or misshapen tensor, a bad vocabulary. The message names the file and
     * the field. A file that is missing or cannot be opened is VKBERT_ERROR_INVALID_ARGUMENT:
     * the path is the caller's. */
    VKBERT_ERROR_MALFORMED_FILE = 9,
    VKBERT_NOT_READY = 10, /* not an error: a job still running (vkbert_job_poll) */
} vkbert_status;

/* A constant name for a status, such as "VKBERT_ERROR_DEVICE_LIMIT". */
VKBERT_API const char *vkbert_status_name(vkbert_status status);

/* ------------------------------------------------------------------- contexts and devices ---- */

typedef struct vkbert_context vkbert_context;

/* The environment (docs/environment.md has every variable) is read once, when a context is
 * made: a variable set or changed later is not seen by that context, only by contexts made
 * after it (vkbert_bench_override changes the tuning ones on a live context). An empty
 * variable counts as unset; a bad value fails context creation with
 * VKBERT_ERROR_INVALID_ARGUMENT and a message naming the variable.
 *   VKBERT_DEVICE, VKBERT_VALIDATION=0|1, VKBERT_LIMITS, VKBERT_TIMEOUT_MS
 *                              as the options of the same names below
 *   VKBERT_CACHE_DIR           the on-disk caches' directory, "off" for none (as cache_dir)
 *   VKBERT_FORCE_STAGING=0|1   device-only memory and staging copies, as on discrete GPUs
 *   VKBERT_LOAD_THREADS=N      threads (1 to 64) that convert, pack and copy weights while a
 *                              model loads; else the processors, at most 8
 *   VKBERT_FAULT_LOST_AFTER_PASSES=N  a test hook: encoder passes after the first N fail as on
 *                              a lost device (VKBERT_ERROR_DEVICE_LOST, the context lost)
 * and the tuning variables, which override the tuning cache and the built-in table:
 *   VKBERT_KERNELS=simd|gpu    the kernel family (else by the device's type)
 *   VKBERT_ATTENTION=fused|unfused  the attention path
 *   VKBERT_MATMUL_TILES=wg_x,wg_y,tm,tn4[,bk]  the matmul tiles (bk 0: no shared memory)
 *   VKBERT_MATMUL_FALLBACK=0|1 1: the gpu family's matmul without shared memory
 *   VKBERT_SIMD_SHUFFLE=0|1    0: the simd family's kernels share no rows by subgroup shuffles
 *   VKBERT_INT8_PATH=dot|dequant  how VKBERT_PRECISION_INT8's layer matmuls run: activations
 *                              quantized per row and 8-bit integer dot products
 *                              (VK_KHR_shader_integer_dot_product), or the weights dequantized
 *                              in the matmul (every device). Else the tuning cache, else dot
 *                              only where the driver calls it accelerated. dot on a device
 *                              without integer dot products: VKBERT_ERROR_DEVICE_LIMIT at
 *                              context creation (or at the layer's creation, when set by
 *                              vkbert_bench_override). Read when an encoder or attention layer
 *                              is made: its weights' layout follows it. */
typedef struct vkbert_context_options {
    uint32_t struct_size; /* VKBERT_CONTEXT_OPTIONS_INIT */
    /* Device: a decimal index or a substring of the device name. NULL or "" means the
     * environment variable VKBERT_DEVICE, else the first discrete GPU, then integrated, then
     * virtual, then CPU. */
    const char *device;
    /* Enables VK_LAYER_KHRONOS_validation with synchronization validation. Messages are
     * counted (vkbert_validation_messages), and a call during which one arrived fails with
     * VKBERT_ERROR_VALIDATION. Also enabled by the environment variable VKBERT_VALIDATION=1. */
    int validation;
    /* Records timestamp queries around each dispatch (vkbert_attention_timings). */
    int timestamps;
    /* Lowers device limits and turns off features, as a small device has them: a comma-separated
     * list of name=value limits, feature switches and `minimum` (docs/environment.md,
     * "VKBERT_LIMITS", has the grammar). Applied after the environment variable VKBERT_LIMITS
     * of the same form. An unknown name or a bad value fails context creation.
     * vkbert_context_device reports the result. NULL: none. */
    const char *limits;
    /* How long one submission may run before the context reports VKBERT_ERROR_DEVICE_LOST;
     * 0: the environment variable VKBERT_TIMEOUT_MS, else 600000 (ten minutes). */
    uint32_t timeout_ms;
    /* The directory of the on-disk caches (compiled pipelines, tuning results; created when
     * missing), as the environment variable VKBERT_CACHE_DIR, which it overrides: NULL or ""
     * means that variable, else vkbert in the user's cache folder ($XDG_CACHE_HOME, ~/.cache,
     * %LOCALAPPDATA% on Windows); "off": no caches.
     * A cache is never a reason to fail: one that cannot be read or written is skipped. */
    const char *cache_dir;
} vkbert_context_options;
#define VKBERT_CONTEXT_OPTIONS_INIT VKBERT_STRUCT_INIT_(vkbert_context_options)

/* Creates a context: instance, device, compute queue, pipeline cache, memory. `options` may
 * be NULL. On failure *out is NULL and the message is in vkbert_last_error(NULL). */
VKBERT_API vkbert_status vkbert_context_create(const vkbert_context_options *options,
                                               vkbert_context **out);
VKBERT_API void vkbert_context_destroy(vkbert_context *ctx);

/* The message of the last failed call on `ctx`, or of the last failed call without a context
 * in this thread when `ctx` is NULL: context creation, device listing, tokenizers, and every
 * call whose handle (the context, layer, encoder, model or tokenizer it works on, or the tensor
 * of vkbert_tensor_shape) is NULL. Never NULL. */
VKBERT_API const char *vkbert_last_error(const vkbert_context *ctx);

typedef enum vkbert_device_type {
    VKBERT_DEVICE_OTHER = 0,
    VKBERT_DEVICE_INTEGRATED_GPU = 1,
    VKBERT_DEVICE_DISCRETE_GPU = 2,
    VKBERT_DEVICE_VIRTUAL_GPU = 3,
    VKBERT_DEVICE_CPU = 4,
} vkbert_device_type;

/* Filled in by the library: set struct_size (VKBERT_DEVICE_INFO_INIT) first. */
typedef struct vkbert_device_info {
    uint32_t struct_size;
    char name[256];
    char driver[256]; /* driver name and version string */
    vkbert_device_type type;
    uint32_t vendor_id, device_id; /* PCI ids, as Vulkan reports them */
    uint32_t api_version;          /* VK_MAKE_API_VERSION packed */
    uint64_t device_local_bytes;   /* size of the largest device-local heap */
    uint32_t subgroup_size;
    uint32_t shared_memory_bytes; /* maxComputeSharedMemorySize */
    uint32_t max_storage_buffer_range;
    uint32_t max_storage_buffers; /* per stage */
    uint32_t max_workgroup_invocations;
    int fp16_storage;    /* storageBuffer16BitAccess */
    int fp16_arithmetic; /* shaderFloat16 */
    int usable;          /* Vulkan 1.1 and a compute queue */
    /* VK_EXT_subgroup_size_control's (core in Vulkan 1.3) subgroupSizeControl, 0 or 1, and the
     * subgroup sizes a pipeline may require: 0 when the device does not say. */
    int subgroup_size_control;
    uint32_t min_subgroup_size, max_subgroup_size;
} vkbert_device_info;
#define VKBERT_DEVICE_INFO_INIT VKBERT_STRUCT_INIT_(vkbert_device_info)

/* A short name of a device type: "discrete", "integrated", "virtual", "cpu", "other". */
VKBERT_API const char *vkbert_device_type_name(vkbert_device_type type);

/* Lists the Vulkan devices. Writes up to `capacity` entries and sets *count to the number of
 * devices. Each entry written must have its struct_size set, the same in all of them: it is
 * the array's stride (infos may be NULL to count). On failure the message is in
 * vkbert_last_error(NULL). */
VKBERT_API vkbert_status vkbert_list_devices(vkbert_device_info *infos, uint32_t capacity,
                                             uint32_t *count);

/* The device the context runs on, with the limits and switches of its options applied.
 * Set info->struct_size first. */
VKBERT_API vkbert_status vkbert_context_device(const vkbert_context *ctx, vkbert_device_info *info);

/* The start-up cost: milliseconds that vkbert_context_create took (instance, device, the
 * on-disk caches), and the total spent creating compute pipelines on this context so far.
 * Pipelines are compiled on first use and kept in a cache on disk (docs/performance.md,
 * "Caches and tuning"), so the second run of a program spends much less there. Either pointer
 * may be NULL. */
VKBERT_API vkbert_status vkbert_context_startup_ms(const vkbert_context *ctx, double *context_ms,
                                                   double *pipelines_ms);

/* Number of validation messages so far; the text of the first is copied to `first` if given. */
VKBERT_API uint32_t vkbert_validation_messages(const vkbert_context *ctx, char *first,
                                               size_t first_size);

/* Bytes of device memory the context has allocated, and of those in use by live objects. */
VKBERT_API vkbert_status vkbert_context_memory(const vkbert_context *ctx, uint64_t *allocated,
                                               uint64_t *in_use);

/* ------------------------------------------------- models: a folder, from text to results ---- */

/* A model folder from text to results, with the folder's own pipeline: a HuggingFace BertModel
 * or BertForSequenceClassification folder, or a sentence-transformers folder (modules.json:
 * Transformer, Pooling, Dense, Normalize; sentence_bert_config.json;
 * config_sentence_transformers.json's prompts). A folder without modules.json mean-pools and
 * does not normalize. The calls that run on the device (load, embed, rerank, classify,
 * describe, destroy) hold the context's lock; the others only read the loaded model. A load
 * holds it only for its device steps, as vkbert_encoder_load does. */
typedef struct vkbert_model vkbert_model;

/* How a model's, an encoder's or an attention layer's weights are stored. */
typedef enum vkbert_precision {
    VKBERT_PRECISION_FP32 = 0, /* relative L2 error <= 1e-5 against float64 */
    /* Weights and activations (Q, K, V and the attention output) stored as fp16, half the
     * memory and bandwidth; accumulation, softmax and the layer's input and output fp32:
     * relative L2 error <= 3e-3. Works on every device: halves are stored in pairs, no 16-bit
     * storage feature needed. A head longer than 256 runs the unfused path with fp16 weights
     * and fp32 activations. Values beyond fp16's range (65504) become infinite. */
    VKBERT_PRECISION_FP16 = 1,
    /* The dense weights (attention Q, K, V and output, intermediate, output, pooler,
     * classifier, sentence-transformers Dense) stored as int8 with one fp32 scale per block of
     * 32 along the input dimension (ggml's Q8_0), quantized while loading and dequantized in
     * the matmul: 0.28x fp32's weight memory. The word table is stored as fp16 (as with FP16);
     * position and type tables, biases, LayerNorms and every activation stay fp32. Sentence
     * embeddings' cosine with fp32's >= 0.998 on a 12-layer BERT-base shape. Works on every
     * device: plain 32-bit reads and shifts, no 8-bit storage or integer dot product needed. */
    VKBERT_PRECISION_INT8 = 2,
} vkbert_precision;

typedef struct vkbert_model_config {
    uint32_t struct_size; /* VKBERT_MODEL_CONFIG_INIT */
    vkbert_precision precision;
    /* NULL: the folder's pooling. Else sentence-transformers' mode names, joined by ',':
     * cls_token, max_tokens, mean_tokens, mean_sqrt_len_tokens, weightedmean_tokens,
     * lasttoken (or its pooling_mode strings cls, max, mean, weightedmean), concatenated in
     * that order whatever the order given. */
    const char *pooling;
    int normalize;   /* 0: as the folder says; 1: always; -1: never */
    int max_length;  /* 0: the folder's limit (vkbert_tokenizer_max_length) */
    int no_truncate; /* a text over the limit is an error instead of being cut */
} vkbert_model_config;
#define VKBERT_MODEL_CONFIG_INIT VKBERT_STRUCT_INIT_(vkbert_model_config)

/* Loads the folder; `config` may be NULL. A module vkbert cannot run (another type, a
 * pytorch_model.bin without safetensors) is an error that names the file. */
VKBERT_API vkbert_status vkbert_model_load(vkbert_context *ctx, const char *model_dir,
                                           const vkbert_model_config *config, vkbert_model **out);
VKBERT_API void vkbert_model_destroy(vkbert_model *model);
/* The width of an embedding: the pooling's, or the last Dense module's out_features. */
VKBERT_API int vkbert_model_dimension(const vkbert_model *model);

typedef struct vkbert_embed_options {
    uint32_t struct_size;    /* VKBERT_EMBED_OPTIONS_INIT */
    const char *prompt_name; /* one of the folder's prompts */
    const char *prompt;      /* a prompt's text; NULL and no name: the folder's default prompt */
    /* 0: as the model was loaded (vkbert_model_config.normalize, else the folder's Normalize
     * module); 1: always divide by the L2 norm; -1: never. For this call only. */
    int normalize;
} vkbert_embed_options;
#define VKBERT_EMBED_OPTIONS_INIT VKBERT_STRUCT_INIT_(vkbert_embed_options)

/* embeddings[count][dimension] of `count` texts, as SentenceTransformer(dir).encode(texts):
 * the prompt prepended, truncation, pooling, Dense modules, normalization. Any count works:
 * texts run in batches sorted by length; results are in input order. `options` may be NULL.
 * Stricter than encode(): a prompt and a prompt name together, or an unknown name, are errors
 * (encode() warns and takes the prompt). */
VKBERT_API vkbert_status vkbert_model_embed(vkbert_model *model, const char *const *texts,
                                            int count, const vkbert_embed_options *options,
                                            float *embeddings);

/* The number of labels of a classifier folder (BertForSequenceClassification), else 0, and
 * the name of label i (config.json's id2label, else "LABEL_i"). */
VKBERT_API int vkbert_model_labels(const vkbert_model *model);
VKBERT_API const char *vkbert_model_label(const vkbert_model *model, int index);

/* scores[count] of (query, document) pairs with a one-label cross-encoder: the logit through
 * the folder's activation_fn, else its sigmoid (sentence-transformers' CrossEncoder), or the
 * logit with `raw_scores`. */
VKBERT_API vkbert_status vkbert_model_rerank(vkbert_model *model, const char *query,
                                             const char *const *documents, int count,
                                             int raw_scores, float *scores);

/* scores[count][labels]: softmax over the logits for single-label classifiers, the sigmoid of
 * each logit for one label or multi_label_classification, the logits for regression (the
 * rule of transformers' text-classification pipeline); a cross-encoder folder's activation_fn
 * instead, as CrossEncoder.predict applies it. */
VKBERT_API vkbert_status vkbert_model_classify(vkbert_model *model, const char *const *texts,
                                               int count, float *scores);

/* What the model read and will do, as a JSON object (docs/cli.md, "vkbert info"): architecture,
 * sizes, tokenizer, lengths, pooling, Dense modules, normalization, prompts, labels,
 * parameters and precision. *json is allocated; free it with vkbert_free. */
VKBERT_API vkbert_status vkbert_model_describe(vkbert_model *model, char **json);
VKBERT_API void vkbert_free(void *memory);

/* Where a model's time has gone, in milliseconds of the host's monotonic clock, summed over
 * every call since it was loaded (read it before and after a call and subtract, to split that
 * call). What is not in it is the caller's: creating the context, writing results out. */
typedef struct vkbert_time_split {
    uint32_t struct_size; /* VKBERT_TIME_SPLIT_INIT */
    double load_ms;       /* vkbert_model_load: files read, weights converted and uploaded */
    double tokenize_ms;   /* texts to token ids (the text calls only) */
    /* Batches padded or packed, inputs written to the device, passes recorded and submitted. */
    double prepare_ms;
    double wait_ms;  /* waiting for the device to finish passes */
    double read_ms;  /* outputs read back from the device and put in input order */
    double gpu_ms;   /* the device's own time for the passes, by timestamps (0 without them) */
    uint64_t passes; /* passes run on the device */
} vkbert_time_split;
#define VKBERT_TIME_SPLIT_INIT VKBERT_STRUCT_INIT_(vkbert_time_split)

VKBERT_API vkbert_status vkbert_model_time_split(const vkbert_model *model, vkbert_time_split *out);

/* ----------------------------------------------------------------------------- tokenizers ---- */

/* The tokenizer of a model folder, as HuggingFace's fast tokenizer (AutoTokenizer) reads it:
 * tokenizer.json when present (the WordPiece, BPE or Unigram model with the normalizers,
 * pre-tokenizers, post-processors and decoders of HuggingFace tokenizers; a type or option
 * outside those vkbert runs is refused by name), else vocab.txt with tokenizer_config.json and
 * special_tokens_map.json. Special tokens typed in a text ("[MASK]") are matched whole first,
 * as HuggingFace does. Needs no context: a failure's message is in vkbert_last_error(NULL). A
 * tokenizer may be used by many threads at once. */
typedef struct vkbert_tokenizer vkbert_tokenizer;

VKBERT_API vkbert_status vkbert_tokenizer_load(const char *model_dir, vkbert_tokenizer **out);
VKBERT_API void vkbert_tokenizer_destroy(vkbert_tokenizer *tokenizer);

/* The folder's length limit, as sentence-transformers' Transformer sets it:
 * sentence_bert_config.json's max_seq_length when given, else tokenizer_config.json's
 * model_max_length, either capped at config.json's max_position_embeddings (512 when the
 * folder states none of them). */
VKBERT_API int vkbert_tokenizer_max_length(const vkbert_tokenizer *tokenizer);

/* One input as token ids: [CLS] text [SEP] (pair [SEP]) with the folder's template. The
 * tokenizers and vkbert_model_encode fill it in (set struct_size, VKBERT_ENCODING_INIT, first),
 * its arrays allocated: free them with vkbert_encoding_free. A caller may also make one by
 * hand, over arrays of its own, for vkbert_model_embed_inputs and _score_inputs. */
typedef struct vkbert_encoding {
    uint32_t struct_size; /* VKBERT_ENCODING_INIT */
    int32_t *ids;         /* [count], with the special tokens ([CLS] ... [SEP]) */
    int32_t *type_ids;    /* [count]; NULL in one made by hand: all 0 */
    int count;
    /* The leading tokens ([CLS] and a prompt's) left out of pooling: sentence-transformers'
     * include_prompt = false. vkbert_model_encode sets it; 0 from vkbert_tokenizer_encode and
     * for inputs made by hand. */
    int prompt_tokens;
    /* The length before truncation (count when not truncated); the _inputs calls ignore it. */
    int full_count;
    /* Since 0.4, filled by vkbert_tokenizer_encode and vkbert_model_encode when the caller's
     * struct_size reaches them (else left unallocated), freed by vkbert_encoding_free; the
     * _inputs calls ignore them. [count]: 1 for the tokens the post-processor or padding added
     * ([CLS], [SEP], <s>, padding), 0 for the text's own. */
    int32_t *special_tokens_mask;
    /* [2 * count]: each token's [start, stop) in characters (Unicode code points) of the text
     * it came from (text or pair, as tokenizers' Encoding.offsets in Python); (0, 0) for the
     * tokens the post-processor or padding added. */
    int32_t *offsets;
    /* [count]: 0 for the padding a tokenizer.json's padding section added
     * (VKBERT_TOKENIZER_FILE_RULES), else 1; NULL in one made by hand means all 1. */
    int32_t *attention_mask;
} vkbert_encoding;
#define VKBERT_ENCODING_INIT VKBERT_STRUCT_INIT_(vkbert_encoding)

/* vkbert_tokenizer_encode's max_length for the tokenizer.json's own truncation and padding
 * sections (none when absent), as tokenizers' Tokenizer.from_file(path).encode applies them. */
#define VKBERT_TOKENIZER_FILE_RULES (-2)

/* Encodes `text`, and `pair` unless NULL (UTF-8), truncated to `max_length` ids: 0 means the
 * folder's limit, -1 no limit, VKBERT_TOKENIZER_FILE_RULES the tokenizer.json's truncation and
 * padding. A pair is truncated longest-first as the fast tokenizer does (docs/model-folders.md,
 * "Lengths"). */
VKBERT_API vkbert_status vkbert_tokenizer_encode(const vkbert_tokenizer *tokenizer,
                                                 const char *text, const char *pair, int max_length,
                                                 vkbert_encoding *out);
VKBERT_API void vkbert_encoding_free(vkbert_encoding *encoding);
/* The text of `count` ids, as tokenizers' Tokenizer.decode: the tokens (the special ones left
 * out when `skip_special_tokens`) through the tokenizer.json's decoder. *text is allocated,
 * NUL-terminated: free it with vkbert_free. An id outside the vocabulary is
 * VKBERT_ERROR_INVALID_ARGUMENT naming it. */
VKBERT_API vkbert_status vkbert_tokenizer_decode(const vkbert_tokenizer *tokenizer,
                                                 const int32_t *ids, int count,
                                                 int skip_special_tokens, char **text);
/* The token of an id (NULL when out of range), and the id of a token (-1 when absent). */
VKBERT_API const char *vkbert_tokenizer_token(const vkbert_tokenizer *tokenizer, int32_t id);
VKBERT_API int32_t vkbert_tokenizer_token_id(const vkbert_tokenizer *tokenizer, const char *token);
/* The model's tokenizer, owned by the model. */
VKBERT_API const vkbert_tokenizer *vkbert_model_tokenizer(const vkbert_model *model);

/* --------------------------------------------------------- models: token ids in (servers) ---- */

/* For callers that tokenize, count and batch inputs themselves (`vkbert serve`): the model's
 * own pipeline in two halves. vkbert_model_encode tokenizes one input as vkbert_model_embed,
 * _rerank and _classify do; vkbert_model_embed_inputs and vkbert_model_score_inputs run any
 * such inputs, from one caller or many, as one padded batch (split only where the device's
 * limits or differing prompt_tokens require), with the results of the text calls. */
typedef struct vkbert_encode_options {
    uint32_t struct_size;    /* VKBERT_ENCODE_OPTIONS_INIT */
    const char *prompt_name; /* as vkbert_embed_options; for embeddings only */
    const char *prompt;
    /* 0: as the model was loaded (vkbert_model_config.no_truncate); 1: cut to the model's
     * limit; -1: an input over the limit is VKBERT_ERROR_INVALID_ARGUMENT, naming its length */
    int truncate;
    /* 1: cut from the start of the text instead of its end (TEI's truncation_direction
     * "Left"); the special tokens stay, a prompt's tokens go first. A pair keeps the lengths
     * longest-first gives it, each text cut from its start. */
    int truncate_left;
} vkbert_encode_options;
#define VKBERT_ENCODE_OPTIONS_INIT VKBERT_STRUCT_INIT_(vkbert_encode_options)

/* Tokenizes `text` (and `pair`, for a cross-encoder's (query, document), when not NULL) into
 * *out, whose arrays are allocated: free them with vkbert_encoding_free. The prompt (the
 * folder's default one unless options say otherwise; none by default for a classifier, as
 * vkbert_model_classify) is prepended to a text without a pair, and the offsets count the
 * characters of that whole (the prompt's first). Thread-safe: needs no lock and no device.
 * `options` may be NULL. */
VKBERT_API vkbert_status vkbert_model_encode(const vkbert_model *model, const char *text,
                                             const char *pair, const vkbert_encode_options *options,
                                             vkbert_encoding *out);

/* embeddings[count][vkbert_model_dimension] of the inputs, normalized as `normalize` says (as
 * vkbert_embed_options.normalize: 0 the model's, 1 always, -1 never). An id outside the
 * vocabulary, a type id outside [0, type_vocab_size), an input longer than the model's
 * max_position_embeddings or an empty one is VKBERT_ERROR_INVALID_ARGUMENT naming the input. */
VKBERT_API vkbert_status vkbert_model_embed_inputs(vkbert_model *model,
                                                   const vkbert_encoding *inputs, int count,
                                                   int normalize, float *embeddings);

/* scores[count][vkbert_model_labels] of a classifier's inputs: the logits with `raw_scores`,
 * else vkbert_model_classify's rule (the sigmoid of a one-label cross-encoder's logit is
 * vkbert_model_rerank's score). Inputs are checked as in vkbert_model_embed_inputs. */
VKBERT_API vkbert_status vkbert_model_score_inputs(vkbert_model *model,
                                                   const vkbert_encoding *inputs, int count,
                                                   int raw_scores, float *scores);

/* ----------------------------------------------------------------------- the BERT encoder ---- */

/* A HuggingFace BertModel (post-LayerNorm BERT): embeddings, layers, pooler. */
typedef struct vkbert_encoder vkbert_encoder;

typedef struct vkbert_encoder_config {
    uint32_t struct_size; /* VKBERT_ENCODER_CONFIG_INIT */
    /* FP16: the intermediate, output and pooler weights and the word table stored as fp16;
     * the attention layers (their weights and Q, K, V), the hidden states between layers, the
     * rest of the weights and all arithmetic stay fp32. (A lone attention layer made with FP16
     * stores its weights and activations as fp16: vkbert_precision.) */
    vkbert_precision precision;
} vkbert_encoder_config;
#define VKBERT_ENCODER_CONFIG_INIT VKBERT_STRUCT_INIT_(vkbert_encoder_config)

/* Loads DIR/config.json and DIR/model.safetensors (F32, F16 or BF16; names with or without
 * "bert."); `config` may be NULL (fp32). A config it cannot run (hidden_act other than "gelu",
 * ...) or a missing or misshapen tensor is an error that names it. The context's lock is held
 * only for the device steps (making buffers, staged copies): reading the folder and the host
 * work on the weights (VKBERT_LOAD_THREADS threads) leave the context to other calls. */
VKBERT_API vkbert_status vkbert_encoder_load(vkbert_context *ctx, const char *model_dir,
                                             const vkbert_encoder_config *config,
                                             vkbert_encoder **out);
VKBERT_API void vkbert_encoder_destroy(vkbert_encoder *encoder);
VKBERT_API int vkbert_encoder_hidden_size(const vkbert_encoder *encoder);

/* hidden[B][S][H] (and pooled[B][H] when not NULL) from input_ids[B][S]; token_type_ids
 * (NULL: all 0) and attention_mask (NULL: all 1; 0 = padding) are [B][S] too. The mask is
 * HuggingFace's additive one. The first call with a shape records the whole pass; later calls
 * replay it. */
VKBERT_API vkbert_status vkbert_encoder_forward_host(vkbert_encoder *encoder, int batch,
                                                     int seq_len, const int32_t *input_ids,
                                                     const int32_t *token_type_ids,
                                                     const int32_t *attention_mask, float *hidden,
                                                     float *pooled);

/* Sentence embeddings[B][H]: the mean of the last hidden states over the tokens whose mask is
 * not 0 (sentence-transformers' mean pooling), divided by its L2 norm when `normalize`; a
 * sequence without tokens gives zeros. Computed on the device by the same recorded pass. */
VKBERT_API vkbert_status vkbert_encoder_embed_host(vkbert_encoder *encoder, int batch, int seq_len,
                                                   const int32_t *input_ids,
                                                   const int32_t *token_type_ids,
                                                   const int32_t *attention_mask, int normalize,
                                                   float *embeddings);

/* -------------------------------------------------------------------- the attention layer ---- */

/* Host weights in PyTorch's layout: *_weight is [E][E] = [out][in], *_bias is [E]. It has a
 * size because it may grow: host weights in fp16 or bf16 need a dtype, and layers without
 * biases or with kdim/vdim other than E (torch.nn.MultiheadAttention's) more fields. */
typedef struct vkbert_attention_weights {
    uint32_t struct_size; /* VKBERT_ATTENTION_WEIGHTS_INIT */
    const float *q_weight, *q_bias;
    const float *k_weight, *k_bias;
    const float *v_weight, *v_bias;
    const float *out_weight, *out_bias;
} vkbert_attention_weights;
#define VKBERT_ATTENTION_WEIGHTS_INIT VKBERT_STRUCT_INIT_(vkbert_attention_weights)

/* The most dimensions of a mask or a device tensor. */
#define VKBERT_MAX_DIMS 4

typedef enum vkbert_dtype {
    VKBERT_DTYPE_FLOAT32 = 0,
    VKBERT_DTYPE_BOOL = 1, /* one byte, 0 or 1 */
    VKBERT_DTYPE_UINT8 = 2,
    VKBERT_DTYPE_INT32 = 3,
    VKBERT_DTYPE_INT64 = 4,
} vkbert_dtype;

/* An attention mask: 0 means masked, anything else means keep. Accepted shapes, for input
 * [B,S,E] and H heads:
 *   [S]                   shared key padding
 *   [B,S] or [B,1,1,S]    key padding (the usual BERT attention_mask)
 *   [B,S,S] or [B,1,S,S]  per query
 *   [B,H,S,S]             per head
 *   [S,S]                 shared by the batch (for example causal or banded)
 * and any 4-D shape whose dimensions are each 1 or full, as torch broadcasts to [B,H,S,S].
 * A 2-D mask that fits both [B,S] and [S,S] (B == S) is read as [S,S], as torch reads it;
 * pass [B,1,1,S] to mean key padding. A query row whose keys are all masked gets the zero
 * vector as attention output, so its y is out_bias. */
typedef struct vkbert_mask {
    uint32_t struct_size; /* VKBERT_MASK_INIT */
    const void *data;
    vkbert_dtype dtype;
    int ndim;
    int64_t shape[VKBERT_MAX_DIMS];
} vkbert_mask;
#define VKBERT_MASK_INIT VKBERT_STRUCT_INIT_(vkbert_mask)

typedef struct vkbert_attention_options {
    uint32_t struct_size; /* VKBERT_ATTENTION_OPTIONS_INIT */
    int causal;           /* also mask keys j > i */
    float dropout; /* training-mode dropout on the attention weights, 0 <= p <= 1; 0 = eval */
    uint64_t seed; /* Philox4x32-10 key: the same seed gives the same result on every device */
    /* HuggingFace BERT's mask semantics: (1 - mask) * float_min is added to the scores, so a
     * query row with every key masked attends uniformly to all keys instead of giving the
     * zero vector. */
    int additive_mask;
} vkbert_attention_options;
#define VKBERT_ATTENTION_OPTIONS_INIT VKBERT_STRUCT_INIT_(vkbert_attention_options)

typedef struct vkbert_attention vkbert_attention;

typedef struct vkbert_attention_config {
    uint32_t struct_size; /* VKBERT_ATTENTION_CONFIG_INIT */
    vkbert_precision precision;
} vkbert_attention_config;
#define VKBERT_ATTENTION_CONFIG_INIT VKBERT_STRUCT_INIT_(vkbert_attention_config)

/* Uploads the weights of a layer with embedding size E and H heads (E % H == 0). `config` may
 * be NULL (fp32). Fails with VKBERT_ERROR_DEVICE_LIMIT when the device lacks what the
 * precision needs. */
VKBERT_API vkbert_status vkbert_attention_create(vkbert_context *ctx, int embed_dim, int num_heads,
                                                 const vkbert_attention_weights *weights,
                                                 const vkbert_attention_config *config,
                                                 vkbert_attention **out);
VKBERT_API void vkbert_attention_destroy(vkbert_attention *layer);

/* y = attention(x) with host arrays: x and y are [B][S][E] floats; `mask` is NULL or one of
 * the mask shapes above (0 = masked); `options` may be NULL (eval, no causal). The first call
 * with a shape records a command buffer; later calls replay it. vkbert_attention_forward (with
 * the device tensors) keeps x and y on the device. */
VKBERT_API vkbert_status vkbert_attention_forward_host(vkbert_attention *layer, int batch,
                                                       int seq_len, const float *x,
                                                       const vkbert_mask *mask,
                                                       const vkbert_attention_options *options,
                                                       float *y);

/* A fixed pair, never grown (no struct_size): it is the stride of the arrays of timings. */
typedef struct vkbert_timing {
    const char *name; /* the dispatch, such as "qkv_projection" */
    double milliseconds;
} vkbert_timing;

/* Per-dispatch GPU times of the last forward, when the context was made with timestamps.
 * Writes up to `capacity` entries and sets *count. */
VKBERT_API vkbert_status vkbert_attention_timings(const vkbert_attention *layer,
                                                  vkbert_timing *timings, uint32_t capacity,
                                                  uint32_t *count);

/* A layer's weights from a safetensors file: q_proj, k_proj, v_proj and out_proj, each
 * ".weight" [E, E] (PyTorch layout [out][in]) and ".bias" [E], named with or without one common
 * prefix ("attn.", "layer.0.attention."), stored as F32, F16, BF16 or F64. Fills `weights`
 * (struct_size set first) with float32 host arrays for vkbert_attention_create and sets
 * *embed_dim to E. Needs no context: a failure's message is in vkbert_last_error(NULL).
 * vkbert_attention_weights_free releases the arrays (only weights this call filled). */
VKBERT_API vkbert_status vkbert_attention_weights_load(const char *path,
                                                       vkbert_attention_weights *weights,
                                                       int *embed_dim);
VKBERT_API void vkbert_attention_weights_free(vkbert_attention_weights *weights);

/* ------------------------------------------------------------------------- device tensors ---- */

/* A float32 tensor in device memory, for keeping activations on the GPU between calls.
 * Layout (what a Vulkan program sees through vkbert_vulkan.h): row-major, shapes outermost
 * first, each row of the last dimension padded to a multiple of 4 floats (the pitch: the last
 * dimension rounded up to 4) so that kernels read whole vec4s; rows follow one another at
 * that pitch. The padding is never read as data. */
typedef struct vkbert_tensor vkbert_tensor;

/* The bytes a tensor of this shape takes in that layout; 0 for a bad shape. */
VKBERT_API uint64_t vkbert_tensor_bytes(int ndim, const int64_t *shape);

VKBERT_API vkbert_status vkbert_tensor_create(vkbert_context *ctx, int ndim, const int64_t *shape,
                                              vkbert_tensor **out);
VKBERT_API void vkbert_tensor_destroy(vkbert_context *ctx, vkbert_tensor *tensor);
/* Copies `count` floats (must equal the element count) between host and device. */
VKBERT_API vkbert_status vkbert_tensor_write(vkbert_context *ctx, vkbert_tensor *tensor,
                                             const float *data, size_t count);
VKBERT_API vkbert_status vkbert_tensor_read(vkbert_context *ctx, const vkbert_tensor *tensor,
                                            float *data, size_t count);
/* The shape; returns ndim. `shape` may be NULL. */
VKBERT_API int vkbert_tensor_shape(const vkbert_tensor *tensor, int64_t shape[VKBERT_MAX_DIMS]);

/* Tensors of token ids. `dtype` is VKBERT_DTYPE_FLOAT32 (vkbert_tensor_create's) or
 * VKBERT_DTYPE_INT32. Both keep one layout: row-major, 4 bytes an element, each row of the
 * last dimension padded to a multiple of 4 elements (what vkbert_tensor_vulkan_buffer's
 * callers see). vkbert_tensor_write and _read refuse an int32 tensor, the _int32 calls a
 * float32 one; `count` must equal the element count. */
VKBERT_API vkbert_status vkbert_tensor_create_typed(vkbert_context *ctx, vkbert_dtype dtype,
                                                    int ndim, const int64_t *shape,
                                                    vkbert_tensor **out);
VKBERT_API vkbert_dtype vkbert_tensor_dtype(const vkbert_tensor *tensor);
VKBERT_API vkbert_status vkbert_tensor_write_int32(vkbert_context *ctx, vkbert_tensor *tensor,
                                                   const int32_t *data, size_t count);
VKBERT_API vkbert_status vkbert_tensor_read_int32(vkbert_context *ctx, const vkbert_tensor *tensor,
                                                  int32_t *data, size_t count);

/* vkbert_attention_forward_host with device tensors: x and y are [B,S,E]; `mask` is NULL or
 * a float32 tensor of one of vkbert_mask's shapes (0 = masked); `options` may be NULL (eval,
 * no causal). The first call with a shape records a command buffer; later calls replay it. */
VKBERT_API vkbert_status vkbert_attention_forward(vkbert_attention *layer, const vkbert_tensor *x,
                                                  const vkbert_tensor *mask,
                                                  const vkbert_attention_options *options,
                                                  vkbert_tensor *y);
/* The encoder's forward on device tensors of its context; the results stay on the device.
 * input_ids int32 [B,S]; token_type_ids int32 [B,S] or NULL (all 0); attention_mask int32 or
 * float32 [B,S], or NULL (all 1): 0 masks a token (padding; -0.0 too) and any other value
 * keeps it, as the host calls' rule; hidden float32 [B,S,H]; pooled float32 [B,H] or NULL (a
 * model with a pooler). The ids are checked on the device, during the pass: an input id
 * outside [0, vocab_size) or a token type outside [0, type_vocab_size) fails the call with
 * VKBERT_ERROR_INVALID_ARGUMENT ("input_ids holds an id outside [0, 30522)", or the same of
 * token_type_ids) once the pass has run; the outputs are then written but meaningless (a bad
 * input id embeds as zeros, a bad token type as type 0). The tensors' pass is recorded on
 * first use and replayed while the same tensors are passed. The lock is let go while the
 * device runs. */
VKBERT_API vkbert_status vkbert_encoder_forward(vkbert_encoder *encoder,
                                                const vkbert_tensor *input_ids,
                                                const vkbert_tensor *token_type_ids,
                                                const vkbert_tensor *attention_mask,
                                                vkbert_tensor *hidden, vkbert_tensor *pooled);
/* Sentence embeddings float32 [B,H] (mean pooling, L2-normalized when `normalize`) from
 * device tensors as vkbert_encoder_forward takes them, their ids checked as there. */
VKBERT_API vkbert_status vkbert_encoder_embed(vkbert_encoder *encoder,
                                              const vkbert_tensor *input_ids,
                                              const vkbert_tensor *token_type_ids,
                                              const vkbert_tensor *attention_mask, int normalize,
                                              vkbert_tensor *embeddings);

/* ---------------------------------------------------------------------- asynchronous jobs ---- */

/* Asynchronous work: a submit uploads the inputs, submits the pass and returns at once; the
 * host arrays of the outputs are written by the time vkbert_job_wait (or a poll that returns
 * VKBERT_OK) returns, and must stay valid until then; the inputs may be reused as soon as the
 * submit returns. Two jobs may be in flight on one encoder, each in a plan of its own (inputs,
 * activations, outputs: twice the memory of one); a third submit first finishes the oldest
 * job (waits for it and writes its outputs, then its wait or poll returns at once), then
 * takes its place. Finished jobs' plans are kept for later calls of their shape (a few, and
 * within a bound on device memory). Results equal the synchronous calls', which are
 * submit-then-wait; like them, an embed job whose mask is right padding (each row ones, then
 * zeros, at least one 1) runs the sequences packed, with no padding computed. The
 * context's lock is held to upload, submit and read, never while the device runs, so other
 * calls on the context proceed meanwhile. A batch the device cannot run in one pass fails
 * with VKBERT_ERROR_DEVICE_LIMIT or VKBERT_ERROR_OUT_OF_MEMORY (the synchronous calls run it
 * in halves; a job does not). A lost device or a timeout fails the job with
 * VKBERT_ERROR_DEVICE_LOST. Destroy every job before its encoder; a job is used by one thread
 * at a time. */
typedef struct vkbert_job vkbert_job;

/* vkbert_encoder_embed_host's work, as a job. */
VKBERT_API vkbert_status vkbert_encoder_embed_submit(vkbert_encoder *encoder, int batch,
                                                     int seq_len, const int32_t *input_ids,
                                                     const int32_t *token_type_ids,
                                                     const int32_t *attention_mask, int normalize,
                                                     float *embeddings, vkbert_job **job);
/* vkbert_encoder_forward_host's work, as a job. */
VKBERT_API vkbert_status vkbert_encoder_forward_submit(vkbert_encoder *encoder, int batch,
                                                       int seq_len, const int32_t *input_ids,
                                                       const int32_t *token_type_ids,
                                                       const int32_t *attention_mask, float *hidden,
                                                       float *pooled, vkbert_job **job);
/* VKBERT_OK once the job is done and its outputs written, VKBERT_NOT_READY while it runs, or
 * the job's failure. Does not wait. */
VKBERT_API vkbert_status vkbert_job_poll(vkbert_job *job);
/* Waits for the job and returns its status; again after it is done, the same status. */
VKBERT_API vkbert_status vkbert_job_wait(vkbert_job *job);
/* Waits if the job still runs (its outputs are written), then frees it. NULL is ignored. */
VKBERT_API void vkbert_job_destroy(vkbert_job *job);

/* Interop with a caller's Vulkan (its instance, device and queue; tensors as VkBuffers):
 * include/vkbert_vulkan.h. */

#ifdef __cplusplus
}
#endif
#endif
