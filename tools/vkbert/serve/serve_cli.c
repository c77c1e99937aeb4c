/* vkbert serve: the server is the rest of this folder, built where libmicrohttpd is found. */
#include "cli.h"

#ifdef VKBERT_HAVE_SERVE
#include "serve.h"
#endif

int cli_serve(int argc, char **argv)
{
#ifdef VKBERT_HAVE_SERVE
    return serve_main(argc, argv);
#else
    (void)argc, (void)argv;
    return cli_error("this vkbert was built without `serve`: it needs libmicrohttpd (Debian: "
                     "libmicrohttpd-dev) and POSIX threads; install them and build again");
#endif
}
