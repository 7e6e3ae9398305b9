# promptline for docker-compose.yml on Node 24 (LTS); docs/deploy.md lists the runtimes.
# build: every dependency, the generated clients, the console and the compiled server
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles when no prebuilt binary fits
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY prisma ./prisma
COPY prisma.config.ts codegen.ts tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY test/operations ./test/operations
COPY schema ./schema
# npm ci builds the server and the console (postinstall): their sources
COPY console ./console
COPY src ./src
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# run: the production dependencies, the build, the migrations and the catalog, nothing else
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# the postinstall generates code with development tools: the build stage did it; better-sqlite3's
# native module comes from the build stage too (same image, same ABI)
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY --from=build /app/node_modules/better-sqlite3/build ./node_modules/better-sqlite3/build
COPY --from=build /app/dist ./dist
COPY prisma/migrations ./prisma/migrations
COPY catalog ./catalog
# the SQLite file's default folder, the one place the server writes (mount a volume there)
RUN mkdir data && chown node:node data
ENV HOST=0.0.0.0
EXPOSE 4000
USER node
CMD ["node", "dist/main.js"]
