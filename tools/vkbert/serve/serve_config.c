/* STUB: replaced by the HTTP helper. */
#include "serve.h"

int serve_config_parse(int argc, char **argv, serve_config *out)
{
    (void)argc, (void)argv, (void)out;
    return 2;
}
