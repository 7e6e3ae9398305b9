-- CreateTable
CREATE TABLE "RunScore" (
    "tenantId" TEXT NOT NULL,
    "runId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "value" REAL NOT NULL,
    "comment" TEXT,
    "keyId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "runId", "name")
);
