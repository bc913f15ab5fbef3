# syntax=docker/dockerfile:1
# Reftrack in a container: `docker build -t reftrack .` then
#   docker run -d --name reftrack -p 8080:8080 -v reftrack-data:/data reftrack
# With no configuration it serves on SQLite in the /data volume and prints the admin
# token of its first start once (`docker logs reftrack`). docs/deploy.md has the rest.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# The registry and target caches stay between builds; the binary is copied out of them.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin reftrack \
    && cp target/release/reftrack /usr/local/bin/reftrack

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin reftrack \
    && install -d -o reftrack -g reftrack -m 0750 /data
COPY --from=build /usr/local/bin/reftrack /usr/local/bin/reftrack
ENV REFTRACK_DATABASE_URL=sqlite:///data/reftrack.db \
    REFTRACK_LISTEN=0.0.0.0:8080
USER reftrack
WORKDIR /data
VOLUME /data
EXPOSE 8080
# The binary is its own probe (the image has no curl): GET /readyz on REFTRACK_LISTEN.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["reftrack", "healthcheck"]
# SIGTERM finishes in-flight requests for up to REFTRACK_SHUTDOWN_TIMEOUT (30 s): stop
# the container with a longer grace period (`docker stop -t 40`).
STOPSIGNAL SIGTERM
ENTRYPOINT ["reftrack"]
CMD ["serve"]
