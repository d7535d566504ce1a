# imds-server: the per-VM sidecar. A static musl binary on an empty image.
#   docker build -f Dockerfile -t kubevirt-imds-server:dev .      (make docker-build-server)
# Built from the repository alone: every build input is a Debian package
# (llhttp's C sources from node-llhttp, musl from musl-tools); nothing else is
# downloaded. For bit-for-bit rebuilds pin BUILD_IMAGE by digest and pass
# SOURCE_DATE_EPOCH; VERSION is the string `imds-server version` prints.
ARG BUILD_IMAGE=debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
ARG VERSION=dev
ARG SOURCE_DATE_EPOCH=0
ENV DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH}
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc make libc6-dev linux-libc-dev musl-tools node-llhttp \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY src/ src/
# `make static` is this plus hack/install-deps.sh (which would add the test
# toolchain: clang, cmocka ...); the image needs only the static variant.
RUN make --no-print-directory VARIANT=static VERSION="${VERSION}" server \
 && /src/build/static/imds-server version \
 && cp build/static/imds-server /imds-server

FROM scratch
# OCI labels (make docker-build passes VERSION = git describe, REVISION = the commit).
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="kubevirt-imds-server" \
      org.opencontainers.image.description="The per-VM instance metadata sidecar of kubevirt-imds" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /imds-server /imds-server
# The webhook runs it as `/imds-server run` with NET_ADMIN, NET_RAW and
# NET_BIND_SERVICE only; `serve` needs nothing.
ENTRYPOINT ["/imds-server"]
CMD ["run"]
