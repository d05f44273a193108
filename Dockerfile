# syntax=docker/dockerfile:1
# Federator images: two final targets on one Debian 12 base (docs/install.md, "Build the images").
#   docker build --target operator -t ghcr.io/federator/federator-operator:0.1.0 .
#   docker build --target spark    -t ghcr.io/federator/federator-spark:0.1.0 .
#   tools/build-images             the same with buildah, no daemon; makes the base when it is missing
# Python 3.11 and OpenJDK 17 come from Debian; Spark is the pip-installed pyspark distribution. Build stages
# carry pip and the sources; the final stages copy only a finished virtual env and hold no pip or compiler.
# Users: operator 10001:10001, Spark 185:185 (the uids charts/federator/values.yaml states).

# The only base: debian:bookworm-slim, pinned by the digest of its multi-platform index (the 2026-08 build).
# tools/build-images passes BASE_IMAGE=debian:bookworm-slim when it uses a local base of that name,
# e.g. one it made with mmdebstrap where no registry is reachable.
ARG BASE_IMAGE=debian:bookworm-slim@sha256:abd67ffcfa541b485a3dff59865ab629aa048a6c613e639d36e7456b0b229241

# ---------------------------------------------------------------------------------------------------
# Python from Debian (no pip: Debian's python3.11 ships without it), and what every stage runs with.
FROM ${BASE_IMAGE} AS python
ENV LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Debian 12's packages are the pinned versions (bookworm, with its security updates).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11 ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# ---------------------------------------------------------------------------------------------------
# The project sources, and a virtual env per image (images/install-venv). pip's cache stays in a cache
# mount, outside every layer; pip and setuptools leave the venv once it is complete.
FROM python AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11-venv \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY contract ./contract
COPY operator ./operator
COPY spark-apps ./spark-apps
COPY images/install-venv ./images/
COPY images/spark/trim-spark ./images/spark/

FROM build AS operator-venv
RUN --mount=type=cache,target=/root/.cache/pip --mount=type=secret,id=ca-certificates \
    images/install-venv /src/contract /src

# The Spark app's own dependency set: the app and the contract it shares with the operator, nothing else;
# Spark without the modules the app never loads (images/spark/trim-spark: Hive, MLlib, the Connect server);
# PySpark's archive for the Python processes Spark starts with its modules' bytecode, compiled by the
# Python they run (federator_spark/worker_archive.py).
FROM build AS spark-venv
RUN --mount=type=cache,target=/root/.cache/pip --mount=type=secret,id=ca-certificates \
    images/install-venv /src/contract /src/spark-apps \
    && images/spark/trim-spark \
    && /opt/venv/bin/python -m federator_spark.worker_archive

# ---------------------------------------------------------------------------------------------------
# Java for Spark: Debian's OpenJDK 17, cut by jlink to the modules Spark, Hadoop's client and their
# libraries use (jdeps over pyspark's jars, plus what they load by name: JAAS's Unix login, EC crypto,
# DNS naming, JMX, locale data), without Java debug attributes (Debian strips its native libraries).
# The JRE package would add 185 MB and, through its desktop dependencies (CUPS, fonts, ALSA, GLib),
# another 40 MB. The CA keystore is Debian's.
FROM python AS java
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
    && rm -rf /var/lib/apt/lists/* \
    && jlink --output /opt/java --strip-java-debug-attributes --no-man-pages --no-header-files --compress=2 --add-modules \
       java.se,jdk.unsupported,jdk.incubator.vector,jdk.crypto.ec,jdk.crypto.cryptoki,jdk.security.auth,\
jdk.security.jgss,jdk.management,jdk.management.agent,jdk.jfr,jdk.naming.dns,jdk.zipfs,jdk.httpserver,\
jdk.net,jdk.charsets,jdk.localedata,jdk.attach \
    && cp --remove-destination /etc/ssl/certs/java/cacerts /opt/java/lib/security/cacerts

# The app's JVM classes (spark-apps/jvm: Hadoop's local file system without a chmod process per file),
# compiled against the venv's Hadoop client with the JDK above; the Spark image puts the jar among Spark's.
FROM java AS spark-jvm
COPY --from=spark-venv /opt/venv/lib/python3.11/site-packages/pyspark/jars/hadoop-client-api-*.jar /jars/
COPY spark-apps/jvm /src/jvm
RUN /src/jvm/build-jar /jars

# ---------------------------------------------------------------------------------------------------
# Target `operator`: the kopf operator (`federator operator`). Health on 8080, metrics on 9090.
FROM python AS operator
RUN groupadd --system --gid 10001 federator \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin federator
COPY --from=operator-venv /opt/venv /opt/venv
USER 10001:10001
EXPOSE 8080 9090
ENTRYPOINT ["federator"]
CMD ["operator", "--liveness=http://0.0.0.0:8080/healthz"]

# ---------------------------------------------------------------------------------------------------
# Target `spark`: the replication application. Java is the runtime above; Spark is the pyspark
# distribution in the venv (jars, bin/ and the Kubernetes resource manager), started by our own
# Spark-on-Kubernetes entrypoint (images/spark/entrypoint.sh) under tini.
FROM python AS spark
ENV JAVA_HOME=/opt/java \
    PATH=/opt/venv/bin:/opt/java/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SPARK_HOME=/opt/venv/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/opt/venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/venv/bin/python
# libnss-wrapper gives a uid without a passwd entry a user name (Java and Hadoop need one).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini libnss-wrapper \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 185 spark \
    && useradd --system --uid 185 --gid 185 --no-create-home --home-dir /opt/federator \
       --shell /usr/sbin/nologin spark
COPY --from=java /opt/java /opt/java
COPY --from=spark-venv /opt/venv /opt/venv
COPY --from=spark-jvm /jars/federator-hadoop.jar /opt/venv/lib/python3.11/site-packages/pyspark/jars/
COPY images/spark/entrypoint.sh images/spark/decom.sh /opt/
# The launchers run local:///opt/federator/replicate.py (docs/launchers.md); the package is in the venv.
COPY spark-apps/replicate.py /opt/federator/replicate.py
# A ReplicationApplication's shared driver (docs/sharing.md).
COPY spark-apps/host.py /opt/federator/host.py
WORKDIR /opt/federator
USER 185:185
EXPOSE 9464
ENTRYPOINT ["/opt/entrypoint.sh"]
