-- AlterTable
ALTER TABLE "Message" ADD COLUMN "toolCallId" TEXT;
ALTER TABLE "Message" ADD COLUMN "toolCalls" JSONB;

-- AlterTable
ALTER TABLE "Run" ADD COLUMN "toolRounds" JSONB;
