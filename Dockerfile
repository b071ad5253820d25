# Bookwise API server: CPU only, the offline embedder included, non-root, index and question log in /data.
#
#   docker build -t bookwise .                             serves, and ingests with the local MiniLM
#   docker build --target server -t bookwise-server .      serves only: no PyTorch (about a third the size)
#   docker run -p 8000:8000 -v bookwise-data:/data bookwise
#
# docs/container.md has the whole recipe (ingest, compose, upgrading).

# Any image with python3 (3.11+) and its venv module; the runtime stage uses the same one, so the
# virtual environment's interpreter link stays valid.
ARG BASE=python:3.11-slim

FROM ${BASE} AS venv
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The runtime user (a fixed uid, so a bind-mounted data folder can be given to it: chown 10001:10001)
# and its data folder, made here so the runtime stage needs no RUN step of its own.
RUN groupadd --system --gid 10001 bookwise \
 && useradd --system --uid 10001 --gid bookwise --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin bookwise \
 && mkdir /data && chown bookwise:bookwise /data
RUN python3 -m venv /opt/bookwise \
 && /opt/bookwise/bin/pip install --quiet --upgrade pip

# The server alone: it embeds questions with ONNX Runtime from the model the index carries.
FROM venv AS server-deps
COPY pyproject.toml /src/pyproject.toml
# What only testing uses goes, so the image holds what serving runs: the packages' own test suites, and
# ONNX Runtime's model-conversion tools (the quantizer, the transformer optimizer: the server only runs
# a model the ingest exported).
RUN python3 -c 'import tomllib; p = tomllib.load(open("/src/pyproject.toml", "rb"))["project"]; \
print("\n".join(p["dependencies"]))' >/tmp/requirements.txt \
 && /opt/bookwise/bin/pip install --quiet -r /tmp/requirements.txt \
 && cd /opt/bookwise/lib/python3*/site-packages \
 && find . -type d -name tests -prune -exec rm -rf {} + \
 && rm -rf onnxruntime/transformers onnxruntime/tools onnxruntime/quantization onnxruntime/datasets \
      /opt/bookwise/bin/onnxruntime_test

# The environment the server image copies: without pip and setuptools, which only installing uses.
FROM server-deps AS server-venv
RUN /opt/bookwise/bin/pip uninstall --quiet --yes pip setuptools

# Bookwise's own files, staged for the image's top layer (as for the default image below).
FROM server-deps AS server-build
COPY . /src
RUN /opt/bookwise/bin/pip install --quiet --no-deps /src \
 && /opt/bookwise/bin/bookwise --help >/dev/null \
 && /opt/bookwise/bin/python -c 'import bookwise.api.app, onnxruntime, numpy, tokenizers, qdrant_edge' \
 && mkdir /stage && cd / \
 && tar -c opt/bookwise/bin/bookwise opt/bookwise/lib/python3*/site-packages/bookwise \
      opt/bookwise/lib/python3*/site-packages/bookwise-*.dist-info | tar -x -C /stage

FROM venv AS deps
# The CPU-only torch index; without it pip installs torch with CUDA (several GB of unused libraries).
# Empty: torch comes from pip's own configuration (a mirror that already carries the CPU wheel).
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_VERSION=2.13.0
# torch first, in its own layer: the largest download changes least often. Its C++ headers, test
# programs and test binaries are for building extensions and testing torch, not for running it
# (about 190 MB); torch_shm_manager stays in bin/.
RUN /opt/bookwise/bin/pip install --quiet ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} \
      "torch==${TORCH_VERSION}" \
 && cd /opt/bookwise/lib/python3*/site-packages/torch \
 && rm -rf include test \
 && find bin -maxdepth 1 -type f ! -name torch_shm_manager -delete
# The dependencies next, from pyproject.toml alone: a change to Bookwise's code reuses this layer.
COPY pyproject.toml /src/pyproject.toml
RUN python3 -c 'import tomllib; p = tomllib.load(open("/src/pyproject.toml", "rb"))["project"]; \
print("\n".join(p["dependencies"] + p["optional-dependencies"]["local"]))' >/tmp/requirements.txt \
 && /opt/bookwise/bin/pip install --quiet -r /tmp/requirements.txt

# Then Bookwise itself, from what the wheel is built from (.dockerignore lets nothing else in). pip
# compiles the modules here, so the runtime (which cannot write to /opt/bookwise) starts without that.
# Its files alone are staged for the runtime: a change to Bookwise's code makes a new layer of about
# 2 MB, and the 1.4 GB of torch and the dependencies stay one layer an upgrade already holds.
FROM deps AS build
COPY . /src
RUN /opt/bookwise/bin/pip install --quiet --no-deps /src \
 && /opt/bookwise/bin/bookwise --help >/dev/null \
 && mkdir /stage && cd / \
 && tar -c opt/bookwise/bin/bookwise opt/bookwise/lib/python3*/site-packages/bookwise \
      opt/bookwise/lib/python3*/site-packages/bookwise-*.dist-info | tar -x -C /stage

FROM ${BASE} AS runtime
LABEL org.opencontainers.image.title="Bookwise" \
      org.opencontainers.image.description="Grounded, cited, streamed answers for Docusaurus sites." \
      org.opencontainers.image.licenses="MIT"
# The same base as the build stage, so its account files are this base's plus the bookwise user.
COPY --from=venv /etc/passwd /etc/group /etc/shadow /etc/gshadow /etc/
COPY --from=venv --chown=10001:10001 /data /data
ENV PATH=/opt/bookwise/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/data \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    BOOKWISE_DATA_DIR=/data
USER bookwise
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
# Ready = the index is open and answers; before the first ingest the container reports unhealthy.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/ready', timeout=8)"]
CMD ["bookwise", "serve", "--host", "0.0.0.0", "--port", "8000"]

FROM runtime AS server
COPY --from=server-venv /opt/bookwise /opt/bookwise
COPY --from=server-build /stage/ /

# The default: the server and `bookwise ingest` with the local MiniLM (its adaptation and export).
FROM runtime
COPY --from=deps /opt/bookwise /opt/bookwise
COPY --from=build /stage/ /
