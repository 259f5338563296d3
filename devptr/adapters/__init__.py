"""The vLLM modules ported onto devptr (Mamba state copy, spec-decode metadata, EC connector,
Lamport workspace). Each adapter is its own submodule, imported explicitly."""
