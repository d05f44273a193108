# syntax=docker/dockerfile:1
# Federator images. Two final targets (README, "Container images"):
#   docker build --target operator -t ghcr.io/federator/federator-operator:0.1.0 .
#   docker build --target spark    -t ghcr.io/federator/federator-spark:0.1.0 .
# Base images are pinned to exact tags; pin digests in your registry mirror for reproducible builds.
# Build stages carry pip and the wheel sources; the final stages copy only a finished virtual env.

# ---------------------------------------------------------------------------------------------------
FROM python:3.11.14-slim-bookworm AS python-base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# ---------------------------------------------------------------------------------------------------
# The project sources, and the venv every final stage starts from (pip builds the wheel with hatchling).
FROM python-base AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY contract ./contract
COPY operator ./operator
COPY spark-apps ./spark-apps
# No pip, setuptools or wheel inside the venv: the base image's pip installs into it (--python).
RUN python -m venv --without-pip /opt/venv

FROM build AS operator-venv
RUN pip --python /opt/venv/bin/python install --no-cache-dir /src/contract /src

FROM build AS spark-venv
# The Spark app's own dependency set: the app and the contract it shares with the operator, nothing else.
RUN pip --python /opt/venv/bin/python install --no-cache-dir /src/contract /src/spark-apps

# ---------------------------------------------------------------------------------------------------
# What both final stages start from: the interpreter without pip, setuptools or wheel.
FROM python-base AS runtime
RUN rm -rf /usr/local/bin/pip* /usr/local/lib/python3.11/site-packages/pip \
        /usr/local/lib/python3.11/site-packages/pip-* /usr/local/lib/python3.11/site-packages/setuptools* \
        /usr/local/lib/python3.11/site-packages/_distutils_hack /usr/local/lib/python3.11/site-packages/wheel* \
        /usr/local/lib/python3.11/ensurepip

# ---------------------------------------------------------------------------------------------------
# Target `operator`: the kopf operator (`federator operator`). Health on 8080, metrics on 9090.
FROM runtime AS operator
RUN groupadd --system --gid 10001 federator \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin federator
COPY --from=operator-venv /opt/venv /opt/venv
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080 9090
ENTRYPOINT ["federator"]
CMD ["operator", "--liveness=http://0.0.0.0:8080/healthz"]

# ---------------------------------------------------------------------------------------------------
# Java for Spark (a JRE only) and the Spark-on-Kubernetes entrypoint of the official Spark image.
FROM eclipse-temurin:21.0.8_9-jre-noble AS java
FROM spark:4.0.1-scala2.13-java21-ubuntu AS spark-dist

# Target `spark`: the replication application. Spark itself is the pyspark distribution in the venv
# (jars, bin/ and the Kubernetes resource manager), run by Spark's standard Kubernetes entrypoint.
FROM runtime AS spark
ENV JAVA_HOME=/opt/java/openjdk \
    SPARK_HOME=/opt/venv/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/opt/venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/venv/bin/python
ENV PATH=$JAVA_HOME/bin:$SPARK_HOME/bin:$PATH
# tini and procps are what Spark's entrypoint runs (not build tools); the Debian release of the pinned
# base image pins their versions.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini procps \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 185 spark \
    && useradd --system --uid 185 --gid 185 --home-dir /opt/federator --shell /usr/sbin/nologin spark
COPY --from=java /opt/java/openjdk /opt/java/openjdk
COPY --from=spark-dist /opt/entrypoint.sh /opt/decom.sh /opt/
COPY --from=spark-venv /opt/venv /opt/venv
# The launchers run local:///opt/federator/replicate.py (docs/launchers.md); the package is in the venv.
COPY spark-apps/replicate.py /opt/federator/replicate.py
WORKDIR /opt/federator
USER 185:185
EXPOSE 9464
ENTRYPOINT ["/opt/entrypoint.sh"]
