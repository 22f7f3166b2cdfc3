# syntax=docker/dockerfile:1
# Multi-stage build: a static echogate binary on a distroless base, running as non-root.
# .dockerignore keeps history, binaries, ./data (transcripts) and secrets out of the context.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/echogate ./cmd/echogate \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/echogate /usr/local/bin/echogate
COPY --from=build --chown=65532:65532 /out/data /data
# An echogate.yaml in the working directory is read at start (compose mounts deploy/config there).
WORKDIR /config
ENV ECHOGATE_DATA_DIR=/data \
    ECHOGATE_HTTP_ADDR=0.0.0.0:8080
USER 65532:65532
EXPOSE 8080
VOLUME ["/data"]
# The binary checks itself: no shell or curl in the image.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["/usr/local/bin/echogate", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/echogate"]
CMD ["serve"]
