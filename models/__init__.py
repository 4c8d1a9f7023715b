"""The bundled model directories, installed as package data of ``triage.models``.

Each sub-directory (``default-adaptive/``, ``default-w0/``, ...) is one model
written by ``triage train``; :mod:`triage.model_lookup` finds them by name.
This file only makes the folder a package so that the wheel carries it.
"""
