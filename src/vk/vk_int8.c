/* 8-bit integer dot products (VK_KHR_shader_integer_dot_product, core in Vulkan 1.3): whether
 * the device has them, whether the driver calls them accelerated, and enabling them on the
 * device vkbert makes. Kernels that use them run only where they are on; callers keep another
 * path for devices without them. */
#include "vk.h"

/* Core where both the instance and the device have Vulkan 1.3. */
static bool dot_core(const vkbert_context *ctx)
{
    return ctx->props.apiVersion >= VK_API_VERSION_1_3 &&
           ctx->instance_version >= VK_API_VERSION_1_3;
}

void vkb_read_int8_dot(vkbert_context *ctx)
{
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDeviceShaderFloat16Int8Features int8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductProperties props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    bool present =
        dot_core(ctx) ||
        vkb_device_has_extension(ctx->physical, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    int8.pNext = present ? &dot : NULL;
    features.pNext = &int8;
    vkGetPhysicalDeviceFeatures2(ctx->physical, &features);
    ctx->shader_int8 = int8.shaderInt8 != 0;
    ctx->int8_dot = present && dot.shaderIntegerDotProduct;
    ctx->int8_dot_fast = false;
    if (!ctx->int8_dot) return;
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &props};
    vkGetPhysicalDeviceProperties2(ctx->physical, &props2);
    ctx->int8_dot_fast = props.integerDotProduct4x8BitPackedSignedAccelerated != 0;
}

const void *vkb_int8_dot_chain(const vkbert_context *ctx,
                               VkPhysicalDeviceShaderIntegerDotProductFeatures *feature,
                               const void *next, const char **extensions, uint32_t *count)
{
    if (!ctx->int8_dot) return next;
    if (!dot_core(ctx)) extensions[(*count)++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    *feature = (VkPhysicalDeviceShaderIntegerDotProductFeatures){
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .pNext = (void *)next,
        .shaderIntegerDotProduct = VK_TRUE};
    return feature;
}
