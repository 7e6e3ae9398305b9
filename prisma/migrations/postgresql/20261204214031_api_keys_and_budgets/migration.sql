-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "secretSha256" TEXT NOT NULL,
    "previousSha256" TEXT,
    "previousExpiresAt" TIMESTAMP(3),
    "expiresAt" TIMESTAMP(3),
    "revokedAt" TIMESTAMP(3),
    "lastUsedAt" TIMESTAMP(3),
    "allowedProfiles" JSONB,
    "allowedPrompts" JSONB,
    "limits" JSONB,
    "budget" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BudgetWindow" (
    "scope" TEXT NOT NULL,
    "windowStart" TIMESTAMP(3) NOT NULL,
    "usedNanoUsd" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "reservedNanoUsd" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "BudgetWindow_pkey" PRIMARY KEY ("scope","windowStart")
);

-- CreateTable
CREATE TABLE "BudgetReservation" (
    "queueId" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "windows" JSONB NOT NULL,
    "amountNanoUsd" DOUBLE PRECISION NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "BudgetReservation_pkey" PRIMARY KEY ("queueId")
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
