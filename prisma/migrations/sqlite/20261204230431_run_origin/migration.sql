-- AlterTable
ALTER TABLE "Run" ADD COLUMN "origin" TEXT;
