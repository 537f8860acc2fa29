"""Tasks from a repository's own history: bug-fix commits kept only when their tests fail before the fix, pass after it, and do so every time (`agentab tasks mine`)."""
