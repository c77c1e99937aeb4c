/* vkbert: the command-line tool. Dispatches to one subcommand per file. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name, *summary;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"devices", "list the Vulkan devices and their limits", cli_devices},
    {"attention", "run one attention layer on files (safetensors weights, npy input)",
     cli_attention},
    {"demo", "time the attention layer on random data and check it against the reference",
     cli_demo},
    {"bench", "measure the device's peaks and time matmul and attention cases", cli_bench},
    {"tune", "find this device's fastest matmul tiles and attention path, and cache them",
     cli_tune},
    {"encode", "run a BERT encoder on token ids (npy in, hidden states npy out)", cli_encode},
    {"tokenize", "print a model folder's token ids and offsets for texts, as JSON", cli_tokenize},
    {"decode", "print the text of token ids, as the folder's tokenizer decodes them", cli_decode},
    {"embed", "sentence embeddings of texts, as the folder's sentence-transformers pipeline",
     cli_embed},
    {"rerank", "score documents against a query with a cross-encoder", cli_rerank},
    {"classify", "label texts with a sequence classifier", cli_classify},
    {"info", "what vkbert reads in a model folder and will do with it", cli_info},
    {"serve", "serve a model folder over HTTP: OpenAI embeddings and TEI's routes", cli_serve},
};

#define COMMAND_COUNT (sizeof commands / sizeof *commands)

static void print_usage(FILE *out)
{
    fputs("usage: vkbert <command> [options]\n"
          "       vkbert <command> --help\n"
          "\n"
          "BERT attention on any Vulkan GPU.\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "environment: VKBERT_DEVICE picks the default device, VKBERT_VALIDATION=1 turns on\n"
          "the Vulkan validation layer (any message then fails the command).\n",
          out);
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("vkbert %s\n", vkbert_version_string()); /* the library loaded */
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(name, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vkbert: unknown command '%s'\n", name);
    print_usage(stderr);
    return CLI_EXIT_USAGE;
}

/* A full disk or a broken pipe may show only when stdout is flushed or closed: a command
 * whose output was lost must not exit 0. One place for every command. A closed stdout
 * (EBADF on close, nothing left to write) lost nothing. */
static int finish_output(int code)
{
    errno = 0;
    int failed = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0 && !failed && errno != EBADF) failed = 1, err = errno;
    if (!failed) return code;
    fprintf(stderr, "vkbert: writing the output failed: %s\n", strerror(err ? err : EIO));
    return code ? code : CLI_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    return finish_output(run(argc, argv));
}
