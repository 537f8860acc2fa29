"""The synthesis: from every run's measures.json to cells, gaps, verdicts and their prose.

`measures` builds a run's measures.json from its validators' outputs; `results` reads a
results folder back; `stats` is the bootstrap and Holm; `verdicts` computes cell values and
gaps; `tables`, `figure` and `prose` write them; `synthesize` does all of it in that order;
`power` plans repetitions. No face: a step that imports `measures` must not pay for numpy.
"""
