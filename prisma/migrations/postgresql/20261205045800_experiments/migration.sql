-- CreateTable
CREATE TABLE "Experiment" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "datasetVersion" INTEGER NOT NULL,
    "promptId" TEXT NOT NULL,
    "promptVersion" INTEGER NOT NULL,
    "promptLabel" TEXT,
    "profileId" TEXT,
    "repetitions" INTEGER NOT NULL,
    "concurrency" INTEGER NOT NULL,
    "scorers" JSONB NOT NULL,
    "idempotencyKey" TEXT,
    "keyId" TEXT,
    "errorMessage" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),
    "heartbeatAt" TIMESTAMP(3),

    CONSTRAINT "Experiment_pkey" PRIMARY KEY ("tenantId","id")
);

-- CreateTable
CREATE TABLE "ExperimentUnit" (
    "tenantId" TEXT NOT NULL,
    "experimentId" TEXT NOT NULL,
    "unit" INTEGER NOT NULL,
    "itemId" TEXT NOT NULL,
    "repetition" INTEGER NOT NULL,
    "runId" TEXT,
    "status" TEXT NOT NULL,
    "scores" JSONB,

    CONSTRAINT "ExperimentUnit_pkey" PRIMARY KEY ("tenantId","experimentId","unit")
);

-- CreateIndex
CREATE INDEX "Experiment_status_idx" ON "Experiment"("status");

-- CreateIndex
CREATE UNIQUE INDEX "Experiment_tenantId_idempotencyKey_key" ON "Experiment"("tenantId", "idempotencyKey");
