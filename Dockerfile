# psd2-gateway: build with dev dependencies, run with production dependencies only, as a non-root user.
# Mount the configuration and certificates at /etc/psd2-gateway (see config/ingress.example.yaml).

# Node 26, the Active LTS (Node 20 is end of life); the image's own Node runs everything, so the
# registry copy of it that npm ci adds on a developer's machine (optionalDependencies) is left out.
FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=optional --no-audit --no-fund
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
USER node
EXPOSE 8443
VOLUME ["/etc/psd2-gateway"]
EXPOSE 9090
# /healthz on the admin listener, wherever the config puts it (admin.host/admin.port).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "dist/main.js", "health", "--config", "/etc/psd2-gateway/config.yaml"]
ENTRYPOINT ["node", "dist/main.js"]
CMD ["start", "--config", "/etc/psd2-gateway/config.yaml"]
