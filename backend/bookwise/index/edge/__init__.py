"""The embedded default: Qdrant Edge (the Qdrant engine in-process), one shard per generation.

Layout under ``<data_dir>/index``::

    CURRENT                         {"generation": "..."}: replaced atomically (rename) to switch
    generations/<gen>/shard/        the Edge shard (segments, WAL)
    generations/<gen>/manifest.json model, dimension, chunk hashes (Edge has no collection metadata)
    generations/<gen>/COMPLETE      written last, atomically: the manifest's SHA-256
    generations/<gen>/embedder/     the ONNX export of the model queries are embedded with (local MiniLM)
    generations/<gen>/passages.*    the vectors of every section's passages (see index/embedders.py)
    ingest.lock                     one writer at a time
    readers/<gen>.<pid>.<random>/   a process's private copy of a shard another process has open

A generation is *complete* when its ``COMPLETE`` marker matches its manifest (the shard was flushed
and closed before either was written); generations from before the marker, whose manifest was the
last thing written, count as complete when their manifest reads. CURRENT only ever names a complete
generation, so readers see the old index or the new one, never a mix.

Faults of the data directory are survived rather than served as errors: when CURRENT is missing,
corrupt, or names a generation whose manifest is corrupt, a running reader keeps the generation it
has loaded and a starting one (or an ingest) uses the newest complete generation, logging the fault
with its code. Half-built generations left by a crash are removed before the next write, and
pruning never removes the live or the newest complete generation.

Several processes read one index (API workers, ``bookwise search`` beside ``bookwise serve``):
Edge lets one process open a shard, so the others serve private copies (see ``EdgeReader``). Each
reader holds a shared ``flock`` on the generation directory it serves; pruning takes an exclusive
one without waiting and skips the generation when it cannot. Readers never take the ingest lock,
and an ingest never waits for a reader.

``generations`` reads and writes this layout (CURRENT, manifests, the COMPLETE marker); ``locks``
holds the ``flock``s and the readers' private copies; ``reader`` serves the live generation;
``store`` writes, installs and prunes generations.
"""
