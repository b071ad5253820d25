"""Prometheus metrics (prometheus-client), off unless ``BOOKWISE_METRICS`` is on.

Never public: served at ``/metrics`` on the API's port only with a bearer token
(``BOOKWISE_METRICS_TOKEN``, compared in constant time), or only on a separate listener
(``BOOKWISE_METRICS_PORT``, on ``BOOKWISE_METRICS_HOST``); enabled with neither is a config error.

What is counted, and from where: every HTTP answer by route, status and error code (an ASGI
middleware, outermost, so the Guard's refusals count too); each answer stream's plan, answer kind and
outcome, and its time to ``sources`` and to the first token, read from the events the stream yields
(``watch``); the model's failed calls and retries, through the ``LLMObserver`` hook generation defines;
the stream slots in use; the live index generation.

Several processes (``bookwise serve --workers N``) write to one directory in prometheus-client's
multiprocess mode, and any of them (or the separate listener) serves the sum. The mode is chosen when
``prometheus_client`` is first imported, so ``prepare_metrics_dir`` must run before that, in the
serving process, before workers start: hence the lazy imports here.

``access`` says who may read ``/metrics``; ``directory`` keeps the multiprocess directory and the
registry that reads it; ``collectors`` defines what is counted; ``hooks`` (``Metrics``) is what the
API calls; ``middleware`` counts every HTTP answer and serves ``/metrics`` on the API's port;
``listener`` serves it on a port of its own.
"""
