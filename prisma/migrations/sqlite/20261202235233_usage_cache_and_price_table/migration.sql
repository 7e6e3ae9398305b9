-- AlterTable
ALTER TABLE "Run" ADD COLUMN "cacheReadTokens" INTEGER;
ALTER TABLE "Run" ADD COLUMN "cacheWriteTokens" INTEGER;
ALTER TABLE "Run" ADD COLUMN "priceTable" TEXT;
ALTER TABLE "Run" ADD COLUMN "reasoningTokens" INTEGER;
