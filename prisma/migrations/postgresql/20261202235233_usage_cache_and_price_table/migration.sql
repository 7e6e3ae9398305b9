-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "cacheReadTokens" INTEGER,
ADD COLUMN     "cacheWriteTokens" INTEGER,
ADD COLUMN     "priceTable" TEXT,
ADD COLUMN     "reasoningTokens" INTEGER;
