"""Lantern's tools, one package each (see ``engine.tool`` for the protocol):
``engine.app.DEFAULT_TOOLS`` lists the ones a sample run installs."""
