# zk-election-exporter: multi-stage build, small non-root runtime image.
#   docker build -t zk-election-exporter .
# The bases are build arguments (BUILD_IMAGE, RUNTIME_IMAGE): where no
# registry serves them, scripts/image.sh makes the runtime base with
# debootstrap and builds with BINARY=prebuilt, which takes the binary cargo
# built on the host (target/release/zk-election-exporter) instead of
# compiling it in the image.
#   docker run -p 9141:9141 zk-election-exporter --zk zk1:2181 --election '/wechat/bots/*'
#   docker run -p 9141:9141 -v "$PWD/config.toml:/etc/zk-election-exporter/config.toml:ro" \
#     -e ZK_EXPORTER_CONFIG=/etc/zk-election-exporter/config.toml zk-election-exporter

ARG BUILD_IMAGE=rust:1-slim-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# build: compile in the image; prebuilt: the host's release binary.
ARG BINARY=build

FROM ${BUILD_IMAGE} AS build
# Kerberos (the `kerberos` feature, on in every artefact): the GSSAPI
# headers, and libclang for the binding generated from them; python3 for
# the third-party licences (scripts/third-party-licenses.py).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libkrb5-dev=1.20.* libclang-dev=1:14.* \
        python3=3.11.* \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so source edits do not rebuild them.
COPY Cargo.toml Cargo.lock build.rs ./
# The patched ZooKeeper client (vendor/zookeeper-client/PATCHED.md).
COPY vendor ./vendor
RUN mkdir -p src benches \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs benches/render.rs benches/zookeeper.rs benches/cons.rs \
        benches/model.rs benches/web.rs benches/alerting.rs benches/reload.rs benches/lease.rs benches/at_rest.rs benches/in_motion.rs \
    && cargo build --release --locked --features kerberos \
    && rm -rf src benches
COPY src ./src
COPY benches ./benches
COPY scripts/third-party-licenses.py ./scripts/
RUN touch src/main.rs src/lib.rs && cargo build --release --locked --features kerberos --bin zk-election-exporter \
    && python3 scripts/third-party-licenses.py --features kerberos >target/release/THIRD-PARTY-LICENSES

FROM scratch AS prebuilt
COPY target/release/zk-election-exporter target/release/THIRD-PARTY-LICENSES /src/target/release/

# hadolint ignore=DL3006
FROM ${BINARY} AS binary

FROM ${RUNTIME_IMAGE}
# curl only serves the HEALTHCHECK; libgssapi-krb5-2 is the GSSAPI library
# the binary links for Kerberos (mount krb5.conf and a keytab to use it).
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates=20230311* curl=7.88.* \
        libgssapi-krb5-2=1.20.* \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin exporter
COPY --from=binary /src/target/release/zk-election-exporter /usr/local/bin/zk-election-exporter
# The licence, and those of every crate linked into the binary.
COPY LICENSE /usr/share/doc/zk-election-exporter/
COPY --from=binary /src/target/release/THIRD-PARTY-LICENSES /usr/share/doc/zk-election-exporter/
USER 10001
EXPOSE 9141
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
    CMD ["curl", "-fsS", "http://127.0.0.1:9141/healthz"]
ENTRYPOINT ["/usr/local/bin/zk-election-exporter"]
