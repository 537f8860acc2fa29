"""A real language model on 127.0.0.1: llama.cpp's server (the `xllamacpp` wheel) with a
GGUF model installed from the package registry, for trying a scenario on a real model."""
