/* Context creation, shared by the public calls of vkbert.h and vkbert_vulkan.h. */
#ifndef VKBERT_API_CONTEXT_H
#define VKBERT_API_CONTEXT_H

#include "vk/vk.h"

/* A context on vkbert's own instance and device (`device` NULL) or on the caller's: on
 * failure *out is NULL and the message is the thread's (vkbert_last_error(NULL)). */
vkbert_status vkb_context_create(const vkbert_context_options *options,
                                 const struct vkbert_vulkan_device *device, vkbert_context **out);

#endif
