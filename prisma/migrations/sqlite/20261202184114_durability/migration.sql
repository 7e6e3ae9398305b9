-- AlterTable
ALTER TABLE "Run" ADD COLUMN "inFlightSince" DATETIME;

-- AlterTable
ALTER TABLE "Session" ADD COLUMN "leaseExpiresAt" DATETIME;
ALTER TABLE "Session" ADD COLUMN "leaseOwner" TEXT;
