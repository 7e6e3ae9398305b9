-- AlterTable
ALTER TABLE "Experiment" ADD COLUMN "webhookUrl" TEXT;

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_WebhookDelivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "runId" TEXT,
    "experimentId" TEXT,
    "url" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" TEXT NOT NULL,
    "attempts" JSONB NOT NULL,
    "nextAttemptAt" DATETIME,
    "createdAt" DATETIME NOT NULL
);
INSERT INTO "new_WebhookDelivery" ("attempts", "createdAt", "event", "id", "nextAttemptAt", "payload", "runId", "status", "tenantId", "url") SELECT "attempts", "createdAt", "event", "id", "nextAttemptAt", "payload", "runId", "status", "tenantId", "url" FROM "WebhookDelivery";
DROP TABLE "WebhookDelivery";
ALTER TABLE "new_WebhookDelivery" RENAME TO "WebhookDelivery";
CREATE INDEX "WebhookDelivery_tenantId_runId_idx" ON "WebhookDelivery"("tenantId", "runId");
CREATE INDEX "WebhookDelivery_status_nextAttemptAt_idx" ON "WebhookDelivery"("status", "nextAttemptAt");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
