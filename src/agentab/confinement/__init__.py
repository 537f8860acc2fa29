"""Confinement: every process that runs code agentab did not write, and what it may reach.

The agent under test, the etalon's setup and a validator script run in a bubblewrap sandbox.
This package alone decides what such a process sees and may use: `bwrap` turns a declared
`View` into bwrap's arguments (no other module spells a mount), `views` declares the view of
each kind of process, `endpoint` carries the one connection a confined agent may make (to its
model), `seccomp` and `memory` keep every process out of the memory of the one that started it,
and `limits` caps what a run may take of the machine (docs/confinement.md).
"""
