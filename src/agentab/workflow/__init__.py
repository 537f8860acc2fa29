"""What Snakemake asks of agentab, and what keeps a workflow's steps cheap and stoppable.

`targets` turns the scenarios into targets and per-rule params (rules/common.smk);
`repair` removes bad per-run files at start; `progress` prints runs, not jobs; `step_server`
and `step_client` run a local workflow's steps as forks of one warm process; `stopping` turns
signals into a clean stop. No public interface: `step_client` is imported by every step's
process before it hands over, and must import nothing else.
"""
