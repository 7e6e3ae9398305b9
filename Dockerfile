# promptline for docker-compose.yml: the same two commands as the README, in an image.
FROM node:20-bookworm
WORKDIR /app
COPY package.json package-lock.json ./
COPY prisma ./prisma
COPY prisma.config.ts codegen.ts tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY test/operations ./test/operations
COPY schema ./schema
# npm ci builds the console (postinstall): its sources and the client it uses
COPY console ./console
COPY src/client ./src/client
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build
ENV HOST=0.0.0.0
EXPOSE 4000
CMD ["node", "dist/main.js"]
