# One image for every mesh service; docker-compose.yml picks the entry point (apps/<name>/main.ts) per container.
FROM node:20-bookworm-slim
# bubblewrap: the process sandbox of Bash tool calls, bash/script nodes and harness CLIs (KEELSON_SANDBOX).
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates openssh-client bubblewrap \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY schema/package.json schema/
COPY service/package.json service/
COPY platform/package.json platform/
COPY identity/package.json identity/
COPY subgraphs/identity/package.json subgraphs/identity/
COPY subgraphs/kit/package.json subgraphs/kit/
COPY subgraphs/projects/package.json subgraphs/projects/
COPY subgraphs/runs/package.json subgraphs/runs/
COPY subgraphs/sessions/package.json subgraphs/sessions/
COPY subgraphs/memory/package.json subgraphs/memory/
COPY subgraphs/swarms/package.json subgraphs/swarms/
COPY operator/package.json operator/
COPY harness/package.json harness/
COPY ribs/contract/package.json ribs/contract/
COPY ribs/shared/package.json ribs/shared/
COPY ribs/host/package.json ribs/host/
COPY ribs/projects/package.json ribs/projects/
COPY ribs/notes/package.json ribs/notes/
COPY ribs/swarm/package.json ribs/swarm/
COPY subgraphs/ribs/package.json subgraphs/ribs/
COPY providers/package.json providers/
COPY testing/modelserver/package.json testing/modelserver/
COPY testing/clickclack-standin/package.json testing/clickclack-standin/
COPY testing/host-doubles/package.json testing/host-doubles/
COPY runs/package.json runs/
COPY swarms/package.json swarms/
COPY chats/package.json chats/
COPY temporal/package.json temporal/
COPY client/package.json client/
COPY gateway/package.json gateway/
# npm ci bundles GraphiQL (the root postinstall) from these sources.
COPY gateway/graphiql gateway/graphiql
COPY stack/package.json stack/
COPY apps/package.json apps/
RUN npm ci --no-audit --no-fund
COPY . .
ENV NODE_ENV=production
# A young generation that holds a request's short-lived objects (see service/src/heapFlags.ts).
ENV NODE_OPTIONS=--max-semi-space-size=64
USER node
CMD ["node", "-r", "./scripts/register.js", "apps/mesh/main.ts"]
