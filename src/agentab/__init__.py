"""agentab: A/B experiments for coding-agent harnesses (docs/internals.md draws its rooms and layers)."""
