# The sync server, built and run the production way (README "Production").
#   docker build -t outreach-sync-server .
#   docker run -p 4000:4000 -e DATABASE_URL=postgres://... outreach-sync-server
# compose.yaml runs it with PostgreSQL.

# Build: install everything (the build needs esbuild; better-sqlite3 compiles here if no prebuilt
# binary fits), compile to dist/, then drop the dev dependencies.
FROM node:24-slim AS build
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Electron (a dev dependency of the desktop app) is not downloaded: the server never uses it.
ENV ELECTRON_SKIP_BINARY_DOWNLOAD=1
RUN npm ci --no-audit --no-fund
# The sources (.dockerignore keeps node_modules, data and build output out).
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# Run: the built server and production dependencies only, as an unprivileged user.
FROM node:24-slim
ENV NODE_ENV=production PORT=4000 HOST=0.0.0.0 DATA_DIR=/data
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules node_modules
COPY --from=build --chown=node:node /app/dist dist
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 4000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||4000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# `node` runs as PID 1 (no `npm run`, which would not forward signals): it receives `docker stop`'s
# SIGTERM itself, finishes the requests in flight and exits.
STOPSIGNAL SIGTERM
CMD ["node", "dist/sync-server/cli.js"]
