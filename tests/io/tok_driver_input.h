/* What the tokenizer components' test drivers (tok_normalizer_driver, tok_pretokenizer_driver,
 * tok_post_driver) share: reading their JSON input whole. */
#ifndef VKBERT_TESTS_TOK_DRIVER_INPUT_H
#define VKBERT_TESTS_TOK_DRIVER_INPUT_H

#include <stdio.h>

/* All of f, NUL-terminated (the caller frees it); NULL when out of memory. */
char *tok_driver_read_stream(FILE *f);
/* All of the file at path, NUL-terminated; NULL when it cannot be read or out of memory. */
char *tok_driver_read_file(const char *path);

#endif
