"""Agreement of a release's gains with human labels (``rcp-data agree``).

One module per layer, each of pure functions over arrays:

- :mod:`.bootstrap`: query-clustered percentile bootstrap weights and intervals (B.3);
- :mod:`.labels`: the label layer: within-query concordance, AUC, pooled Spearman (B.2, E.4);
- :mod:`.rankings`: the ranking layer: leaderboards, Kendall tau-b, Spearman rho, RBO,
  sensitivity, decisive-pair agreement, failure modes of nDCG@k (C.6, C.7, G.1, H.1);
- :mod:`.variation`: label variation over several assessors (Parry et al. 2025);
- :mod:`.labelsets`: extra label sets read and aligned to a release, and their aggregation;
- :mod:`.analysis`: the whole analysis of one release (:func:`agree`).
"""
