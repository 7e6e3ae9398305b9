-- AlterTable
ALTER TABLE "QueueEntry" ADD COLUMN "idempotencyHash" TEXT;
ALTER TABLE "QueueEntry" ADD COLUMN "idempotencyKey" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "QueueEntry_tenantId_sessionId_idempotencyKey_key" ON "QueueEntry"("tenantId", "sessionId", "idempotencyKey");
