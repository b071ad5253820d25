"""Measuring the runtime on golden questions, beside it: never imported by the runtime's stages.

``retrieval`` scores the ranked sections (recall, MRR, nDCG, refusals), ``answers`` puts every question
through the whole answer path and scores what a reader gets, ``calibration`` fits the sufficiency model
that retrieval ships (``retrieval/sufficiency_model.json``). The CLI (``bookwise eval``) and the scripts
use them; ``tests/test_layering.py`` keeps the runtime from importing them.
"""
