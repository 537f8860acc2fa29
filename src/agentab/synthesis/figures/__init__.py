"""The synthesis's figures as SVG: the gaps (`figure`), cost against rates (`frontier_figure`), the sequential looks (`sequence_figure`), drawn with `svg`."""
