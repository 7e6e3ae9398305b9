-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "toolCallId" TEXT,
ADD COLUMN     "toolCalls" JSONB;

-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "toolRounds" JSONB;
