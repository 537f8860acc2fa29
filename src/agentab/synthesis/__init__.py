"""The synthesis: from every run's measures.json to cells, gaps, verdicts and their prose.

`runs/` is what each run's files say (`measures` builds a run's measures.json, `results` reads a
results folder back); `verdicts` computes cell values and gaps with the statistics of
`agentab.stats`; `tables`, `figures/` and `prose` write them; `synthesize` does all of it in
that order. Plans (`power`, …) are `agentab.planning`'s. Nothing is imported here: a workflow
step that imports `measures` needs no numpy.
"""
