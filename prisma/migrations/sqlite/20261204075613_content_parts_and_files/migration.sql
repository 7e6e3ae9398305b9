-- AlterTable
ALTER TABLE "Message" ADD COLUMN "parts" JSONB;

-- CreateTable
CREATE TABLE "StoredFile" (
    "tenantId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "mediaType" TEXT NOT NULL,
    "bytes" INTEGER NOT NULL,
    "name" TEXT,
    "data" BLOB,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME NOT NULL,

    PRIMARY KEY ("tenantId", "id")
);

-- CreateIndex
CREATE INDEX "StoredFile_tenantId_sha256_idx" ON "StoredFile"("tenantId", "sha256");

-- CreateIndex
CREATE INDEX "StoredFile_expiresAt_idx" ON "StoredFile"("expiresAt");
