# A setup.py and no pyproject.toml, on purpose: Debian's pip then builds with the setuptools it
# already has, so `pip install ./python` works without a network. (A pyproject.toml's
# [build-system] makes pip fetch setuptools into an isolated environment first.)
from setuptools import setup

setup(
    name="vkbert",
    version="0.4.0",
    description="BERT encoders and attention layers on any GPU through Vulkan compute (libvkbert)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=["vkbert"],
    python_requires=">=3.8",
    install_requires=["numpy"],
)
