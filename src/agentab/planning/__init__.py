"""Plans from a pilot: the repetitions a gap needs (`power`), a sequential plan (`sequential_plan`) and how many runs people label (`label_plan`), for `agentab plan` and `agentab form`."""
