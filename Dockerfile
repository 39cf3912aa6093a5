# syntax=docker/dockerfile:1
# Hatchery gateway: build with `docker build -t hatchery .`, run next to a PostgreSQL 15+ with
# `docker run -e DATABASE_URL=postgres://… -p 4000:4000 -v hatchery-data:/var/lib/hatchery hatchery`,
# or start both with `docker compose up`.
ARG NODE_VERSION=22

# 1. Every dependency, from the lock file: the build needs the TypeScript compiler.
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Not `npm ci`: the lock file cannot list other platforms' optional binaries (see .ci/run).
RUN npm install --no-audit --no-fund

# 2. Compile src/ and migrations/ to dist/, then keep only the runtime dependencies.
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY migrations ./migrations
COPY src ./src
RUN npx tsc -p tsconfig.build.json \
 && npm prune --omit=dev --no-audit --no-fund

# 3. What runs: compiled code owned by root, executed by the unprivileged `node` user.
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
# NODE_ENV stays unset: Apollo would turn introspection off, which the explorer and codegen need.
ENV PORT=4000 \
    HOST=0.0.0.0 \
    HATCHERY_DATA_DIR=/var/lib/hatchery
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
# The data dir keeps the generated encryption key (unless HATCHERY_ENCRYPTION_KEY is set): mount it.
RUN mkdir -p /var/lib/hatchery && chown node:node /var/lib/hatchery
VOLUME ["/var/lib/hatchery"]
USER node
EXPOSE 4000
# DATABASE_URL is expected (postgres://user:password@host:5432/db); without it the gateway
# would start an embedded PostgreSQL inside the container, which is for development only.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM: subscriptions close, requests in flight finish, jobs stop (HATCHERY_SHUTDOWN_GRACE_MS).
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
