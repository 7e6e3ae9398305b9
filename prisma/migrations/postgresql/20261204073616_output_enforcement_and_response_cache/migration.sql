-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "cache" JSONB,
ADD COLUMN     "outputEnforcement" TEXT;

-- CreateTable
CREATE TABLE "ResponseCacheEntry" (
    "tenantId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "sourceRunId" TEXT NOT NULL,
    "answer" JSONB NOT NULL,
    "sourceUsage" JSONB NOT NULL,
    "bytes" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ResponseCacheEntry_pkey" PRIMARY KEY ("tenantId","key")
);

-- CreateIndex
CREATE INDEX "ResponseCacheEntry_tenantId_createdAt_idx" ON "ResponseCacheEntry"("tenantId", "createdAt");

-- CreateIndex
CREATE INDEX "ResponseCacheEntry_expiresAt_idx" ON "ResponseCacheEntry"("expiresAt");
