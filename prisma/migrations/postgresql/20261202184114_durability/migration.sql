-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "inFlightSince" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "leaseExpiresAt" TIMESTAMP(3),
ADD COLUMN     "leaseOwner" TEXT;
