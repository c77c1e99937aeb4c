/* Which vkbert a program loaded, and whether it may use it: the library's vkbert_version()
 * against the VKBERT_VERSION_NUMBER of the header the program was built with. Before 1.0 the
 * major and minor versions must both match (docs/c-api.md, "ABI"); the patch may differ. Then lists
 * the devices. */
#include <vkbert.h>

#include <stdio.h>

int main(void)
{
    unsigned built = VKBERT_VERSION_NUMBER, loaded = vkbert_version();
    printf("vkbert %s (library %u, header %u)\n", vkbert_version_string(), loaded, built);
    if (loaded / 100 != built / 100) {
        fprintf(stderr, "built against vkbert %u.%u, but loaded %s\n", built / 10000,
                built / 100 % 100, vkbert_version_string());
        return 1;
    }
    vkbert_device_info infos[8];
    for (int i = 0; i < 8; i++)
        infos[i] = (vkbert_device_info)VKBERT_DEVICE_INFO_INIT;
    uint32_t count = 0;
    if (vkbert_list_devices(infos, 8, &count)) {
        fprintf(stderr, "%s\n", vkbert_last_error(NULL));
        return 1;
    }
    for (uint32_t i = 0; i < count && i < 8; i++)
        printf("device %u: %s (%s)\n", i, infos[i].name, vkbert_device_type_name(infos[i].type));
    return 0;
}
