"""One entry point per workflow step: `python -m agentab.steps.<step> …`.

Each step runs unchanged on a laptop or a cluster node, outside Snakemake too: the workflow
rules only call them, passing each file the step reads or writes. One exit-code contract for
every step: 0 when the step has its outcome, 2 on an error a person must fix (the message names
the file, the key and the fix), 3 on a fault (the work could not be done this time: Snakemake
redoes the job), 128 + the signal's number when it was asked to stop (SIGTERM, SIGINT, SIGHUP:
what it started is ended, it leaves no outcome, and the next invocation redoes it). A step holds
no logic of its own: it parses its arguments and calls the library (`agentab.steps.common`).
"""

# Before anything else is imported: a step of a local workflow runs in a fork of the step
# server, which has agentab imported already (agentab.workflow.step_server). Without one, it runs here.
from agentab.workflow.step_client import hand_over_if_served

hand_over_if_served()
