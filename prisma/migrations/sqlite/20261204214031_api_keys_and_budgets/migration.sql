-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "secretSha256" TEXT NOT NULL,
    "previousSha256" TEXT,
    "previousExpiresAt" DATETIME,
    "expiresAt" DATETIME,
    "revokedAt" DATETIME,
    "lastUsedAt" DATETIME,
    "allowedProfiles" JSONB,
    "allowedPrompts" JSONB,
    "limits" JSONB,
    "budget" JSONB,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "BudgetWindow" (
    "scope" TEXT NOT NULL,
    "windowStart" DATETIME NOT NULL,
    "usedNanoUsd" REAL NOT NULL DEFAULT 0,
    "reservedNanoUsd" REAL NOT NULL DEFAULT 0,

    PRIMARY KEY ("scope", "windowStart")
);

-- CreateTable
CREATE TABLE "BudgetReservation" (
    "queueId" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "windows" JSONB NOT NULL,
    "amountNanoUsd" REAL NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_secretSha256_key" ON "ApiKey"("secretSha256");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_previousSha256_key" ON "ApiKey"("previousSha256");

-- CreateIndex
CREATE INDEX "ApiKey_tenantId_createdAt_idx" ON "ApiKey"("tenantId", "createdAt");

-- CreateIndex
CREATE INDEX "BudgetReservation_createdAt_idx" ON "BudgetReservation"("createdAt");

-- CreateIndex
CREATE INDEX "Run_queueId_idx" ON "Run"("queueId");
