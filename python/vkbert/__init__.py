"""vkbert: BERT encoders and attention layers on any GPU through Vulkan compute.

A thin layer over libvkbert (ctypes; numpy only). Set VKBERT_LIBRARY to the library's path
to use a build tree (build/libvkbert.so); else the installed one is found.
"""

from ._attention import Attention
from ._context import Context, devices, version
from ._lib import Error
from ._model import Model
from ._tokenizer import FILE_RULES, Encoding, Tokenizer

__all__ = ["Attention", "Context", "Encoding", "Error", "FILE_RULES", "Model", "Tokenizer",
           "devices", "version"]
__version__ = "0.4.0"
