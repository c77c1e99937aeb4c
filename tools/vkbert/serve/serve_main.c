/* STUB: replaced by the HTTP helper. */
#include "serve.h"

int serve_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    return 1;
}
