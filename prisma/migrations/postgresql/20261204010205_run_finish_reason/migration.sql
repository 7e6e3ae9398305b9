-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "finishReason" TEXT,
ADD COLUMN     "refusal" TEXT,
ADD COLUMN     "vendorFinishReason" TEXT;
