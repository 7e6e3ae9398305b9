-- AlterTable
ALTER TABLE "Run" ADD COLUMN "reasoning" JSONB;
