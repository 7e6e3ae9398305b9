-- AlterTable
ALTER TABLE "Run" ADD COLUMN "finishReason" TEXT;
ALTER TABLE "Run" ADD COLUMN "refusal" TEXT;
ALTER TABLE "Run" ADD COLUMN "vendorFinishReason" TEXT;
