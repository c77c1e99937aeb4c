"""The ctypes structs of vkbert._lib laid out as a C compiler lays out include/vkbert.h's: the
library reads a caller's struct by its offsets, so a field of the wrong type or order passes
garbage without any error. The C side is measured by compiling offsetof and sizeof."""

import ctypes
import os
import shutil
import subprocess

import pytest

from vkbert import _lib

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include")

STRUCTS = {
    "vkbert_device_info": _lib.DeviceInfo,
    "vkbert_context_options": _lib.ContextOptions,
    "vkbert_attention_weights": _lib.AttentionWeights,
    "vkbert_mask": _lib.Mask,
    "vkbert_attention_options": _lib.AttentionOptions,
    "vkbert_attention_config": _lib.AttentionConfig,
    "vkbert_model_config": _lib.ModelConfig,
    "vkbert_embed_options": _lib.EmbedOptions,
    "vkbert_encoding": _lib.Encoding,
    "vkbert_time_split": _lib.TimeSplit,
}


def _program():
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "vkbert.h"', "int main(void)",
             "{"]
    for name, struct in STRUCTS.items():
        lines.append(f'    printf("{name} %zu\\n", sizeof({name}));')
        for field, _ in struct._fields_:
            lines.append(f'    printf("{name}.{field} %zu %zu\\n", offsetof({name}, {field}), '
                         f"sizeof((({name} *)0)->{field}));")
    return "\n".join(lines + ["    return 0;", "}", ""])


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    """{"struct": size, "struct.field": (offset, size)} as the C compiler says."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc or not os.path.exists(os.path.join(INCLUDE, "vkbert.h")):
        pytest.skip("no C compiler, or no include/vkbert.h beside the tests")
    scratch = tmp_path_factory.mktemp("layout")
    source, program = scratch / "layout.c", scratch / "layout"
    source.write_text(_program())
    subprocess.run([cc, "-std=c11", "-I", INCLUDE, "-o", str(program), str(source)], check=True)
    out = subprocess.run([str(program)], check=True, capture_output=True, text=True).stdout
    layout = {}
    for line in out.splitlines():
        key, *numbers = line.split()
        layout[key] = tuple(int(n) for n in numbers) if len(numbers) > 1 else int(numbers[0])
    return layout


@pytest.mark.parametrize("name", sorted(STRUCTS))
def test_struct_matches_the_header(c_layout, name):
    struct = STRUCTS[name]
    for field, _ in struct._fields_:
        got = (getattr(struct, field).offset, getattr(struct, field).size)
        assert got == c_layout[f"{name}.{field}"], f"{name}.{field}: (offset, size)"
    assert ctypes.sizeof(struct) == c_layout[name], f"sizeof({name})"
