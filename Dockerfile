# Worker image: `docker build -t callback-relay .`
# Runs the consumer (what `npm start` runs); the CLI is in the image too:
#   docker run --rm -e AMQP_URL=... callback-relay node dist/cli/main.js publish --url ... --data ...
# and so is the HTTP ingest (INGEST_HOST=0.0.0.0: the published port reaches the container's own
# interface, not its loopback, where the ingest listens by default; METRICS_HOST likewise for /metrics):
#   docker run --rm -e AMQP_URL=... -e INGEST_TOKENS=... -e INGEST_HOST=0.0.0.0 -p 8080:8080 callback-relay node dist/ingest/main.js

# ---- build: all dependencies, compile TypeScript to dist/ ----
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the `prepare` script would run the build now, before the sources are copied.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# ---- runtime: production dependencies and dist/ only ----
FROM node:24-slim AS runtime
ENV NODE_ENV=production
# JSON log lines even under `docker run -t`: a container's logs are read by programs (LOG_FORMAT=auto would
# print readable lines whenever a TTY is attached).
ENV LOG_FORMAT=json
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: skips `prepare` (the build already happened in the build stage; tsc is not installed here).
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist

# The official image's unprivileged user (uid 1000). The files above stay owned by root: read-only for the app.
USER node

# This is exactly what `npm start` runs. Node is started directly rather than through `npm start`
# because then it is PID 1 and receives `docker stop`'s SIGTERM itself: npm (plus the `sh -c` it
# spawns) does not forward signals reliably, so the worker would never drain and would be SIGKILLed
# after the grace period. The worker installs its own SIGTERM/SIGINT handlers (stop consuming,
# drain up to DRAIN_TIMEOUT, exit), which is all PID 1 needs; it spawns no child processes to reap.
CMD ["node", "dist/consumer/main.js"]
