/* vkbert devices: lists the Vulkan devices and what vkbert needs to know about each. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] = "usage: vkbert devices\n"
                            "\n"
                            "Lists the Vulkan devices with their limits; the index or a\n"
                            "substring of the name selects one with --device.\n";

static const char *yes_no(int value)
{
    return value ? "yes" : "no";
}

static void print_device(uint32_t index, const vkbert_device_info *d)
{
    uint32_t v = d->api_version;
    printf("device %u: %s\n", index, d->name);
    printf("  type                      %s\n", vkbert_device_type_name(d->type));
    printf("  driver                    %s\n", d->driver);
    printf("  vulkan                    %u.%u.%u\n", (v >> 22) & 0x7Fu, (v >> 12) & 0x3FFu,
           v & 0xFFFu);
    printf("  device-local memory       %.1f MiB\n",
           (double)d->device_local_bytes / (1024.0 * 1024.0));
    printf("  subgroup size             %u\n", d->subgroup_size);
    if (d->subgroup_size_control)
        printf("  subgroup size control     yes, %u to %u\n", d->min_subgroup_size,
               d->max_subgroup_size);
    else
        printf("  subgroup size control     no\n");
    printf("  shared memory             %u bytes\n", d->shared_memory_bytes);
    printf("  max storage buffer range  %u bytes\n", d->max_storage_buffer_range);
    printf("  storage buffers per stage %u\n", d->max_storage_buffers);
    printf("  max workgroup invocations %u\n", d->max_workgroup_invocations);
    printf("  fp16 storage              %s\n", yes_no(d->fp16_storage));
    printf("  fp16 arithmetic           %s\n", yes_no(d->fp16_arithmetic));
    printf("  usable                    %s\n", yes_no(d->usable));
}

int cli_devices(int argc, char **argv)
{
    uint32_t count = 0;
    int code = cli_parse(usage, argc, argv, NULL, 0);
    if (code != CLI_CONTINUE) return code;
    if (vkbert_list_devices(NULL, 0, &count)) return cli_api_error(NULL, "cannot list devices");
    if (count == 0) return cli_error("no Vulkan device found");
    vkbert_device_info *infos = calloc(count, sizeof *infos);
    if (!infos) return cli_error("out of host memory");
    for (uint32_t i = 0; i < count; i++)
        infos[i] = (vkbert_device_info)VKBERT_DEVICE_INFO_INIT;
    uint32_t listed = count;
    if (vkbert_list_devices(infos, listed, &count)) {
        free(infos);
        return cli_api_error(NULL, "cannot list devices");
    }
    for (uint32_t i = 0; i < count && i < listed; i++)
        print_device(i, &infos[i]);
    free(infos);
    return CLI_EXIT_OK;
}
