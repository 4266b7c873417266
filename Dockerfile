# psd2-gateway: build with dev dependencies, run with production dependencies only, as a non-root user.
# Mount the configuration and certificates at /etc/psd2-gateway (see config/ingress.example.yaml).

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
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
