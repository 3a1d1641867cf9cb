# syntax=docker/dockerfile:1
# One image, two entrypoints: `agentcard operator` (the default) and `agentcard sidecar`.
#
# The sources are TypeScript that Node.js 24 runs directly (type stripping): there is no
# compile step, so the image holds operator/, bin/, package.json and the production
# node_modules, exactly what test/integration/prod-build.test.ts reproduces without a
# container engine (it follows the COPY lines below).
#
# Base images, pinned by tag:
# - build: the official Node.js image at the exact version the devDependency `node` gives the
#   tests (24.21.0), Debian slim, because the build needs npm.
# - runtime: distroless Node.js 24 on Debian 13, `nonroot` variant: no shell, no package
#   manager, user 65532. Distroless publishes rolling tags only; release builds pin it by
#   digest with `--build-arg RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian13@sha256:...`.
ARG BUILD_IMAGE=node:24.21.0-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian13:nonroot

FROM ${BUILD_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency runs code at build time (the `node` devDependency would only
# download a second Node.js 24; the build image has one).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY bin ./bin
COPY operator ./operator
# Typecheck what ships, then keep production dependencies only. compile-cache/ becomes the
# runtime's Node.js compile cache (see below).
RUN node node_modules/typescript/bin/tsc --noEmit -p tsconfig.json \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && mkdir -p compile-cache

FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="agentcard-operator" \
      org.opencontainers.image.description="Kubernetes operator and well-known sidecar for A2A Agent Cards" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="gcr.io/distroless/nodejs24-debian13:nonroot"
WORKDIR /app
# Root-owned and read-only for the runtime user: the image works with readOnlyRootFilesystem.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/operator ./operator
# Node.js's compile cache, filled here by the runtime's own node as the runtime user (Node keys
# the cache by both): at run time the operator and the sidecar then neither strip TypeScript nor
# load the stripper (about 15 MiB less RSS each, docs/BENCHMARKS.md). Only read at run time, so
# readOnlyRootFilesystem is fine; without it everything works the same, with more memory.
COPY --from=build --chown=65532:65532 /app/compile-cache /var/cache/agentcard/node-compile-cache
ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/var/cache/agentcard/node-compile-cache
USER 65532:65532
RUN ["/nodejs/bin/node", "/app/bin/warm-compile-cache.js"]
EXPOSE 8080 9443 8095
# distroless keeps node at /nodejs/bin/node (not on PATH); no shell is involved. Absolute paths,
# so `docker run -w /src ... validate --strict manifests/` works from any directory.
ENTRYPOINT ["/nodejs/bin/node", "/app/bin/agentcard.js"]
CMD ["operator"]
