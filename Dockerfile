# syntax=docker/dockerfile:1
# One image, two entrypoints: `agentcard operator` (the default) and `agentcard sidecar`.
#
# The build stage typechecks the TypeScript sources and bundles them (build/bundle.ts, esbuild)
# into plain JavaScript with every runtime dependency inside. The image holds only that bundle
# (dist/), bin/agentcard.js and package.json: no node_modules, no TypeScript, nothing stripped or
# hooked at run time. test/integration/prod-build.test.ts reproduces it without a container
# engine (it follows the COPY and RUN lines below).
#
# Base images, pinned by tag:
# - build: the official Node.js image at the exact version the devDependency `node` gives the
#   tests (24.21.0), Debian slim, because the build needs npm.
# - runtime: distroless Node.js 24 on Debian 13, `nonroot` variant: no shell, no package
#   manager, user 65532. Distroless publishes rolling tags only; release builds pin it by
#   digest with `--build-arg RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian13@sha256:...`.
ARG BUILD_IMAGE=node:24.21.0-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian13:nonroot
# The release version, a copy of package.json's (`npm version` updates it: build/version.ts); the
# build stage refuses a --build-arg VERSION that differs from package.json, so the label and the
# tag the release pushes always match what `agentcard --version` prints.
ARG VERSION=0.1.0

FROM ${BUILD_IMAGE} AS build
ARG VERSION
WORKDIR /app
COPY package.json package-lock.json ./
RUN node -e 'const v = require("./package.json").version; if (v !== process.argv[1]) { console.error("VERSION " + process.argv[1] + " is not package.json version " + v); process.exit(1); }' "${VERSION}"
# --ignore-scripts: no dependency runs code at build time (the `node` devDependency would only
# download a second Node.js 24; the build image has one; esbuild's own postinstall only checks its
# binary, which npm installs as a platform package).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY bin ./bin
COPY build ./build
COPY operator ./operator
# Typecheck what ships, then bundle it into dist/.
RUN node node_modules/typescript/bin/tsc --noEmit -p tsconfig.json \
 && node build/bundle.ts

FROM ${RUNTIME_IMAGE}
ARG RUNTIME_IMAGE
ARG VERSION
ARG REVISION=unknown
LABEL org.opencontainers.image.title="agentcard-operator" \
      org.opencontainers.image.description="Kubernetes operator and well-known sidecar for A2A Agent Cards" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/agentcard-dev/agentcard-operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${RUNTIME_IMAGE}"
WORKDIR /app
# Root-owned and read-only for the runtime user: the image works with readOnlyRootFilesystem.
# package.json makes dist/*.js ES modules; bin/agentcard.js finds no sources here and runs dist/.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/bin/agentcard.js ./bin/agentcard.js
COPY --from=build /app/dist ./dist
ENV NODE_ENV=production
USER 65532:65532
EXPOSE 8080 9443 8095
# distroless keeps node at /nodejs/bin/node (not on PATH); no shell is involved. Absolute paths,
# so `docker run -v "$PWD:/src:ro" -w /src ... validate --strict -f manifests/` works from any
# directory (a directory means every *.yaml, *.yml and *.json file below it).
ENTRYPOINT ["/nodejs/bin/node", "/app/bin/agentcard.js"]
CMD ["operator"]
