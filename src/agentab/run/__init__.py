"""One agent run: from a fresh clone of the etalon to the files a run leaves.

`agent_run` performs a run (clone, bricks, the harness, its stream, the patch, run.json);
`process` starts and ends the processes it needs; `receipts` proves what reached the model;
`recording_proxy` records a real provider's requests; `credentials` reads the keys.
"""
