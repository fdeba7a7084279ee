"""The release model: what a release is, one concept per module.

- :mod:`~rcp_data.model.layout`: paths, file names and the one list of table kinds;
- :mod:`~rcp_data.model.schemas`: the column schemas of those tables;
- :mod:`~rcp_data.model.tables`: reading and writing those tables;
- :mod:`~rcp_data.model.manifest`: the build manifest (typed) and its content list;
- :mod:`~rcp_data.model.history`: release records and histories (``releases.json``);
- :mod:`~rcp_data.model.suite`: which suite a release belongs to;
- :mod:`~rcp_data.model.card_format`: the card's front matter and configs;
- :mod:`~rcp_data.model.release`: a release opened once (:func:`open_release`).
"""
